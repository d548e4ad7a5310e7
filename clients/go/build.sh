#!/usr/bin/env bash
# Builds the Go example client from this module, offline, against Debian's Go
# packages (/usr/share/gocode: grpc-go 1.33, golang/protobuf 1.3), in module
# mode through a workspace that replaces each module of the graph by a
# directory (offline_workspace.py says how; the go.work lives in OUTDIR):
#
#   clients/go/build.sh OUTDIR      ->  OUTDIR/bin/zkfleet-example
#
# The module's generated code is committed (regenerate.sh). Environment: GO
# (default go), GOCODE (default /usr/share/gocode).
set -euo pipefail
OUT=${1:?usage: clients/go/build.sh OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
GO=${GO:-go}
mkdir -p "$OUT/bin"
OUT=$(cd "$OUT" && pwd)
eval "$(GO=$GO python3 "$HERE/offline_workspace.py" "$OUT/go-work" "$HERE")"
cd "$HERE"
"$GO" vet ./...
"$GO" build -o "$OUT/bin/zkfleet-example.tmp" ./zkfleet-example
mv "$OUT/bin/zkfleet-example.tmp" "$OUT/bin/zkfleet-example"
