package floor

import (
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hubpb/hubsvc"
)

// serverCodec encodes and decodes as hubd's server does (hub/hubgrpc's
// Codec on its common path): requests decoded by protobuf with unknown
// fields dropped, answers encoded by vtprotobuf. The floor's clients use
// agentsdk's codec (hubsvc.ClientCodec), so that a ratio compares the two
// paths' work, not their encoders.
type serverCodec struct{ base encoding.CodecV2 }

func newServerCodec() serverCodec { return serverCodec{base: encoding.GetCodecV2(protocodec.Name)} }

func (c serverCodec) Marshal(v any) (mem.BufferSlice, error) { return hubsvc.Marshal(c.base, v) }

func (c serverCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return c.base.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return proto.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(buf.ReadOnlyData(), m)
}

func (serverCodec) Name() string { return protocodec.Name }
