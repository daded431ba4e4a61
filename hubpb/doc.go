// Package hubpb is the generated Go code of hubd's wire API (hub.proto):
// the messages and the Hub gRPC service. Do not edit the .pb.go files;
// change hub.proto and regenerate with `go generate ./hubpb` (needs protoc
// from Debian's protobuf-compiler; the plugins are pinned as tools in
// go.mod). See docs/API.md.
package hubpb
