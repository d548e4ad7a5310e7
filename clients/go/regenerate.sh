#!/usr/bin/env bash
# Regenerates the Go code of the schemas into this module, offline, from
# Debian's packages:
#
#   clients/go/regenerate.sh            # writes zkfleetpb/ and zkfleetv1/ here: commit them
#   clients/go/regenerate.sh --check    # fails, naming the files, while the committed ones are stale
#
# zkfleetpb/zkfleet.pb.go from schema/zkfleet.proto and
# zkfleetv1/zkfleet_v1{,_grpc}.pb.go from schema/grpc/zkfleet_v1.proto (their
# go_package paths, inside this module). Messages: protoc-gen-go built here
# from Debian's github.com/golang/protobuf 1.3 (APIv1 code, which every later
# golang/protobuf and google.golang.org/protobuf runtime still runs, so a
# consumer's newer versions work); services: Debian's protoc-gen-go-grpc
# (grpc-go 1.33's, SupportPackageIsVersion7, which grpc-go >= 1.32 runs).
#
# Environment: PROTOC (default protoc), PROTOC_GEN_GO_GRPC (default
# protoc-gen-go-grpc), GO (default go), GOCODE (default /usr/share/gocode),
# WORK (default: a temporary directory).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SCHEMA=$(cd "$HERE/../../schema" && pwd)
MODULE=github.com/zkfleet/zkfleet/clients/go
PROTOC=${PROTOC:-protoc}
GO=${GO:-go}
check=0
[[ "${1:-}" == --check ]] && check=1
GRPC_PLUGIN=$(command -v "${PROTOC_GEN_GO_GRPC:-protoc-gen-go-grpc}") || {
  echo "regenerate.sh: protoc-gen-go-grpc not found (Debian: apt-get install protoc-gen-go-grpc)" >&2; exit 1; }
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK"
eval "$(GO=$GO python3 "$HERE/offline_workspace.py" "$WORK" "$HERE")"
( cd "$HERE" && "$GO" build -o "$WORK/protoc-gen-go" github.com/golang/protobuf/protoc-gen-go )

out="$WORK/generated"
rm -rf "$out" && mkdir -p "$out"
# One protoc run per Go package (the APIv1 generator wants that). schema/grpc
# first, so the files are "zkfleet_v1.proto" and "zkfleet.proto" (as in C++).
gen() { "$PROTOC" -I"$SCHEMA/grpc" -I"$SCHEMA" --plugin=protoc-gen-go="$WORK/protoc-gen-go" \
          --plugin=protoc-gen-go-grpc="$GRPC_PLUGIN" --go_out="$out" "$@"; }
gen "$SCHEMA/zkfleet.proto"
gen --go-grpc_out="$out" "$SCHEMA/grpc/zkfleet_v1.proto"
made="$out/$MODULE"
stale=()
for pkg in zkfleetpb zkfleetv1; do
  for f in "$made/$pkg"/*.go; do
    committed="$HERE/$pkg/$(basename "$f")"
    cmp -s "$f" "$committed" || stale+=("clients/go/$pkg/$(basename "$f")")
  done
  for f in "$HERE/$pkg"/*.go; do
    [[ -e "$f" ]] && { [[ -e "$made/$pkg/$(basename "$f")" ]] || stale+=("clients/go/$pkg/$(basename "$f") (no longer made)"); }
  done
done
if (( check )); then
  if (( ${#stale[@]} )); then
    echo "regenerate.sh --check: stale generated Go code: ${stale[*]}; run clients/go/regenerate.sh and commit it" >&2
    exit 1
  fi
  echo "regenerate.sh --check: the committed Go code is what the schemas make"
  exit 0
fi
for pkg in zkfleetpb zkfleetv1; do
  rm -rf "${HERE:?}/$pkg" && cp -r "$made/$pkg" "$HERE/$pkg"
done
echo "regenerate.sh: wrote clients/go/zkfleetpb and clients/go/zkfleetv1${stale[*]:+ (changed: ${stale[*]})}"
