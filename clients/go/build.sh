#!/usr/bin/env bash
# Builds the Go example client, offline, in GOPATH mode against Debian's Go
# packages (/usr/share/gocode: grpc-go 1.33, github.com/golang/protobuf):
#
#   clients/go/build.sh OUTDIR      ->  OUTDIR/bin/zkfleet-example
#
# The protobuf and gRPC code is generated into OUTDIR/gopath/src/zkfleet/
# {proto,v1} (the go_package paths of schema/zkfleet.proto and
# schema/grpc/zkfleet_v1.proto), never committed.
#
# Messages: protoc-gen-go built here from the github.com/golang/protobuf in
# the GOPATH, so that the generator always matches the runtime the code
# compiles against. Debian's /usr/bin/protoc-gen-go (1.28) emits APIv2 code
# needing google.golang.org/protobuf, which Debian's grpc-go does not pull
# in (it depends on golang-github-golang-protobuf-1-3-dev, APIv1 only). With
# golang-github-golang-protobuf-1-5-dev installed instead, the same
# generator emits APIv2 code and this builds as well. Services: Debian's
# protoc-gen-go-grpc (grpc-go 1.33's, SupportPackageIsVersion7), whose code
# compiles against that grpc-go as it is (no flag needed: the client side
# does not involve require_unimplemented_servers).
#
# Environment: PROTOC (default protoc), PROTOC_GEN_GO_GRPC (default
# protoc-gen-go-grpc), GO (default go), GOCODE (default /usr/share/gocode).
set -euo pipefail
OUT=${1:?usage: clients/go/build.sh OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
SCHEMA=$(cd "$HERE/../../schema" && pwd)
PROTOC=${PROTOC:-protoc}
GO=${GO:-go}
GOCODE=${GOCODE:-/usr/share/gocode}
GRPC_PLUGIN=$(command -v "${PROTOC_GEN_GO_GRPC:-protoc-gen-go-grpc}") || {
  echo "build.sh: protoc-gen-go-grpc not found (Debian: apt-get install protoc-gen-go-grpc)" >&2; exit 1; }

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export GO111MODULE=off GOFLAGS= GOPATH="$OUT/gopath:$GOCODE" GOCACHE="$OUT/go-cache" GOPROXY=off
mkdir -p "$OUT/bin" "$OUT/gopath/src"

"$GO" build -o "$OUT/bin/protoc-gen-go" github.com/golang/protobuf/protoc-gen-go

# Fresh generated code: a file dropped from the schema must not linger.
rm -rf "$OUT/gopath/src/zkfleet"
# One protoc run per Go package (the APIv1 generator wants that). schema/grpc
# first, so the files are "zkfleet_v1.proto" and "zkfleet.proto" (as in C++).
gen() { "$PROTOC" -I"$SCHEMA/grpc" -I"$SCHEMA" --plugin=protoc-gen-go="$OUT/bin/protoc-gen-go" \
          --plugin=protoc-gen-go-grpc="$GRPC_PLUGIN" --go_out="$OUT/gopath/src" "$@"; }
gen "$SCHEMA/zkfleet.proto"
gen --go-grpc_out="$OUT/gopath/src" "$SCHEMA/grpc/zkfleet_v1.proto"

cd "$HERE/zkfleet-example"
"$GO" vet .
"$GO" build -o "$OUT/bin/zkfleet-example.tmp" .
mv "$OUT/bin/zkfleet-example.tmp" "$OUT/bin/zkfleet-example"
