// Package hubpb is the generated Go code of hubd's wire API (hub.proto):
// the messages and the Hub gRPC service. Do not edit the .pb.go files;
// change hub.proto and regenerate with `go generate ./hubpb` (needs protoc
// from Debian's protobuf-compiler; the plugins are pinned as tools in
// go.mod). See docs/API.md.
package hubpb

//go:generate sh -c "protoc --plugin=protoc-gen-go=$(go tool -n protoc-gen-go) --plugin=protoc-gen-go-grpc=$(go tool -n protoc-gen-go-grpc) --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative hub.proto"
