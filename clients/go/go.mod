// The zkfleet Go client: the zkfleet.v1 gRPC stubs (package zkfleetv1), the
// messages they carry (package zkfleetpb) and an example command-line client
// (zkfleet-example). Its generated code is committed (regenerate.sh); a
// program requires this module as any other (docs/clients.md, "Go").
module github.com/zkfleet/zkfleet/clients/go

// go 1.16: a module graph without pruning, so a program requiring this
// module also gets the requirements of grpc-go's go.mod without this file
// listing them as indirect (it is written by hand: offline, go mod tidy has
// nothing to resolve against).
go 1.16

require (
	github.com/golang/protobuf v1.3.5
	google.golang.org/grpc v1.33.3
)
