package session

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hubd/hubd/hubpb"
)

// State is a session's place in its lifecycle:
// PENDING → OPEN → CLOSED | EXPIRED (and PENDING → CLOSED | EXPIRED when the
// open fails).
type State uint8

// The lifecycle states. The zero State is not a state a session can be in.
const (
	StatePending State = iota + 1
	StateOpen
	StateClosed
	StateExpired
)

// String returns "PENDING", "OPEN", "CLOSED" or "EXPIRED".
func (s State) String() string {
	switch s {
	case StatePending:
		return "PENDING"
	case StateOpen:
		return "OPEN"
	case StateClosed:
		return "CLOSED"
	case StateExpired:
		return "EXPIRED"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// ParseState parses the String form of a state.
func ParseState(s string) (State, error) {
	for st := StatePending; st <= StateExpired; st++ {
		if strings.EqualFold(s, st.String()) {
			return st, nil
		}
	}
	return 0, fmt.Errorf("unknown session state %q (known: PENDING, OPEN, CLOSED, EXPIRED): %w", s, ErrMalformed)
}

// MarshalText implements encoding.TextMarshaler.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *State) UnmarshalText(b []byte) error {
	v, err := ParseState(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Ended reports whether s is CLOSED or EXPIRED.
func (s State) Ended() bool { return s == StateClosed || s == StateExpired }

// Step checks one lifecycle move. The possible moves are PENDING → OPEN,
// PENDING → CLOSED | EXPIRED and OPEN → CLOSED | EXPIRED; every other move
// is an ErrBadTransition naming both ends.
func Step(from, to State) error {
	switch {
	case from == StatePending && (to == StateOpen || to.Ended()),
		from == StateOpen && to.Ended():
		return nil
	}
	return fmt.Errorf("%v → %v: %w", from, to, ErrBadTransition)
}

// The stable close reasons. A graph's terminate reason, a finish packet's
// reason and an explicit close's reason are carried as given.
const (
	ReasonSequenceComplete   = "sequence_complete"
	ReasonMaxTurns           = "max_turns"
	ReasonMaxHandoffs        = "max_handoffs"
	ReasonAfterWork          = "after_work"
	ReasonFinished           = "finished"
	ReasonExplicitClose      = "explicit_close"
	ReasonTTLExpired         = "ttl_expired"
	ReasonInviteRejected     = "invite_rejected"
	ReasonInviteTimeout      = "invite_timeout"
	ReasonBudgetExceeded     = "budget_exceeded"
	ReasonDepthExceeded      = "depth_exceeded"
	ReasonConsultingComplete = "consulting_complete"
)

// ReasonExpectationViolated returns "expectation_violated:<name>".
func ReasonExpectationViolated(name string) string { return "expectation_violated:" + name }

// Lifecycle is the lifecycle part of a session's state, folded from its
// lifecycle envelopes.
type Lifecycle struct {
	State    State     `json:"state,omitzero"`
	Awaiting []string  `json:"awaiting,omitempty"` // invitees that have not acknowledged yet, in session order
	Reason   string    `json:"reason,omitempty"`   // why the session ended, once it has
	Created  time.Time `json:"created,omitzero"`   // when the invite was written
	Opened   time.Time `json:"opened,omitzero"`    // when it opened (zero while pending)
	Ended    time.Time `json:"ended,omitzero"`     // when it ended (zero until then)
}

// Admit reports whether an envelope of type t from sender may be appended to
// a session in this lifecycle state. from == "" is the hub itself.
func (l *Lifecycle) Admit(t, from string) error {
	if l.State.Ended() {
		return fmt.Errorf("session is %v (%s): %w", l.State, l.Reason, ErrClosed)
	}
	switch t {
	case EventInviteAck, EventInviteReject:
		if l.State != StatePending {
			return fmt.Errorf("%s while the session is %v: %w", t, l.State, ErrBadTransition)
		}
		if !slices.Contains(l.Awaiting, from) {
			return fmt.Errorf("%q has no invite to answer (awaiting: %s): %w", from, strings.Join(l.Awaiting, ", "), ErrBadTransition)
		}
		return nil
	case EventInvite, EventForked:
		if l.State != 0 {
			return fmt.Errorf("invite to a session that is %v: %w", l.State, ErrBadTransition)
		}
		return nil
	case EventOpened:
		return Step(l.State, StateOpen)
	case EventClosed, EventExpired, EventViolation:
		return nil
	}
	if l.State == StatePending && from != "" && t != EventContextSet {
		return fmt.Errorf("session is waiting for invite acks from %s: %w", strings.Join(l.Awaiting, ", "), ErrNotOpen)
	}
	return nil
}

// Fold applies an accepted envelope to the lifecycle. Only lifecycle events
// change it; the caller has checked the envelope with Admit.
func (l *Lifecycle) Fold(e *hubpb.Envelope) {
	switch e.GetType() {
	case EventInvite:
		l.State = StatePending
		l.Awaiting = slices.Clone(e.GetInvite().GetInvitees())
		l.Created = Time(e.GetAcceptedAt())
	case EventInviteAck:
		l.Awaiting = slices.DeleteFunc(l.Awaiting, func(n string) bool { return n == e.GetFrom() })
	case EventOpened:
		l.State = StateOpen
		l.Awaiting = nil
		l.Opened = Time(e.GetAcceptedAt())
	case EventForked: // a fork is created open: its participants took part already
		l.State = StateOpen
		l.Created = Time(e.GetAcceptedAt())
		l.Opened = l.Created
	case EventClosed, EventExpired:
		l.State = StateClosed
		if e.GetType() == EventExpired {
			l.State = StateExpired
		}
		l.Awaiting = nil
		l.Reason = e.GetEnded().GetReason()
		l.Ended = Time(e.GetAcceptedAt())
	}
}

// EndType returns the event type that ends a session with reason: EXPIRED
// for the reasons where the clock ran out with nobody deciding (ttl_expired,
// invite_timeout), CLOSED for every other.
func EndType(reason string) string {
	if reason == ReasonTTLExpired || reason == ReasonInviteTimeout {
		return EventExpired
	}
	return EventClosed
}
