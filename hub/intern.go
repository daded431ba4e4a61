package hub

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// interner shares equal knob values between sessions: a session's
// metadata never changes, so every session opened with the same graph can
// hold one copy of it instead of its own (a workflow graph is most of a
// session's metadata). Values are keyed by their canonical JSON, and the
// copy kept is in canonical form (session.CanonicalValue), not the value
// that came first: values equal in meaning are stored as the same bytes
// however a client wrote them (key order and number spelling do not reach
// the hub through a Struct; a negative zero does, and is stored as zero),
// whichever came first and across restarts. Beside each shared value it
// keeps the value's stored form (deterministic protobuf), which
// marshalMeta splices into a new session's metadata instead of encoding
// the value again: a memo of a pure function of a value that never
// changes. It holds at most internMax values and starts afresh when full.
// Safe for concurrent use.
type interner struct {
	mu    sync.RWMutex
	vals  map[string]*internEntry          // by canonical JSON
	byVal map[*structpb.Value]*internEntry // the same entries, by shared value
}

// internEntry is one shared value and its stored form.
type internEntry struct {
	v   *structpb.Value
	enc []byte // nil if it would not encode (never for a checked value)
}

// internMax bounds the interner.
const internMax = 4096

// value returns the shared copy of v, a checked value whose canonical
// JSON is raw (nil: computed here): its canonical form, made and kept if
// it is new. The result must never be changed.
func (in *interner) value(v *structpb.Value, raw json.RawMessage) (*structpb.Value, error) {
	if raw == nil {
		var err error
		if raw, err = session.ValueJSON(v); err != nil {
			return nil, err
		}
	}
	in.mu.RLock()
	e, ok := in.vals[string(raw)]
	in.mu.RUnlock()
	if ok {
		return e.v, nil
	}
	c := session.CanonicalValue(v)
	enc, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
	if err != nil {
		enc = nil // marshalMeta encodes it again, and reports the error
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if e, ok := in.vals[string(raw)]; ok { // stored meanwhile
		return e.v, nil
	}
	if in.vals == nil || len(in.vals) >= internMax {
		in.vals = make(map[string]*internEntry)
		in.byVal = make(map[*structpb.Value]*internEntry)
	}
	e = &internEntry{v: c, enc: enc}
	in.vals[string(raw)], in.byVal[c] = e, e
	return c, nil
}

// encoded returns the stored form of v if v is a shared value the
// interner still holds.
func (in *interner) encoded(v *structpb.Value) ([]byte, bool) {
	in.mu.RLock()
	e, ok := in.byVal[v]
	in.mu.RUnlock()
	if !ok || e.enc == nil {
		return nil, false
	}
	return e.enc, true
}

// marshalMeta returns session.MarshalMeta(m), the same bytes, splicing in
// the stored forms of m's shared knob values rather than encoding them
// again. Deterministic protobuf writes a message's fields in field-number
// order and a map's entries in key order, each entry as its key (field 1)
// and its value (field 2), so the encoding is that of the fields before
// knobs (1 to 4, for good: numbers are never reused), the knob entries,
// then that of the fields after knobs and unknown fields. A test over
// every field holds it to MarshalMeta (a field added to SessionMeta must
// be added to rest below).
func (in *interner) marshalMeta(m *hubpb.SessionMeta) ([]byte, error) {
	knobs := m.GetKnobs()
	if len(knobs) == 0 {
		return session.MarshalMeta(m)
	}
	for k := range knobs { //hubd:orderless any invalid key sends the whole to MarshalMeta, for its error
		if !utf8.ValidString(k) {
			return session.MarshalMeta(m)
		}
	}
	const knobsField = 5
	head := &hubpb.SessionMeta{SessionId: m.SessionId, Type: m.Type, Creator: m.Creator, Participants: m.Participants}
	rest := &hubpb.SessionMeta{SessionId: m.SessionId, Type: m.Type, Creator: m.Creator, Participants: m.Participants,
		Labels: m.Labels, Ttl: m.Ttl, InviteTimeout: m.InviteTimeout, Expectations: m.Expectations,
		ParentSessionId: m.ParentSessionId, RootSessionId: m.RootSessionId, Depth: m.Depth, CreatedAt: m.CreatedAt,
		OpenKey: m.OpenKey, DelegationId: m.DelegationId, Responder: m.Responder, Delegates: m.Delegates, Budget: m.Budget,
		ThreadKey: m.ThreadKey, PreviousSessionId: m.PreviousSessionId, RootCreator: m.RootCreator, ForkedFrom: m.ForkedFrom, Retention: m.Retention}
	if u := m.ProtoReflect().GetUnknown(); len(u) > 0 {
		rest.ProtoReflect().SetUnknown(u)
	}
	opts := proto.MarshalOptions{Deterministic: true}
	enc, err := opts.Marshal(rest)
	if err != nil {
		return nil, err
	}
	n := opts.Size(head)
	keys := make([]string, 0, len(knobs))
	for k := range knobs { //hubd:orderless sorted below
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b := make([]byte, 0, len(enc)+len(knobs)*64)
	b = append(b, enc[:n]...)
	for _, k := range keys {
		v, ok := in.encoded(knobs[k])
		if !ok {
			if v, err = opts.Marshal(knobs[k]); err != nil {
				return nil, err
			}
		}
		b = protowire.AppendTag(b, knobsField, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(protowire.SizeTag(1)+protowire.SizeBytes(len(k))+protowire.SizeTag(2)+protowire.SizeBytes(len(v))))
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, k)
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, v)
	}
	return append(b, enc[n:]...), nil
}

// knobs returns a copy of knobs whose values are the interner's shared
// copies; an invalid value is an ErrMalformed error naming its knob (the
// first in key order). raws, when not nil, holds the canonical JSON of
// every value (see checkKnobSizes).
func (in *interner) knobs(knobs map[string]*structpb.Value, raws knobJSON) (map[string]*structpb.Value, error) {
	if len(knobs) == 0 {
		return nil, nil
	}
	out := make(map[string]*structpb.Value, len(knobs))
	for k, v := range knobs { //hubd:orderless a map of its own; on an error, the first bad knob is named in key order below
		r, ok := raws[k]
		if ok && r.err != nil {
			return nil, firstBadKnob(knobs)
		}
		v, err := in.value(v, r.raw)
		if err != nil {
			return nil, firstBadKnob(knobs)
		}
		out[k] = v
	}
	return out, nil
}

// firstBadKnob names the first knob, in key order, whose value is not one
// the hub stores.
func firstBadKnob(knobs map[string]*structpb.Value) error {
	for _, k := range slices.Sorted(maps.Keys(knobs)) {
		if _, err := session.ValueJSON(knobs[k]); err != nil {
			return fmt.Errorf("knobs[%q]: %w", k, err)
		}
	}
	return fmt.Errorf("knobs: a value has no JSON: %w", session.ErrMalformed) // not reached
}

// knobJSON is the canonical JSON of an open's knob values by name, the
// graph as "graph" (see knobs): computed once by the size check and used
// again as the values' interning keys. A value without one (see
// session.ValueJSON) has its error instead.
type knobJSON map[string]rawValue

// rawValue is a value's canonical JSON, or why it has none.
type rawValue struct {
	raw json.RawMessage
	err error
}
