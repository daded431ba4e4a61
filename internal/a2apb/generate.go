// Package a2apb holds the messages of the A2A protocol (Agent2Agent,
// version 1.0), generated from a2a.proto, the specification's schema: hubd
// reads and writes them in their ProtoJSON form, which is the JSON-RPC
// binding's.
package a2apb

//go:generate sh -c "protoc -I . --plugin=protoc-gen-go=$(go tool -n protoc-gen-go) --go_out=. --go_opt=module=github.com/hubd/hubd/internal/a2apb a2a.proto"
