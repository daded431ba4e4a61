package session

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
)

// codecVersion is the first byte of every encoded envelope.
const codecVersion = 1

// AppendBinary appends the stored form of e to b and returns the extended
// buffer. The format is: a version byte; the session id, seq, envelope id,
// sender, audience, type, causation id, client message id, call ids and
// depth, trace parent and acceptance time; then a presence byte and the
// type's payload fields. Strings and byte fields are length-prefixed
// (uvarint), ids are 16 raw bytes, times are Unix nanoseconds (0 = zero
// time), maps are written in sorted key order. Encoding never fails.
// Decoding gives nil for an empty list, map or byte string, and times in
// UTC.
func (e *Envelope) AppendBinary(b []byte) ([]byte, error) {
	w := writer{b: b}
	w.byte(codecVersion)
	w.raw16(e.Session)
	w.uvarint(e.Seq)
	w.raw16(e.ID)
	w.str(e.From)
	if e.Audience.Restricted {
		w.byte(1)
		w.strs(e.Audience.Names)
	} else {
		w.byte(0)
	}
	w.str(string(e.Type))
	w.raw16(e.Causation)
	w.str(e.ClientMsgID)
	w.str(e.Call.ID)
	w.str(e.Call.Parent)
	w.str(e.Call.Root)
	w.uvarint(uint64(e.Call.Depth))
	w.str(e.TraceParent)
	w.time(e.AcceptedAt)
	if e.Payload == nil {
		w.byte(0)
	} else {
		w.byte(1)
		w.payload(e.Payload)
	}
	return w.b, nil
}

// MarshalBinary returns the stored form of e (see AppendBinary).
func (e *Envelope) MarshalBinary() ([]byte, error) { return e.AppendBinary(nil) }

// DecodeEnvelope parses the stored form of an envelope. Any malformed input
// is an ErrCorrupt error saying where it went wrong; it never panics.
func DecodeEnvelope(b []byte) (*Envelope, error) {
	r := reader{b: b}
	if v := r.byte(); r.err == nil && v != codecVersion {
		return nil, fmt.Errorf("envelope codec version %d, want %d: %w", v, codecVersion, ErrCorrupt)
	}
	e := &Envelope{}
	e.Session = r.raw16()
	e.Seq = r.uvarint()
	e.ID = r.raw16()
	e.From = r.str()
	if r.flag() {
		e.Audience = Audience{Restricted: true, Names: r.strs()}
	}
	e.Type = EventType(r.str())
	e.Causation = r.raw16()
	e.ClientMsgID = r.str()
	e.Call = Call{ID: r.str(), Parent: r.str(), Root: r.str(), Depth: int(r.uvarint())}
	e.TraceParent = r.str()
	e.AcceptedAt = r.time()
	if r.flag() {
		e.Payload = r.payload(e.Type)
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d trailing bytes", len(r.b))
	}
	if r.err != nil {
		return nil, fmt.Errorf("envelope: %w", r.err)
	}
	return e, nil
}

type writer struct{ b []byte }

func (w *writer) byte(c byte)       { w.b = append(w.b, c) }
func (w *writer) raw16(id [16]byte) { w.b = append(w.b, id[:]...) }
func (w *writer) uvarint(v uint64)  { w.b = binary.AppendUvarint(w.b, v) }
func (w *writer) varint(v int64)    { w.b = binary.AppendVarint(w.b, v) }
func (w *writer) f64(v float64)     { w.b = binary.BigEndian.AppendUint64(w.b, math.Float64bits(v)) }
func (w *writer) str(s string)      { w.uvarint(uint64(len(s))); w.b = append(w.b, s...) }
func (w *writer) bytes(p []byte)    { w.uvarint(uint64(len(p))); w.b = append(w.b, p...) }
func (w *writer) time(t time.Time) {
	if t.IsZero() {
		w.varint(0)
		return
	}
	w.varint(t.UnixNano())
}

func (w *writer) strs(ss []string) {
	w.uvarint(uint64(len(ss)))
	for _, s := range ss {
		w.str(s)
	}
}

