package hubgrpc

import (
	"fmt"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/hubd/hubd/hubpb"
)

// WireLimits bound what the codec decodes: a request past one is refused
// from its wire bytes alone, before anything of it is built (a JSON value
// nested a million deep would otherwise be built, and walked, before its
// check refuses it).
type WireLimits struct {
	// MaxRequestBytes is the largest request decoded: a larger one (that
	// gRPC's own, higher, cap let through) is TOO_LARGE naming the
	// --max-request-bytes flag. 0: no limit but gRPC's.
	MaxRequestBytes int
	// MaxEnvelopeBytes is the hub's envelope limit. A request holds at most
	// MaxEnvelopeBytes/4 JSON values (google.protobuf.Value, Struct and
	// ListValue), as many as the largest envelope can, each taking 4 bytes
	// of it at the least; more is TOO_LARGE naming --max-envelope-bytes.
	// 0: the hub's default.
	MaxEnvelopeBytes int
}

// MaxValueDepth is how deep a JSON value (context, knobs, a graph) may
// nest, as session.CheckValue has it: the codec refuses a deeper one as
// MALFORMED without building it.
const MaxValueDepth = 64

// maxNesting bounds the messages nested in a request outside JSON values
// (hubd's own messages nest a few deep).
const maxNesting = 32

// The JSON value types of protobuf.
const (
	valueName  protoreflect.FullName = "google.protobuf.Value"
	structName protoreflect.FullName = "google.protobuf.Struct"
	listName   protoreflect.FullName = "google.protobuf.ListValue"
)

// wireRefusal is why the scan refused a request: its mark and message.
type wireRefusal struct {
	kind byte
	msg  string
}

// wireScan walks a request's wire bytes with its descriptor, counting
// JSON values and their nesting; it builds nothing.
type wireScan struct {
	maxValues int
	values    int
}

// scanRequest checks the wire bytes b of a message of descriptor md
// against l; nil when they pass (or do not parse: the decoder says why).
func (l WireLimits) scanRequest(b []byte, md protoreflect.MessageDescriptor) *wireRefusal {
	if l.MaxRequestBytes > 0 && len(b) > l.MaxRequestBytes {
		return tooLarge("--max-request-bytes", l.MaxRequestBytes, fmt.Sprintf("the request is %d bytes", len(b)))
	}
	env := l.MaxEnvelopeBytes
	if env <= 0 {
		env = defaultEnvelopeBytes
	}
	w := wireScan{maxValues: env / 4}
	if r := w.message(b, md, 0, 0, false); r != nil {
		if r.kind == markTooLarge {
			return tooLarge("--max-envelope-bytes", env, fmt.Sprintf(
				"the request holds more than %d JSON values (context, knobs, graphs), more than an envelope can (4 bytes each at the least)", w.maxValues))
		}
		return r
	}
	return nil
}

// defaultEnvelopeBytes is the hub's default envelope limit.
const defaultEnvelopeBytes = 1 << 20

// message scans one message: nest is how many messages enclose it outside
// JSON values, open how many JSON containers (Struct, ListValue), inValue
// whether it is part of a JSON value.
func (w *wireScan) message(b []byte, md protoreflect.MessageDescriptor, nest, open int, inValue bool) *wireRefusal {
	nest, open, inValue, r := w.enter(md.FullName(), nest, open, inValue)
	if r != nil {
		return r
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil // the decoder says what is wrong
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return nil
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		if fd := md.Fields().ByNumber(num); fd != nil && fd.Message() != nil {
			if r := w.message(v, fd.Message(), nest, open, inValue); r != nil {
				return r
			}
		}
	}
	return nil
}

// enter counts a message of type name entered: a JSON value (its nesting
// and how many), a container, or one of the request's own messages (its
// nesting).
func (w *wireScan) enter(name protoreflect.FullName, nest, open int, inValue bool) (int, int, bool, *wireRefusal) {
	switch name {
	case valueName:
		if open > MaxValueDepth {
			return nest, open, true, &wireRefusal{markUndecoded, fmt.Sprintf("a JSON value in the request is nested deeper than %d", MaxValueDepth)}
		}
		return nest, open, true, w.count()
	case structName, listName:
		if !inValue { // a Struct field (a graph): the value's root
			return nest, open + 1, true, w.count()
		}
		return nest, open + 1, true, nil
	}
	if inValue {
		return nest, open, true, nil
	}
	if nest++; nest > maxNesting {
		return nest, open, false, &wireRefusal{markUndecoded, fmt.Sprintf("the request's messages are nested deeper than %d", maxNesting)}
	}
	return nest, open, false, nil
}

// count counts one JSON value, refusing one past the most.
func (w *wireScan) count() *wireRefusal {
	if w.values++; w.values > w.maxValues {
		return &wireRefusal{kind: markTooLarge}
	}
	return nil
}

// tooLarge is the refusal of a request at the limit of flag.
func tooLarge(flag string, value int, what string) *wireRefusal {
	return &wireRefusal{markTooLarge, flag + "\x00" + strconv.Itoa(value) + "\x00" + what}
}

// frameSkeleton returns the frame whose wire bytes are b with only its
// kind and, for a send or an open, its ref: a frame refused undecoded is
// answered by an ack with that ref, and the stream goes on.
func frameSkeleton(b []byte) *hubpb.AgentFrame {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return &hubpb.AgentFrame{}
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return &hubpb.AgentFrame{}
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return &hubpb.AgentFrame{}
		}
		b = b[n:]
		switch num {
		case 1:
			return &hubpb.AgentFrame{Frame: &hubpb.AgentFrame_Send{Send: &hubpb.StreamSend{Ref: refIn(v)}}}
		case 2:
			return &hubpb.AgentFrame{Frame: &hubpb.AgentFrame_Subscribe{Subscribe: &hubpb.SubscribeRequest{}}}
		case 3:
			return &hubpb.AgentFrame{Frame: &hubpb.AgentFrame_Open{Open: &hubpb.StreamOpen{Ref: refIn(v)}}}
		}
	}
	return &hubpb.AgentFrame{}
}

// refIn returns field 1 of a message's wire bytes as a varint (a
// StreamSend's or StreamOpen's ref), 0 when it has none.
func refIn(b []byte) uint64 {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0
		}
		b = b[n:]
		if num == 1 && typ == protowire.VarintType {
			v, _ := protowire.ConsumeVarint(b)
			return v
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return 0
		}
		b = b[n:]
	}
	return 0
}
