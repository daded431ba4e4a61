package hubgrpc

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/session"
)

// Codec is the server's gRPC codec: the proto codec, except that a request
// protobuf refuses (a string that is not UTF-8, which gRPC answers with a
// bare Internal before hubd sees it) is decoded again by vtprotobuf's
// decoder, which does not check UTF-8, and marked; the interceptors then
// check its strings and numbers (session.CheckFields) and answer MALFORMED
// naming the field. Bytes neither decoder takes are marked too, and
// answered MALFORMED. Fields this hub's schema does not know (a newer
// client's, or forged ones) are dropped as the request is decoded: they
// were never validated, so they must not reach the log, where a later
// version of the hub would read them as if it had checked them. Responses
// are encoded by vtprotobuf's encoder (the proto codec's bytes, without
// reflection). Before anything is decoded, a request's wire bytes are
// scanned (WireLimits): one nested too deep is marked MALFORMED, one too
// large TOO_LARGE, and neither is built.
func Codec() encoding.CodecV2 { return CodecFor(WireLimits{}) }

// CodecFor is Codec with the hub's limits on requests.
func CodecFor(l WireLimits) encoding.CodecV2 {
	return codec{base: encoding.GetCodecV2("proto"), limits: l}
}

type codec struct {
	base   encoding.CodecV2
	limits WireLimits
}

// vtMessage is a message with vtprotobuf's decoder.
type vtMessage interface {
	proto.Message
	UnmarshalVT([]byte) error
}

// Marshal encodes an answer: hubd's messages by vtprotobuf's encoder, others
// by the proto codec.
func (c codec) Marshal(v any) (mem.BufferSlice, error) { return hubsvc.Marshal(c.base, v) }

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(vtMessage)
	if !ok {
		return c.base.Unmarshal(data, v) // health, reflection
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	b := buf.ReadOnlyData()
	if r := c.limits.scanRequest(b, m.ProtoReflect().Descriptor()); r != nil {
		if f, ok := m.(*hubpb.AgentFrame); ok {
			f.Frame = frameSkeleton(b).GetFrame() // answered by ref, the stream going on
		}
		mark(m, r.kind, r.msg)
		return nil
	}
	err := proto.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, m)
	if err == nil {
		return nil // the common case: as gRPC's own codec, unknown fields dropped
	}
	proto.Reset(m)
	if m.UnmarshalVT(b) == nil {
		discardUnknown(m.ProtoReflect())
		mark(m, markUnchecked, "")
		return nil
	}
	proto.Reset(m)
	mark(m, markUndecoded, fmt.Sprintf("the request is not a %s: %v", m.ProtoReflect().Descriptor().FullName(), err))
	return nil
}

// The marks the codec leaves on a request, as an unknown field of the
// largest field number (used by no hubd message): what checkRequest must
// do about it.
const (
	markField     = protowire.MaxValidNumber
	markUnchecked = 'u' // decoded without the UTF-8 check: check it
	markUndecoded = 'x' // did not decode: refuse it (the rest is why)
	markTooLarge  = 'l' // over a limit, not decoded: "flag\x00value\x00what"
)

// mark appends a mark to m's unknown fields.
func mark(m proto.Message, kind byte, msg string) {
	r := m.ProtoReflect()
	r.SetUnknown(protowire.AppendBytes(protowire.AppendTag(r.GetUnknown(), markField, protowire.BytesType), append([]byte{kind}, msg...)))
}

// takeMark removes the codec's mark from m and returns it, if m has one
// (it is the last unknown field).
func takeMark(m proto.Message) (kind byte, msg string, ok bool) {
	r := m.ProtoReflect()
	u := r.GetUnknown()
	for i := 0; i < len(u); {
		num, typ, n := protowire.ConsumeTag(u[i:])
		if n < 0 {
			return 0, "", false
		}
		l := protowire.ConsumeFieldValue(num, typ, u[i+n:])
		if l < 0 {
			return 0, "", false
		}
		if num == markField && typ == protowire.BytesType && i+n+l == len(u) {
			v, _ := protowire.ConsumeBytes(u[i+n:])
			if len(v) == 0 {
				return 0, "", false
			}
			r.SetUnknown(u[:i])
			return v[0], string(v[1:]), true
		}
		i += n + l
	}
	return 0, "", false
}

// checkRequest acts on the codec's mark: a request that did not decode is
// MALFORMED, one decoded without the UTF-8 check is checked, naming the
// first bad field.
func checkRequest(req any) error {
	m, ok := req.(proto.Message)
	if !ok {
		return nil
	}
	kind, msg, ok := takeMark(m)
	switch {
	case !ok:
		return nil
	case kind == markUndecoded:
		return fmt.Errorf("%s: %w", msg, session.ErrMalformed)
	case kind == markTooLarge:
		return tooLargeErr(msg)
	}
	if err := session.CheckFields(m); err != nil {
		return fmt.Errorf("request: %w", err)
	}
	return nil
}

// check is checkRequest, telling OnLimit of a refusal at a limit.
func (s *Service) check(req any) error {
	err := checkRequest(req)
	s.limited(err)
	return err
}

// limited tells OnLimit of err when it is a refusal at a limit.
func (s *Service) limited(err error) {
	var le *hub.LimitError
	if s.onLimit != nil && errors.As(err, &le) {
		s.onLimit(le.Limit())
	}
}

// tooLargeErr is the refusal a markTooLarge mark says.
func tooLargeErr(msg string) error {
	parts := strings.SplitN(msg, "\x00", 3)
	if len(parts) != 3 {
		return fmt.Errorf("%s: %w", msg, hub.ErrTooLarge)
	}
	v, _ := strconv.ParseInt(parts[1], 10, 64)
	return &hub.LimitError{What: parts[2], Flag: parts[0], Value: v, Err: hub.ErrTooLarge}
}

func (codec) Name() string { return "proto" }
