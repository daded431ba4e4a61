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

// The expectation names (hubpb.Expectation.Name).
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
	if w.AsDuration() <= 0 {
		return fmt.Errorf("expectation %s: within %v must be positive: %w", e.GetName(), w.AsDuration(), ErrMalformed)
	}
	return nil
}

// ExpectationString returns "name(threshold, action)", e.g.
// "turn_within(2m0s, warn)".
func ExpectationString(e *hubpb.Expectation) string {
	return fmt.Sprintf("%s(%v, %s)", e.GetName(), Duration(e.GetWithin()), e.GetAction())
}
