package adapters

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hubd/hubd/session"
)

// Base is the bookkeeping every session type shares: participants, turn
// count, last speaker, context variables and usage. Adapters embed it and
// call its methods from their Validate and Fold.
type Base struct {
	Participants []string                   `json:"participants"`
	Creator      string                     `json:"creator"`
	Turn         int                        `json:"turn"`
	LastSpeaker  string                     `json:"last_speaker,omitempty"`
	Context      map[string]json.RawMessage `json:"context"`
	Usage        session.Usage              `json:"usage"`
	Closing      string                     `json:"closing,omitempty"`
}

// KnobContext is the knob every session type takes: the initial context
// variables, a JSON object.
const KnobContext = "context"

// NewBase returns the bookkeeping of a new session, with the initial context
// of the "context" knob. Any knob not in known (nor "context") is an
// ErrMalformed error naming the known ones.
func NewBase(meta *session.Meta, kind string, known ...string) (Base, error) {
	b := Base{Participants: meta.Names(), Creator: meta.Creator, Context: map[string]json.RawMessage{}}
	known = append(known, KnobContext)
	for _, k := range slices.Sorted(maps.Keys(meta.Knobs)) {
		if !slices.Contains(known, k) {
			return Base{}, fmt.Errorf("%s: unknown knob %q (known: %s): %w", kind, k, strings.Join(known, ", "), session.ErrMalformed)
		}
	}
	var init map[string]json.RawMessage
	if _, err := meta.Knob(KnobContext, &init); err != nil {
		return Base{}, err
	}
	u, err := session.ContextUpdate{Set: init}.Canonical()
	if err != nil {
		return Base{}, fmt.Errorf("knob %q: %w", KnobContext, err)
	}
	b.ApplyContext(u)
	return b, nil
}

// Summary implements part of State.
func (b *Base) Summary() Summary {
	return Summary{Turn: b.Turn, LastSpeaker: b.LastSpeaker, Context: b.Context, Usage: b.Usage, Closing: b.Closing}
}

// CheckOpen returns ErrClosed once a fold has decided the session ends.
func (b *Base) CheckOpen() error {
	if b.Closing != "" {
		return fmt.Errorf("session is closing (%s): %w", b.Closing, session.ErrClosed)
	}
	return nil
}

// ApplyContext deletes, then sets, context variables.
func (b *Base) ApplyContext(u session.ContextUpdate) {
	for _, k := range u.Delete {
		delete(b.Context, k)
	}
	for k, v := range u.Set { //hubd:orderless each key is written once; order cannot matter
		b.Context[k] = v
	}
}

// Turn records a substantive envelope: packet context updates first, then
// the speaker, the turn count and usage.
func (b *Base) CountTurn(env *session.Envelope) {
	if p, ok := env.Payload.(session.Packet); ok {
		b.ApplyContext(p.Context)
		b.Usage = b.Usage.Add(p.Usage)
	}
	b.LastSpeaker = env.From
	b.Turn++
}

// FoldOther folds the envelopes that are not turns (context sets; the rest
// change nothing an adapter keeps) and reports whether env was one.
func (b *Base) FoldOther(env *session.Envelope) bool {
	if env.Type.Substantive() {
		return false
	}
	if u, ok := env.Payload.(session.ContextUpdate); ok && env.Type == session.EventContextSet {
		b.ApplyContext(u)
	}
	return true
}

// FoldTurn does the part of a fold every session type without a graph
// shares: an envelope that is not a turn folds as such; a turn is counted
// and a finish packet closes the session. done reports whether the fold is
// complete; if not, the caller decides where the turn leads.
func (b *Base) FoldTurn(env *session.Envelope) (out Outcome, done bool) {
	if b.FoldOther(env) {
		return Outcome{}, true
	}
	b.CountTurn(env)
	if r := FinishReason(env); r != "" {
		return b.Close(r, "finish("+r+")"), true
	}
	return Outcome{}, false
}

// Close records that the session ends with reason, decided by rule.
func (b *Base) Close(reason, rule string) Outcome {
	b.Closing = reason
	return Outcome{Close: reason, Rule: rule}
}

// OutOfTurn returns the ErrOutOfTurn error of a session type that expected
// one of want to speak.
func OutOfTurn(kind string, want []string, got string) error {
	switch len(want) {
	case 0:
		return fmt.Errorf("%s expects nobody to speak, got %q: %w", kind, got, ErrOutOfTurn)
	case 1:
		return fmt.Errorf("%s expects %q to speak, got %q: %w", kind, want[0], got, ErrOutOfTurn)
	}
	return fmt.Errorf("%s expects one of %s to speak, got %q: %w", kind, strings.Join(want, ", "), got, ErrOutOfTurn)
}

// CheckRouting rejects packets whose routing a session type without a graph
// cannot honour (handoff, escalate); text and finish pass.
func CheckRouting(kind string, env *session.Envelope) error {
	p, ok := env.Payload.(session.Packet)
	if !ok {
		return nil
	}
	switch p.Routing.Kind {
	case session.RouteHandoff, session.RouteEscalate:
		return fmt.Errorf("%s sessions take no %s routing (only text and finish): %w", kind, p.Routing.Kind, session.ErrMalformed)
	}
	return nil
}

// FinishReason returns the close reason a finish packet asks for, or "".
func FinishReason(env *session.Envelope) string {
	p, ok := env.Payload.(session.Packet)
	if !ok || p.Routing.Kind != session.RouteFinish {
		return ""
	}
	if p.Routing.Reason == "" {
		return session.ReasonFinished
	}
	return p.Routing.Reason
}
