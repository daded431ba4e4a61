package logv1

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// CodecVersion is the first byte of every version-1 stored envelope. A
// stored protobuf envelope never starts with it (it would be field 0).
const CodecVersion = 1

// DecodeEnvelope decodes a version-1 stored envelope. The format is: the
// version byte; the session id, seq, envelope id, sender, audience (a flag,
// then the names), type, causation id, client message id, call id, parent,
// root and depth, traceparent and acceptance time; then a presence flag and
// the type's payload fields. Strings and byte fields are length-prefixed
// (uvarint), ids are 16 raw bytes, times Unix nanoseconds (varint, 0 =
// none), floats 8 bytes big-endian. Bytes of a string that are not UTF-8
// become U+FFFD (a proto string must be UTF-8). Malformed input, trailing
// bytes, a context value that is not JSON or a number out of its field's
// range is an error wrapping session.ErrCorrupt; it never panics.
func DecodeEnvelope(b []byte) (*hubpb.Envelope, error) {
	r := reader{b: b}
	if v := r.byte(); r.err == nil && v != CodecVersion {
		return nil, fmt.Errorf("version-1 envelope: codec version %d, want %d: %w", v, CodecVersion, session.ErrCorrupt)
	}
	e := &hubpb.Envelope{SessionId: r.id(), Seq: r.uvarint(), Id: r.id(), From: r.str()}
	if r.flag() {
		e.Audience = &hubpb.Audience{Names: r.strs()}
	}
	e.Type = r.str()
	e.CausationId = r.id()
	e.ClientMsgId = r.str()
	if c := (&hubpb.Call{Id: r.str(), Parent: r.str(), Root: r.str(), Depth: r.narrow(int64(r.uvarint()))}); !isZeroCall(c) {
		e.Call = c
	}
	e.Traceparent = r.str()
	e.AcceptedAt = r.time()
	if r.flag() {
		r.payload(e)
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d trailing bytes", len(r.b))
	}
	if r.err != nil {
		return nil, fmt.Errorf("version-1 envelope: %w", r.err)
	}
	return e, nil
}

func isZeroCall(c *hubpb.Call) bool {
	return c.GetId() == "" && c.GetParent() == "" && c.GetRoot() == "" && c.GetDepth() == 0
}

// payload reads the payload of e's type into e. The table is version 1's:
// any type not in it is a custom type, whose payload is bytes.
func (r *reader) payload(e *hubpb.Envelope) {
	switch t := e.GetType(); t {
	case "text":
		e.Payload = &hubpb.Envelope_Text{Text: &hubpb.Text{Text: r.str()}}
	case "packet":
		e.Payload = &hubpb.Envelope_Packet{Packet: r.packet()}
	case "context_set":
		e.Payload = &hubpb.Envelope_ContextSet{ContextSet: r.context()}
	case "session_invite":
		e.Payload = &hubpb.Envelope_Invite{Invite: &hubpb.Invite{Invitees: r.strs()}}
	case "session_invite_reject", "session_closed", "session_expired":
		e.Payload = &hubpb.Envelope_Ended{Ended: &hubpb.Ended{Reason: r.str()}}
	case "expectation_violated":
		e.Payload = &hubpb.Envelope_Violation{Violation: r.violation()}
	case "question":
		e.Payload = &hubpb.Envelope_Question{Question: r.question()}
	case "answer":
		e.Payload = &hubpb.Envelope_Answer{Answer: &hubpb.Answer{QuestionId: r.str(), OptionIds: r.strs(), Text: r.str()}}
	case "delegation_result":
		e.Payload = &hubpb.Envelope_DelegationResult{DelegationResult: &hubpb.DelegationResult{
			ChildSessionId: r.id(), Reason: r.str(), Summary: r.str()}}
	case "task_progress":
		e.Payload = &hubpb.Envelope_TaskProgress{TaskProgress: &hubpb.TaskProgress{Task: r.str(), Percent: r.f64(), Detail: r.str()}}
	case "session_invite_ack", "session_opened":
		r.fail("%s carries no payload", t)
	default:
		data := r.bytes()
		if data == nil {
			data = []byte{}
		}
		e.Payload = &hubpb.Envelope_Custom{Custom: data}
	}
}