func (w *writer) context(u ContextUpdate) {
	w.strs(u.Delete)
	w.uvarint(uint64(len(u.Set)))
	for _, k := range slices.Sorted(maps.Keys(u.Set)) {
		w.str(k)
		w.bytes(u.Set[k])
	}
}

func (w *writer) payload(p Payload) {
	switch x := p.(type) {
	case Text:
		w.str(x.Text)
	case Packet:
		w.str(x.Body)
		r := x.Routing
		w.str(string(r.Kind))
		w.str(r.Tool)
		w.str(r.Target)
		w.str(r.Reason)
		w.str(r.Summary)
		w.context(x.Context)
		w.varint(x.Usage.InputTokens)
		w.varint(x.Usage.OutputTokens)
		w.f64(x.Usage.CostUSD)
	case ContextUpdate:
		w.context(x)
	case Invite:
		w.strs(x.Invitees)
	case Ended:
		w.str(x.Reason)
	case Violation:
		w.str(x.Expectation)
		w.varint(int64(x.Index))
		w.str(string(x.Action))
		w.time(x.Since)
		w.strs(x.Violators)
		w.str(x.Detail)
	case Question:
		w.str(x.QuestionID)
		w.str(x.Text)
		w.uvarint(uint64(len(x.Options)))
		for _, o := range x.Options {
			w.str(o.ID)
			w.str(o.Label)
		}
	case Answer:
		w.str(x.QuestionID)
		w.strs(x.OptionIDs)
		w.str(x.Text)
	case DelegationResult:
		w.raw16(x.Child)
		w.str(x.Reason)
		w.str(x.Summary)
	case TaskProgress:
		w.str(x.Task)
		w.f64(x.Percent)
		w.str(x.Detail)
	case Custom:
		w.bytes(x.Data)
	}
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format+": %w", append(args, ErrCorrupt)...)
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

func (r *reader) raw16() (id [16]byte) {
	copy(id[:], r.take(16))
	return id
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

func (r *reader) length() int {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail("length %d exceeds the %d bytes left", n, len(r.b))
		return 0
	}
	return int(n)
}

func (r *reader) str() string { return string(r.take(r.length())) }

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

func (r *reader) time() time.Time {
	n := r.varint()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
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

func (r *reader) context() ContextUpdate {
	u := ContextUpdate{Delete: r.strs()}
	n := r.length()
	if n == 0 {
		return u
	}
	u.Set = make(map[string]json.RawMessage, n)
	for range n {
		k := r.str()
		if _, dup := u.Set[k]; dup {
			r.fail("context key %q twice", k)
		}
		u.Set[k] = json.RawMessage(r.bytes())
	}
	return u
}

func (r *reader) payload(t EventType) Payload {
	switch PayloadFor(t).(type) {
	case nil:
		r.fail("%s carries no payload", t)
		return nil
	case Text:
		return Text{Text: r.str()}
	case Packet:
		p := Packet{Body: r.str()}
		p.Routing = Routing{Kind: RoutingKind(r.str()), Tool: r.str(), Target: r.str(), Reason: r.str(), Summary: r.str()}
		p.Context = r.context()
		p.Usage = Usage{InputTokens: r.varint(), OutputTokens: r.varint(), CostUSD: r.f64()}
		return p
	case ContextUpdate:
		return r.context()
	case Invite:
		return Invite{Invitees: r.strs()}
	case Ended:
		return Ended{Reason: r.str()}
	case Violation:
		return Violation{Expectation: r.str(), Index: int(r.varint()), Action: Action(r.str()), Since: r.time(), Violators: r.strs(), Detail: r.str()}
	case Question:
		return r.question()
	case Answer:
		return Answer{QuestionID: r.str(), OptionIDs: r.strs(), Text: r.str()}
	case DelegationResult:
		return DelegationResult{Child: r.raw16(), Reason: r.str(), Summary: r.str()}
	case TaskProgress:
		return TaskProgress{Task: r.str(), Percent: r.f64(), Detail: r.str()}
	}
	return Custom{Data: r.bytes()}
}

func (r *reader) question() Question {
	q := Question{QuestionID: r.str(), Text: r.str()}
	n := r.length()
	for range n {
		q.Options = append(q.Options, Option{ID: r.str(), Label: r.str()})
	}
	return q
}
