// Package hubsvc is the gRPC side of hubd's schema: the Hub service
// generated from hub_service.proto (client and server interfaces), and
// the codec that encodes and decodes hubd's messages
// with vtprotobuf's generated code ([Marshal], [ClientCodec]). Its
// messages are in package hubpb, which does not link gRPC.
package hubsvc
