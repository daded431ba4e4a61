package hubsvc

import (
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto" // registers gRPC's proto codec
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// vtMarshaler is a message with vtprotobuf's encoder: the same bytes as
// protobuf's (fields in number order, unknown fields last), without
// reflection. It only reads the message, so a message shared between
// streams may be encoded by several at once.
type vtMarshaler interface {
	SizeVT() int
	MarshalToSizedBufferVT([]byte) (int, error)
}

// vtUnmarshaler is a message with vtprotobuf's decoder.
type vtUnmarshaler interface {
	proto.Message
	UnmarshalVT([]byte) error
}

// Marshal encodes v for gRPC: one of hubd's messages by vtprotobuf's
// encoder into a buffer of gRPC's pool (as gRPC's proto codec does), any
// other message (health, reflection) by base. The hub's server codec
// (hub/hubgrpc) and ClientCodec encode with it.
func Marshal(base encoding.CodecV2, v any) (mem.BufferSlice, error) {
	m, ok := v.(vtMarshaler)
	if !ok {
		return base.Marshal(v)
	}
	size := m.SizeVT()
	if mem.IsBelowBufferPoolingThreshold(size) {
		buf := make([]byte, size)
		if _, err := m.MarshalToSizedBufferVT(buf); err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(buf)}, nil
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(size)
	if _, err := m.MarshalToSizedBufferVT((*buf)[:size]); err != nil {
		pool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

// ClientCodec returns the codec of a hubd client (agentsdk's): hubd's
// messages encoded and decoded by vtprotobuf (the same bytes as protobuf's
// reflection, for about a third of the CPU), others by gRPC's proto
// codec. Its decoder keeps unknown fields, as protobuf's does, and does
// not check that strings are UTF-8: what it decodes comes from the hub,
// which checked them.
func ClientCodec() encoding.CodecV2 { return client{base: encoding.GetCodecV2(protocodec.Name)} }

type client struct{ base encoding.CodecV2 }

func (c client) Marshal(v any) (mem.BufferSlice, error) { return Marshal(c.base, v) }

func (c client) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(vtUnmarshaler)
	if !ok {
		return c.base.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return m.UnmarshalVT(buf.ReadOnlyData()) // strings and bytes are copied out
}

// Name is the codec's content subtype: "proto", as gRPC's own.
func (client) Name() string { return protocodec.Name }