// packet reads a packet: body, routing, context updates, usage. Routing,
// context updates and usage are left unset when zero.
func (r *reader) packet() *hubpb.Packet {
	p := &hubpb.Packet{Body: r.str()}
	if rt := (&hubpb.Routing{Kind: r.str(), Tool: r.str(), Target: r.str(), Reason: r.str(), Summary: r.str()}); rt.GetKind() != "" ||
		rt.GetTool() != "" || rt.GetTarget() != "" || rt.GetReason() != "" || rt.GetSummary() != "" {
		p.Routing = rt
	}
	if u := r.context(); len(u.GetSet()) > 0 || len(u.GetDelete()) > 0 {
		p.ContextUpdates = u
	}
	in, out := r.varint(), r.varint()
	// != rather than a comparison of the three with zero: like version 1's
	// struct comparison, -0 counts as zero and NaN does not.
	if cost := r.f64(); in != 0 || out != 0 || cost != 0 {
		p.Usage = &hubpb.Usage{InputTokens: in, OutputTokens: out, CostUsd: cost}
	}
	return p
}

// context reads a context update: the deleted names, then the set
// variables, whose values are canonical JSON.
func (r *reader) context() *hubpb.ContextUpdate {
	u := &hubpb.ContextUpdate{Delete: r.strs()}
	n := r.length()
	if n == 0 {
		return u
	}
	u.Set = make(map[string]*structpb.Value, n)
	for range n {
		k := r.str()
		if _, dup := u.Set[k]; dup {
			r.fail("context key %q twice", k)
		}
		raw := r.bytes()
		if r.err != nil {
			return u
		}
		v, err := session.JSONValue(raw)
		if err != nil {
			r.fail("context value %q: %v", k, err)
			return u
		}
		u.Set[k] = v
	}
	return u
}

func (r *reader) violation() *hubpb.Violation {
	return &hubpb.Violation{Expectation: r.str(), Index: r.narrow(r.varint()), Action: r.str(), Since: r.time(),
		Violators: r.strs(), Detail: r.str()}
}

func (r *reader) question() *hubpb.Question {
	q := &hubpb.Question{QuestionId: r.str(), Text: r.str()}
	n := r.length()
	for range n {
		q.Options = append(q.Options, &hubpb.Option{Id: r.str(), Label: r.str()})
	}
	return q
}

// reader reads version-1 fields from b; the first error sticks and every
// later read returns a zero value.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format+": %w", append(args, session.ErrCorrupt)...)
	}
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail("need %d bytes, %d left", n, len(r.b))
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) byte() byte {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

// flag reads a presence byte: 0 or 1, anything else is corrupt.
func (r *reader) flag() bool {
	c := r.byte()
	if c > 1 {
		r.fail("flag byte %d, want 0 or 1", c)
	}
	return c == 1
}

// id reads 16 raw bytes as a UUID string, "" for the zero id.
func (r *reader) id() string {
	p := r.take(16)
	if p == nil {
		return ""
	}
	u := uuid.UUID(p)
	if u == uuid.Nil {
		return ""
	}
	return u.String()
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad uvarint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// narrow narrows v, read as version 1's int, to its proto field's type.
func (r *reader) narrow(v int64) int32 {
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail("number %d out of range", v)
		return 0
	}
	return int32(v)
}

// length reads a count or byte length, which cannot exceed the bytes left.
func (r *reader) length() int {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail("length %d exceeds the %d bytes left", n, len(r.b))
		return 0
	}
	return int(n)
}

// str reads a string. Version 1 stored strings as it got them; a proto
// string must be UTF-8, so each run of bytes that is not becomes U+FFFD,
// as encoding/json does to the strings inside context values.
func (r *reader) str() string {
	p := r.take(r.length())
	if !utf8.Valid(p) {
		return strings.ToValidUTF8(string(p), "\uFFFD")
	}
	return string(p)
}

func (r *reader) bytes() []byte {
	n := r.length()
	if n == 0 {
		return nil
	}
	return slices.Clone(r.take(n))
}

func (r *reader) f64() float64 {
	p := r.take(8)
	if p == nil {
		return 0
	}
	return math.Float64frombits(binary.BigEndian.Uint64(p))
}

// time reads Unix nanoseconds; 0 is no time.
func (r *reader) time() *timestamppb.Timestamp {
	n := r.varint()
	if n == 0 {
		return nil
	}
	return timestamppb.New(time.Unix(0, n))
}

func (r *reader) strs() []string {
	n := r.length() // every string takes at least one byte
	if n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	for range n {
		out = append(out, r.str())
	}
	return out
}
