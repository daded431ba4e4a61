// Package hubpb holds hubd's one schema: the generated Go code of hub.proto
// (the envelope, its payloads, session metadata and the wire messages) and
// the one JSON form of those messages ([MarshalJSON], [UnmarshalJSON]). The
// Hub gRPC service is generated into package hubsvc, so that the pure core,
// which uses the messages, does not link gRPC.
//
// Do not edit the .pb.go files; change the .proto files and regenerate with
// `go generate ./hubpb` (needs protoc, from Debian's protobuf-compiler; the
// plugins are pinned as tools in go.mod). See docs/API.md.
package hubpb
