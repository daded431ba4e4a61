package session

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hubd/hubd/hubpb"
)

// What the hub does when an expectation is violated (hubpb.Expectation.Action).
const (
	// ActionWarn writes a violation envelope addressed to the violators.
	ActionWarn = "warn"
	// ActionNotify writes a violation envelope addressed to everyone.
	ActionNotify = "notify"
	// ActionAutoClose closes the session with reason
	// "expectation_violated:<name>".
	ActionAutoClose = "auto_close"
)

// The expectation names (hubpb.Expectation.Name). A held turn (a question
// waiting for its answer, a blocking delegation for its children) is not a
// stalled turn: turn_within, reply_within and max_silence do not run while
// a turn is held, and after the release they measure a whole period from
// the releasing envelope (the answer, the last awaited result).
const (
	// TurnWithin: the expected next speaker takes its turn within the
	// threshold of the previous turn (or of the open, or of the release of
	// its held turn).
	TurnWithin = "turn_within"
	// ReplyWithin: after a turn, some other participant takes a turn within
	// the threshold (of that turn, or of the release of a held turn).
	ReplyWithin = "reply_within"
	// MaxSilence: the session never goes longer than the threshold without
	// any envelope from a participant (the release of a held turn counts
	// as one).
	MaxSilence = "max_silence"
	// AcksWithin: every invitee acknowledges within the threshold of the
	// invite.
	AcksWithin = "acks_within"
)

// Expect returns an expectation: a name, a threshold and an action.
func Expect(name string, within time.Duration, action string) *hubpb.Expectation {
	return &hubpb.Expectation{Name: name, Within: durationpb.New(within), Action: action}
}

// CheckExpectation reports whether e names a known expectation and action
// with a positive threshold. Messages quote the value sent.
func CheckExpectation(e *hubpb.Expectation) error {
	switch e.GetName() {
	case TurnWithin, ReplyWithin, MaxSilence, AcksWithin:
	default:
		return fmt.Errorf("unknown expectation %q (known: turn_within, reply_within, max_silence, acks_within): %w", e.GetName(), ErrMalformed)
	}
	switch e.GetAction() {
	case ActionWarn, ActionNotify, ActionAutoClose:
	default:
		return fmt.Errorf("expectation %s: unknown action %q (known: warn, notify, auto_close): %w", e.GetName(), e.GetAction(), ErrMalformed)
	}
	w := e.GetWithin()
	if err := w.CheckValid(); err != nil {
		return fmt.Errorf("expectation %s: within: %v: %w", e.GetName(), err, ErrMalformed)
	}
	if w.GetSeconds() < 0 || w.GetNanos() < 0 || w.AsDuration() == 0 {
		return fmt.Errorf("expectation %s: within %s must be positive: %w", e.GetName(), FormatDuration(w), ErrMalformed)
	}
	return nil
}

// MinThreshold is the hub's default least expectation threshold: a
// shorter one would fire timers faster than they are worth.
const MinThreshold = time.Second

// MaxDuration is the longest TTL, invite timeout or threshold the hub
// takes: ten years (365-day years). Longer ones are refused, not capped.
const MaxDuration = 10 * 365 * 24 * time.Hour

// CheckDuration reports whether d is a valid duration from min to max
// included; the error quotes the value sent and the bound.
func CheckDuration(field string, d *durationpb.Duration, min, max time.Duration) error {
	if err := d.CheckValid(); err != nil {
		return fmt.Errorf("%s: %v: %w", field, err, ErrMalformed)
	}
	switch {
	case d.GetSeconds() < 0 || d.GetNanos() < 0:
		return fmt.Errorf("%s %s must be positive: %w", field, FormatDuration(d), ErrMalformed)
	case d.GetSeconds() > int64(max/time.Second) || d.AsDuration() > max:
		return fmt.Errorf("%s %s is longer than the maximum %v: %w", field, FormatDuration(d), max, ErrMalformed)
	case d.AsDuration() < min:
		return fmt.Errorf("%s %s is shorter than the minimum %v: %w", field, FormatDuration(d), min, ErrMalformed)
	}
	return nil
}

// FormatDuration writes a stored duration as it was sent: "-1s", "1ns",
// or in seconds when it is beyond what time.Duration holds (about 292
// years), rather than the saturated value.
func FormatDuration(d *durationpb.Duration) string {
	s, n := d.GetSeconds(), d.GetNanos()
	if s > -(1<<63)/int64(time.Second)+1 && s < (1<<63-1)/int64(time.Second)-1 {
		return (time.Duration(s)*time.Second + time.Duration(n)).String()
	}
	return fmt.Sprintf("%ds", s)
}

// ExpectationString returns "name(threshold, action)", e.g.
// "turn_within(2m0s, warn)".
func ExpectationString(e *hubpb.Expectation) string {
	return fmt.Sprintf("%s(%v, %s)", e.GetName(), Duration(e.GetWithin()), e.GetAction())
}
