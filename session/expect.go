package session

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Action is what the hub does when an expectation is violated.
type Action string

// The expectation actions.
const (
	// ActionWarn writes a violation envelope addressed to the violators.
	ActionWarn Action = "warn"
	// ActionNotify writes a violation envelope addressed to everyone.
	ActionNotify Action = "notify"
	// ActionAutoClose closes the session with reason
	// "expectation_violated:<name>".
	ActionAutoClose Action = "auto_close"
)

// The expectation names.
const (
	// TurnWithin: the expected next speaker takes its turn within the
	// threshold of the previous turn (or of the open).
	TurnWithin = "turn_within"
	// ReplyWithin: after a turn, some other participant takes a turn within
	// the threshold.
	ReplyWithin = "reply_within"
	// MaxSilence: the session never goes longer than the threshold without
	// any envelope from a participant.
	MaxSilence = "max_silence"
	// AcksWithin: every invitee acknowledges within the threshold of the
	// invite.
	AcksWithin = "acks_within"
)

// Expectation is one timer of a session: a name, a threshold and an action.
// In JSON: {"name": "turn_within", "seconds": 120, "action": "warn"}.
type Expectation struct {
	Name   string
	Within time.Duration
	Action Action
}

// Check reports whether e names a known expectation and action with a
// positive threshold.
func (e Expectation) Check() error {
	switch e.Name {
	case TurnWithin, ReplyWithin, MaxSilence, AcksWithin:
	default:
		return fmt.Errorf("unknown expectation %q (known: turn_within, reply_within, max_silence, acks_within): %w", e.Name, ErrMalformed)
	}
	switch e.Action {
	case ActionWarn, ActionNotify, ActionAutoClose:
	default:
		return fmt.Errorf("expectation %s: unknown action %q (known: warn, notify, auto_close): %w", e.Name, e.Action, ErrMalformed)
	}
	if e.Within <= 0 {
		return fmt.Errorf("expectation %s: threshold %v must be positive: %w", e.Name, e.Within, ErrMalformed)
	}
	return nil
}

// String returns "name(seconds, action)", e.g. "turn_within(120s, warn)".
func (e Expectation) String() string {
	return fmt.Sprintf("%s(%v, %s)", e.Name, e.Within, e.Action)
}

type expectationJSON struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	Action  Action  `json:"action"`
}

// MarshalJSON implements json.Marshaler.
func (e Expectation) MarshalJSON() ([]byte, error) {
	return json.Marshal(expectationJSON{e.Name, e.Within.Seconds(), e.Action})
}

// UnmarshalJSON implements json.Unmarshaler; unknown fields are an error.
func (e *Expectation) UnmarshalJSON(b []byte) error {
	var x expectationJSON
	if err := strictUnmarshal(b, &x); err != nil {
		return fmt.Errorf("expectation: %v: %w", err, ErrMalformed)
	}
	// Both bounds: converting an out-of-range float to an integer is
	// implementation-defined in Go.
	if math.IsNaN(x.Seconds) || math.Abs(x.Seconds) > float64(math.MaxInt64/int64(time.Second)) {
		return fmt.Errorf("expectation %s: seconds %v out of range: %w", x.Name, x.Seconds, ErrMalformed)
	}
	// Round, not truncate: 1.001 * 1e9 is 1000999999.9999999 in float64, and
	// MarshalJSON's output must decode to the same duration.
	within := time.Duration(math.Round(x.Seconds * float64(time.Second)))
	*e = Expectation{Name: x.Name, Within: within, Action: x.Action}
	return nil
}

// CloseReason returns the close reason of an auto_close of e.
func (e Expectation) CloseReason() string { return ReasonExpectationViolated(e.Name) }
