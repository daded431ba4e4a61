package adapters

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Base is the bookkeeping every session type shares: participants, turn
// count, last speaker, context variables (as canonical JSON) and usage.
// Adapters embed it and call its methods from their Validate and Fold.
type Base struct {
	Participants []string                   `json:"participants"`
	Creator      string                     `json:"creator"`
	Turn         int                        `json:"turn"`
	LastSpeaker  string                     `json:"last_speaker,omitempty"`
	Context      map[string]json.RawMessage `json:"context"`
	// ContextReaders names, for each context variable whose value was set
	// by an envelope with an audience, who may read it: the setter and the
	// audience, sorted. A variable not in it is everyone's.
	ContextReaders map[string][]string `json:"context_readers,omitempty"`
	Usage          *hubpb.Usage        `json:"usage"`
	Closing        string              `json:"closing,omitempty"`
}

// KnobContext is the knob every session type takes: the initial context
// variables, a JSON object.
const KnobContext = "context"

// NewBase returns the bookkeeping of a new session, with the initial context
// of the "context" knob. Any knob not in known (nor "context") is an
// ErrMalformed error naming the known ones.
func NewBase(meta *hubpb.SessionMeta, kind string, known ...string) (Base, error) {
	b := Base{Participants: session.Names(meta), Creator: meta.GetCreator(), Context: map[string]json.RawMessage{}, Usage: &hubpb.Usage{}}
	known = append(known, KnobContext)
	for k := range meta.GetKnobs() { //hubd:orderless all must be known; the first unknown one is named in key order below
		if !slices.Contains(known, k) {
			return Base{}, unknownKnob(meta, kind, known)
		}
	}
	init, ok := meta.GetKnobs()[KnobContext]
	if _, null := init.GetKind().(*structpb.Value_NullValue); !ok || null {
		return b, nil
	}
	fields := init.GetStructValue()
	if fields == nil {
		return Base{}, fmt.Errorf("knob %q must be a JSON object: %w", KnobContext, session.ErrMalformed)
	}
	if err := b.ApplyContext(&hubpb.ContextUpdate{Set: fields.GetFields()}, nil); err != nil {
		return Base{}, fmt.Errorf("knob %q: %w", KnobContext, err)
	}
	return b, nil
}

// unknownKnob names the first of meta's knobs, in key order, that is not
// known.
func unknownKnob(meta *hubpb.SessionMeta, kind string, known []string) error {
	for _, k := range slices.Sorted(maps.Keys(meta.GetKnobs())) {
		if !slices.Contains(known, k) {
			return fmt.Errorf("%s: unknown knob %q (known: %s): %w", kind, k, strings.Join(known, ", "), session.ErrMalformed)
		}
	}
	return nil
}

// Summary implements part of State.
func (b *Base) Summary() Summary {
	return Summary{Turn: b.Turn, LastSpeaker: b.LastSpeaker, Context: b.Context, ContextReaders: b.ContextReaders,
		Usage: b.Usage, Closing: b.Closing}
}

// CheckOpen returns ErrClosed once a fold has decided the session ends.
func (b *Base) CheckOpen() error {
	if b.Closing != "" {
		return fmt.Errorf("session is closing (%s): %w", b.Closing, session.ErrClosed)
	}
	return nil
}

// ApplyContext deletes, then sets, context variables, keeping each value as
// canonical JSON; readers, when not nil, are the only participants who may
// read the values set (ContextReaders), nil makes them everyone's. It fails
// only on a value session.CheckValue refuses, which an envelope that passed
// session.CheckEnvelope never has.
func (b *Base) ApplyContext(u *hubpb.ContextUpdate, readers []string) error {
	for _, k := range u.GetDelete() {
		delete(b.Context, k)
		delete(b.ContextReaders, k)
	}
	if len(u.GetSet()) == 0 {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(u.GetSet())) {
		v, err := session.ValueJSON(u.GetSet()[k])
		if err != nil {
			return fmt.Errorf("context %q: %w", k, err)
		}
		b.Context[k] = v
		switch {
		case readers != nil && b.ContextReaders == nil:
			b.ContextReaders = map[string][]string{k: readers}
		case readers != nil:
			b.ContextReaders[k] = readers
		default:
			delete(b.ContextReaders, k)
		}
	}
	return nil
}

// ContextReaders returns who may read the context variables env sets: nil
// (everyone) for an envelope without an audience, else its sender and
// audience, sorted and without repeats.
func ContextReaders(env *hubpb.Envelope) []string {
	a := env.GetAudience()
	if a == nil {
		return nil
	}
	out := append([]string{env.GetFrom()}, a.GetNames()...)
	slices.Sort(out)
	return slices.Compact(out)
}

// mustApply applies the context updates of an accepted envelope, readable
// by whoever may read env.
func (b *Base) mustApply(env *hubpb.Envelope, u *hubpb.ContextUpdate) {
	if err := b.ApplyContext(u, ContextReaders(env)); err != nil {
		panic(fmt.Sprintf("adapters: fold of an envelope that was not checked: %v", err))
	}
}

// CountTurn records a substantive envelope: packet context updates first,
// then the speaker, the turn count and usage.
func (b *Base) CountTurn(env *hubpb.Envelope) {
	if p := env.GetPacket(); p != nil {
		b.mustApply(env, p.GetContextUpdates())
		if u := p.GetUsage(); u != nil {
			b.Usage = session.AddUsage(b.Usage, u)
		}
	}
	b.LastSpeaker = env.GetFrom()
	b.Turn++
}

// Aside implements part of State: a turn outside the session type's order
// counts its usage and applies its context updates.
func (b *Base) Aside(env *hubpb.Envelope) {
	if p := env.GetPacket(); p != nil {
		b.mustApply(env, p.GetContextUpdates())
		if u := p.GetUsage(); u != nil {
			b.Usage = session.AddUsage(b.Usage, u)
		}
	}
}

// FoldOther folds the envelopes that are not turns (context sets; the rest
// change nothing an adapter keeps) and reports whether env was one.
func (b *Base) FoldOther(env *hubpb.Envelope) bool {
	if session.IsTurn(env.GetType()) {
		return false
	}
	if u := env.GetContextSet(); u != nil && env.GetType() == session.EventContextSet {
		b.mustApply(env, u)
	}
	if u := env.GetOperatorAction().GetContext(); u != nil && env.GetType() == session.EventOperator {
		b.mustApply(env, u)
	}
	return true
}

// FoldTurn does the part of a fold every session type without a graph
// shares: an envelope that is not a turn folds as such; a turn is counted
// and a finish packet closes the session. done reports whether the fold is
// complete; if not, the caller decides where the turn leads.
func (b *Base) FoldTurn(env *hubpb.Envelope) (out Outcome, done bool) {
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
func CheckRouting(kind string, env *hubpb.Envelope) error {
	switch k := env.GetPacket().GetRouting().GetKind(); k {
	case session.RouteHandoff, session.RouteEscalate, session.RoutePassCaller:
		return fmt.Errorf("%s sessions take no %s routing (only text and finish): %w", kind, k, session.ErrMalformed)
	}
	return nil
}

// FinishReason returns the close reason a finish packet asks for, or "".
func FinishReason(env *hubpb.Envelope) string {
	r := env.GetPacket().GetRouting()
	if r.GetKind() != session.RouteFinish {
		return ""
	}
	if r.GetReason() == "" {
		return session.ReasonFinished
	}
	return r.GetReason()
}
