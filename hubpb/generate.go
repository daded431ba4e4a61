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
// protoc-gen-grpc-gateway turns hub_http.yaml (the HTTP rules, kept out of
// the .proto files so they import nothing of google/api) into
// hubsvc/hub_service.pb.gw.go, the JSON API that hub/hubhttp serves.
//go:generate sh -c "protoc -I . --plugin=protoc-gen-go=$(go tool -n protoc-gen-go) --plugin=protoc-gen-go-grpc=$(go tool -n protoc-gen-go-grpc) --plugin=protoc-gen-go-vtproto=$(go tool -n protoc-gen-go-vtproto) --go_out=. --go_opt=module=github.com/hubd/hubd/hubpb --go-grpc_out=. --go-grpc_opt=module=github.com/hubd/hubd/hubpb --go-vtproto_out=. --go-vtproto_opt=module=github.com/hubd/hubd/hubpb,features=marshal+unmarshal+size hub.proto hub_service.proto"
//go:generate sh -c "protoc -I . --plugin=protoc-gen-grpc-gateway=$(go tool -n protoc-gen-grpc-gateway) --grpc-gateway_out=. --grpc-gateway_opt=module=github.com/hubd/hubd/hubpb,grpc_api_configuration=hub_http.yaml,omit_package_doc=true hub_service.proto"
