// Package vaultpb is the generated wire format of vaultd's gRPC API. It is
// internal: no exported signature of the project uses its types.
package vaultpb

//go:generate env PATH=$HOME/go/bin:/usr/bin:/bin /usr/bin/protoc --proto_path=. --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative vault.proto
