package adapters

import (
	"fmt"
	"strings"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Resumer is a session type's state that a fork can resume: the fork's
// first record reopens a state that may have been closing and may choose
// who speaks next. Base implements it for every session type; a type
// that takes a chosen next speaker overrides it (workflow).
type Resumer interface {
	// CheckNext reports whether next may be chosen to speak next; "" (keep
	// who the state expects) is always valid.
	CheckNext(next string) error
	// Resume reopens the state with next ("" keeps the expected speaker).
	// It is called only with a next CheckNext accepted.
	Resume(next string)
}

// CheckNext implements Resumer: a session type without a speaker order
// takes no chosen next speaker.
func (b *Base) CheckNext(next string) error {
	if next != "" {
		return fmt.Errorf("this session type has no speaker order to choose the next speaker of: leave next_speaker empty: %w", session.ErrMalformed)
	}
	return nil
}

// Resume implements Resumer: an end a fold had decided is forgotten.
func (b *Base) Resume(string) { b.Closing = "" }

// Fork returns the machine of a fork before its first record: the session
// type's state of src (the source's machine folded up to the fork's seq,
// which Fork consumes) under the fork's metadata, at seq 0, with nothing
// held, asked, delegated or granted and no lifecycle yet. The fork record
// (session_forked) folded next opens it; see Machine.Fold.
func Fork(src *Machine, meta *hubpb.SessionMeta) *Machine {
	return &Machine{Meta: meta, Turns: src.Turns, Calls: Calls{Responder: meta.GetResponder()}}
}

// admitFork checks a fork record: the first of its session, written by the
// hub, naming a participant as the next speaker, with valid context edits.
func (m *Machine) admitFork(env *hubpb.Envelope) error {
	if m.Seq != 0 || m.Lifecycle.State != 0 {
		return fmt.Errorf("a fork record at seq %d: it can only be a fork's first: %w", m.Seq+1, session.ErrBadTransition)
	}
	if err := session.CheckEnvelope(env); err != nil {
		return err
	}
	next := env.GetFork().GetNextSpeaker()
	if next != "" && !session.IsParticipant(m.Meta, next) {
		return fmt.Errorf("next_speaker %q is not a participant (participants: %s): %w",
			next, strings.Join(session.Names(m.Meta), ", "), session.ErrMalformed)
	}
	if r, ok := m.Turns.(Resumer); ok {
		return r.CheckNext(next)
	}
	if next != "" {
		return fmt.Errorf("session type %s takes no chosen next speaker: %w", m.Meta.GetType(), session.ErrMalformed)
	}
	return nil
}

// foldFork folds a fork record: the session opens, the state resumes
// with the chosen next speaker, the context edits apply (deletes, then
// sets, visible to everyone), and a turn begins.
func (m *Machine) foldFork(env *hubpb.Envelope) Outcome {
	f := env.GetFork()
	m.Lifecycle.Fold(env)
	m.Clocks.LastTurnAt = session.Time(env.GetAcceptedAt())
	if r, ok := m.Turns.(Resumer); ok {
		r.Resume(f.GetNextSpeaker())
	}
	if u := f.GetContext(); len(u.GetSet()) > 0 || len(u.GetDelete()) > 0 {
		m.Turns.Fold(&hubpb.Envelope{SessionId: env.GetSessionId(), Seq: env.GetSeq(), Type: session.EventContextSet,
			AcceptedAt: env.GetAcceptedAt(), Payload: &hubpb.Envelope_ContextSet{ContextSet: u}})
	}
	return Outcome{Begins: true, Rule: forkRule(f)}
}

// forkRule says where a fork came from, as the rule of its first record.
func forkRule(f *hubpb.Fork) string {
	r := fmt.Sprintf("fork of %s at seq %d", f.GetOrigin().GetSessionId(), f.GetOrigin().GetAtSeq())
	if n := f.GetNextSpeaker(); n != "" {
		r += " → " + n
	}
	return r
}
