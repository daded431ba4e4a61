package session

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
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

// Participant is one member of a session, in the session's order.
type Participant struct {
	Name string `json:"name"`
	// Role is descriptive ("creator", "member", "supervisor", "human", ...);
	// routing never depends on it.
	Role string `json:"role,omitempty"`
	// AutoAccept: the hub counts this participant's invite as acknowledged
	// at open (service agents, the creator itself).
	AutoAccept bool `json:"auto_accept,omitempty"`
}

// Meta is a session's metadata, fixed at open and stored with its first log
// record.
type Meta struct {
	ID           ID                         `json:"id"`
	Type         Type                       `json:"type"`
	Creator      string                     `json:"creator"`
	Participants []Participant              `json:"participants"`
	Knobs        map[string]json.RawMessage `json:"knobs,omitempty"`
	Labels       map[string]string          `json:"labels,omitempty"`
	// TTL is the session's lifetime from its creation; 0 means no TTL.
	TTL time.Duration `json:"ttl,omitempty"`
	// InviteTimeout bounds the wait for invite acks; 0 means the hub default.
	InviteTimeout time.Duration `json:"invite_timeout,omitempty"`
	// Expectations are the timers of this session: the type's defaults
	// unless the opener gave its own.
	Expectations []Expectation `json:"expectations,omitempty"`
	// Parent, Root and Depth place a child session in a delegation tree.
	Parent    ID        `json:"parent,omitzero"`
	Root      ID        `json:"root,omitzero"`
	Depth     int       `json:"depth,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// OpenKey is the creator's idempotency key for the open request.
	OpenKey string `json:"open_key,omitempty"`
}

// Names returns the participant names in session order.
func (m *Meta) Names() []string {
	names := make([]string, len(m.Participants))
	for i, p := range m.Participants {
		names[i] = p.Name
	}
	return names
}

// IsParticipant reports whether name is a participant.
func (m *Meta) IsParticipant(name string) bool {
	return slices.ContainsFunc(m.Participants, func(p Participant) bool { return p.Name == name })
}

// Knob decodes the knob named key into v, reporting whether it was present.
func (m *Meta) Knob(key string, v any) (bool, error) {
	raw, ok := m.Knobs[key]
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("knob %q: %v: %w", key, err, ErrMalformed)
	}
	return true, nil
}

// Check reports whether the metadata is well formed: a type, a creator who
// is a participant, participants with valid distinct names (how many a
// session type needs is its adapter's to check),
// valid expectations and non-negative durations. Adapters check their own
// knobs (every knob must be one the adapter knows, and decode).
func (m *Meta) Check() error {
	if m.Type.Kind == "" {
		return fmt.Errorf("session type is empty: %w", ErrMalformed)
	}
	if len(m.Participants) < 1 {
		return fmt.Errorf("a session needs participants: %w", ErrMalformed)
	}
	seen := make(map[string]bool, len(m.Participants))
	for i, p := range m.Participants {
		if err := CheckName(p.Name); err != nil {
			return fmt.Errorf("participants[%d]: %w", i, err)
		}
		if seen[p.Name] {
			return fmt.Errorf("participant %q is listed twice: %w", p.Name, ErrMalformed)
		}
		seen[p.Name] = true
	}
	if !seen[m.Creator] {
		return fmt.Errorf("creator %q is not a participant (participants: %s): %w", m.Creator, strings.Join(m.Names(), ", "), ErrMalformed)
	}
	if m.TTL < 0 || m.InviteTimeout < 0 || m.Depth < 0 {
		return fmt.Errorf("ttl, invite timeout and depth must not be negative: %w", ErrMalformed)
	}
	for i, e := range m.Expectations {
		if err := e.Check(); err != nil {
			return fmt.Errorf("expectations[%d]: %w", i, err)
		}
	}
	return nil
}

// Invitees returns the participants who must acknowledge the invite before
// the session opens: everyone but the creator and the auto-accepting ones,
// in session order.
func (m *Meta) Invitees() []string {
	var out []string
	for _, p := range m.Participants {
		if p.Name != m.Creator && !p.AutoAccept {
			out = append(out, p.Name)
		}
	}
	return out
}
