#!/usr/bin/env bash
# The Go client is a module another Go program can depend on (ctest
# go_module_consumer): a program outside this tree, a module of its own that
# requires github.com/zkfleet/zkfleet/clients/go, builds against it (offline:
# a workspace over Debian's Go packages, as clients/go/build.sh uses, with
# the program's module in it) and runs; and the module's committed generated
# code is what the schemas make (clients/go/regenerate.sh --check).
#
#   tests/install/check_go_module.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src=${1:?source dir}
work=${2:?work dir}
rm -rf "$work" && mkdir -p "$work/consumer"
"$src/clients/go/regenerate.sh" --check
cat > "$work/consumer/go.mod" <<'MOD'
module example.com/consumer

go 1.19

require github.com/zkfleet/zkfleet/clients/go v0.1.0
MOD
cat > "$work/consumer/main.go" <<'GO'
// A program that uses the zkfleet Go module as a dependency: it dials a
// broker's gRPC port that is not there and reports the call's failure.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	zkfleetv1 "github.com/zkfleet/zkfleet/clients/go/zkfleetv1"
	"google.golang.org/grpc"
)

func main() {
	conn, err := grpc.Dial("127.0.0.1:1", grpc.WithInsecure())
	if err != nil {
		fmt.Println("dial:", err)
		os.Exit(1)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = zkfleetv1.NewFleetClient(conn).GetStatus(ctx, &zkfleetv1.GetStatusRequest{})
	fmt.Println("GetStatus from nowhere:", err != nil)
}
GO
# The workspace: the module and the program, every dependency from Debian.
eval "$(python3 "$src/clients/go/offline_workspace.py" "$work/ws" "$src/clients/go")"
# The program is the workspace's module; the zkfleet module comes from this
# checkout by a replace, as a program points a replace at a checkout (or
# its proxy serves the published module).
sed -i "s#^use .*#use $work/consumer\n\nreplace github.com/zkfleet/zkfleet/clients/go => $src/clients/go#" "$work/ws/go.work"
cd "$work/consumer"
go build -o "$work/consumer-bin" .
out=$("$work/consumer-bin")
echo "$out"
[[ "$out" == "GetStatus from nowhere: true" ]] || { echo "check_go_module.sh: unexpected output" >&2; exit 1; }
echo "check_go_module.sh: a program requiring the zkfleet Go module built and ran"
