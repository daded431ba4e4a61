package session

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
)

// Type is a session type: an adapter kind and its version, written
// "workflow@1".
type Type struct {
	Kind    string
	Version int
}

// ParseType parses "kind@version"; a bare "kind" means version 1.
func ParseType(s string) (Type, error) {
	kind, ver, found := strings.Cut(s, "@")
	t := Type{Kind: kind, Version: 1}
	if found {
		v, err := strconv.Atoi(ver)
		if err != nil || v < 1 {
			return Type{}, fmt.Errorf("session type %q: version must be a positive integer: %w", s, ErrMalformed)
		}
		t.Version = v
	}
	if kind == "" || strings.ContainsAny(kind, " @\t\n") {
		return Type{}, fmt.Errorf("session type %q: kind must be a non-empty word: %w", s, ErrMalformed)
	}
	return t, nil
}

// String returns "kind@version".
func (t Type) String() string { return t.Kind + "@" + strconv.Itoa(t.Version) }

// MarshalText implements encoding.TextMarshaler.
func (t Type) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (t *Type) UnmarshalText(b []byte) error {
	v, err := ParseType(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// Names returns the participant names of a session in session order.
func Names(m *hubpb.SessionMeta) []string {
	names := make([]string, len(m.GetParticipants()))
	for i, p := range m.GetParticipants() {
		names[i] = p.GetName()
	}
	return names
}

// IsParticipant reports whether name is a participant of a session.
func IsParticipant(m *hubpb.SessionMeta, name string) bool {
	return slices.ContainsFunc(m.GetParticipants(), func(p *hubpb.Participant) bool { return p.GetName() == name })
}

// Invitees returns the participants who must acknowledge the invite before
// the session opens: everyone but the creator and the auto-accepting ones,
// in session order.
func Invitees(m *hubpb.SessionMeta) []string {
	var out []string
	for _, p := range m.GetParticipants() {
		if p.GetName() != m.GetCreator() && !p.GetAutoAccept() {
			out = append(out, p.GetName())
		}
	}
	return out
}

// Knob decodes the knob named key of a session into v (as encoding/json
// would decode the knob's JSON), reporting whether it was present.
func Knob(m *hubpb.SessionMeta, key string, v any) (bool, error) {
	raw, ok, err := KnobJSON(m, key)
	if !ok || err != nil {
		return ok, err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("knob %q: %v: %w", key, err, ErrMalformed)
	}
	return true, nil
}

// KnobJSON returns the canonical JSON of the knob named key, reporting
// whether it was present.
func KnobJSON(m *hubpb.SessionMeta, key string) (json.RawMessage, bool, error) {
	v, ok := m.GetKnobs()[key]
	if !ok {
		return nil, false, nil
	}
	raw, err := ValueJSON(v)
	if err != nil {
		return nil, true, fmt.Errorf("knob %q: %w", key, err)
	}
	return raw, true, nil
}

// CheckMeta reports whether a session's metadata is well formed: an id, a
// type, a creator who is a participant, participants with valid distinct
// names (how many a session type needs is its adapter's to check), valid
// knob values and expectations, non-negative durations and depth. Adapters
// check their own knobs (every knob must be one the adapter knows, and
// decode).
func CheckMeta(m *hubpb.SessionMeta) error {
	if _, err := ParseID(m.GetSessionId()); err != nil {
		return fmt.Errorf("session_id: %v: %w", err, ErrMalformed)
	}
	if _, err := ParseType(m.GetType()); err != nil {
		return err
	}
	if err := checkParticipants(m); err != nil {
		return err
	}
	if err := checkKnobs(m.GetKnobs()); err != nil {
		return err
	}
	if Duration(m.GetTtl()) < 0 || Duration(m.GetInviteTimeout()) < 0 || m.GetDepth() < 0 {
		return fmt.Errorf("ttl, invite_timeout and depth must not be negative: %w", ErrMalformed)
	}
	for i, e := range m.GetExpectations() {
		if err := CheckExpectation(e); err != nil {
			return fmt.Errorf("expectations[%d]: %w", i, err)
		}
	}
	return nil
}

func checkParticipants(m *hubpb.SessionMeta) error {
	if len(m.GetParticipants()) < 1 {
		return fmt.Errorf("a session needs participants: %w", ErrMalformed)
	}
	seen := make(map[string]bool, len(m.GetParticipants()))
	for i, p := range m.GetParticipants() {
		if err := CheckName(p.GetName()); err != nil {
			return fmt.Errorf("participants[%d]: %w", i, err)
		}
		if seen[p.GetName()] {
			return fmt.Errorf("participant %q is listed twice: %w", p.GetName(), ErrMalformed)
		}
		seen[p.GetName()] = true
	}
	if !seen[m.GetCreator()] {
		return fmt.Errorf("creator %q is not a participant (participants: %s): %w", m.GetCreator(), strings.Join(Names(m), ", "), ErrMalformed)
	}
	return nil
}

// checkKnobs checks every knob's value; the first bad one in key order is
// named.
func checkKnobs(knobs map[string]*structpb.Value) error {
	bad := false
	for _, v := range knobs { //hubd:orderless all must be valid; the first bad one is named in key order below
		if !valueOK(v, 0) {
			bad = true
			break
		}
	}
	if !bad {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(knobs)) {
		if err := CheckValue(knobs[k]); err != nil {
			return fmt.Errorf("knobs[%q]: %w", k, err)
		}
	}
	return nil
}
