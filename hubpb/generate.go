package hubpb

// The messages (hub.proto) generate into this package, the service
// (hub_service.proto) into hubsvc, so that packages using the messages
// alone, the pure core among them, do not link gRPC.
//
// protoc-gen-go-vtproto adds UnmarshalVT to the messages: the stored form
// is read about three times faster than through reflection, which is most
// of what hydrate costs (docs/PERFORMANCE.md). Writes stay with protobuf's
// deterministic marshalling: vtproto's marshal does not sort map keys.
//
// hub_http.yaml holds the HTTP rules of the JSON API, kept out of the
// .proto files so they import nothing of google/api; its reverse proxy is
// generated with the server, in hub/hubhttp/gateway, so that clients of
// the schema never link grpc-gateway.
//go:generate sh -c "protoc -I . --plugin=protoc-gen-go=$(go tool -n protoc-gen-go) --plugin=protoc-gen-go-grpc=$(go tool -n protoc-gen-go-grpc) --plugin=protoc-gen-go-vtproto=$(go tool -n protoc-gen-go-vtproto) --go_out=. --go_opt=module=github.com/hubd/hubd/hubpb --go-grpc_out=. --go-grpc_opt=module=github.com/hubd/hubd/hubpb --go-vtproto_out=. --go-vtproto_opt=module=github.com/hubd/hubd/hubpb,features=marshal+unmarshal+size hub.proto hub_service.proto"
