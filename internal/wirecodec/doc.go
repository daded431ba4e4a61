// Package wirecodec encodes hubd's messages for gRPC with vtprotobuf's
// generated code instead of protobuf's reflection: the same bytes, about
// a third of the CPU. The hub's server codec (hub/hubgrpc) encodes its
// answers with [Marshal]; agentsdk's clients use [Client] both ways.
package wirecodec
