package session

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Envelope is one entry of a session's log. The hub assigns Session, Seq, ID
// and AcceptedAt, and binds From to the authenticated sender; the rest comes
// from the sender.
type Envelope struct {
	Session ID        // the session this entry belongs to
	Seq     uint64    // dense per session, from 1
	ID      uuid.UUID // time-ordered envelope id (UUIDv7)
	From    string    // the sender: an agent name, or "" for the hub itself

	// Audience says who sees the envelope besides the log.
	Audience Audience

	Type    EventType
	Payload Payload // matches Type; nil for types without data

	Causation   uuid.UUID // the envelope this one answers, if any
	ClientMsgID string    // the sender's idempotency key, if any
	Call        Call      // position in a delegation tree
	TraceParent string    // W3C traceparent, carried as given
	AcceptedAt  time.Time // the hub's clock at acceptance
}

// Audience says who an envelope is delivered to. The zero value means every
// participant but the sender. A restricted audience names its recipients
// exactly; a restricted audience with no names reaches nobody (log only).
type Audience struct {
	Restricted bool
	Names      []string
}

// Everyone is the default audience: every participant but the sender.
func Everyone() Audience { return Audience{} }

// Only is a restricted audience of exactly the given names.
func Only(names ...string) Audience {
	return Audience{Restricted: true, Names: slices.Clone(names)}
}

// Includes reports whether the envelope is addressed to name, given who sent
// it. The sender always sees its own envelopes in the log; Includes is about
// delivery to others.
func (a Audience) Includes(name, from string) bool {
	if !a.Restricted {
		return name != from
	}
	return slices.Contains(a.Names, name)
}

// Call places an envelope in a delegation tree: the call it belongs to, that
// call's parent and the tree's root, and the depth (0 at the root).
type Call struct {
	ID     string
	Parent string
	Root   string
	Depth  int
}

// MaxNameLen bounds agent names.
const MaxNameLen = 128

// CheckName reports whether s is a valid agent name: 1 to MaxNameLen bytes of
// printable characters without spaces, not starting with '@'.
func CheckName(s string) error {
	if s == "" {
		return fmt.Errorf("agent name is empty: %w", ErrMalformed)
	}
	if len(s) > MaxNameLen {
		return fmt.Errorf("agent name %.20q... is %d bytes, at most %d: %w", s, len(s), MaxNameLen, ErrMalformed)
	}
	if s[0] == '@' {
		return fmt.Errorf("agent name %q starts with '@': %w", s, ErrMalformed)
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r == ',' {
			return fmt.Errorf("agent name %q has a space, comma or control character: %w", s, ErrMalformed)
		}
	}
	return nil
}

// Check reports whether the envelope's shape is valid: a known or custom
// type, a payload matching it, and well-formed payload fields. It does not
// look at any session state. Context values must already be canonical (see
// [CanonicalJSON]).
func (e *Envelope) Check() error {
	if _, err := ParseEventType(string(e.Type)); err != nil {
		return err
	}
	if e.Audience.Restricted {
		for _, n := range e.Audience.Names {
			if err := CheckName(n); err != nil {
				return fmt.Errorf("audience: %w", err)
			}
		}
	}
	if e.Call.Depth < 0 {
		return fmt.Errorf("call depth %d is negative: %w", e.Call.Depth, ErrMalformed)
	}
	return checkPayload(e.Type, e.Payload)
}

// Text returns what an envelope says in words: the text of a text envelope,
// the body of a packet, and "" for anything else. Mentions are read from it.
func (e *Envelope) Text() string {
	switch p := e.Payload.(type) {
	case Text:
		return p.Text
	case Packet:
		return p.Body
	}
	return ""
}

// Tool returns the routing tool of a packet, or "".
func (e *Envelope) Tool() string {
	if p, ok := e.Payload.(Packet); ok {
		return p.Routing.Tool
	}
	return ""
}
