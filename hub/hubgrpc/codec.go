package hubgrpc

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/session"
)

// Codec is the server's gRPC codec: the proto codec, except that requests
// are decoded without protobuf's UTF-8 check (by vtprotobuf's decoder,
// which every hubpb message has). gRPC turns a request that fails to
// decode into a bare Internal status, before hubd sees it; decoded, the
// interceptors check every string and number (session.CheckFields) and
// answer MALFORMED naming the field. Responses are encoded as the proto
// codec does.
func Codec() encoding.CodecV2 { return codec{base: encoding.GetCodecV2("proto")} }

type codec struct{ base encoding.CodecV2 }

// vtMessage is a message with vtprotobuf's decoder.
type vtMessage interface {
	proto.Message
	UnmarshalVT([]byte) error
}

func (c codec) Marshal(v any) (mem.BufferSlice, error) { return c.base.Marshal(v) }

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(vtMessage)
	if !ok {
		return c.base.Unmarshal(data, v) // health, reflection
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	b := buf.ReadOnlyData()
	if m.UnmarshalVT(b) == nil {
		return nil
	}
	// vtprotobuf refuses some input protobuf takes (a known field with
	// another wire type is an unknown field to protobuf); and what
	// neither takes is answered MALFORMED by checkRequest, from the mark
	// left here, rather than Internal by gRPC.
	proto.Reset(m)
	err := proto.UnmarshalOptions{}.Unmarshal(b, m)
	if err == nil {
		return nil
	}
	proto.Reset(m)
	m.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, undecodedField, protowire.BytesType),
		[]byte(fmt.Sprintf("the request is not a %s: %v", m.ProtoReflect().Descriptor().FullName(), err))))
	return nil
}

// undecodedField is the field number of the mark a request that did not
// decode carries: the largest there is, used by no hubd message.
const undecodedField = protowire.MaxValidNumber

// undecoded returns the mark's message, if m carries it.
func undecoded(m proto.Message) (string, bool) {
	u := m.ProtoReflect().GetUnknown()
	num, typ, n := protowire.ConsumeTag(u)
	if n < 0 || num != undecodedField || typ != protowire.BytesType {
		return "", false
	}
	msg, k := protowire.ConsumeBytes(u[n:])
	return string(msg), k >= 0
}

func (codec) Name() string { return "proto" }

// checkRequest refuses a request with a string that is not UTF-8 or a
// number that is not finite, naming the field.
func checkRequest(req any) error {
	m, ok := req.(proto.Message)
	if !ok {
		return nil
	}
	if msg, bad := undecoded(m); bad {
		return fmt.Errorf("%s: %w", msg, session.ErrMalformed)
	}
	if err := session.CheckFields(m); err != nil {
		return fmt.Errorf("request: %w", err)
	}
	return nil
}
