package plugin

// The protobuf code of the plugin protocol is generated with Debian's protoc
// 3.21 and protoc-gen-go / protoc-gen-go-grpc from the module proxy
// (installed in ~/go/bin); the generated files are committed.
//go:generate env PATH=$HOME/go/bin:/usr/bin:/bin /usr/bin/protoc --proto_path=internal/verifierpb --go_out=internal/verifierpb --go_opt=paths=source_relative --go-grpc_out=internal/verifierpb --go-grpc_opt=paths=source_relative verifier.proto
