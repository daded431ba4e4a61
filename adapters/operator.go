package adapters

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// ErrNothingToSteer: an operator action whose object is not there now (no
// held turn to release, no running period of the expectation named); the
// message says what the session has instead.
var ErrNothingToSteer = session.NewError(hubpb.Reason_NOTHING_TO_STEER, "adapters: nothing to steer")

// Steerable is a State whose next speaker an operator may choose, once,
// over its own rule (workflow). Session types without a turn order to
// override do not implement it, and refuse the action.
type Steerable interface {
	// SetNext makes name the one expected to speak next; the session
	// type's rule decides again after name's turn.
	SetNext(name string)
}

// Extension is an operator's extension of one period of an expectation:
// it applies while the period that began at Since runs.
type Extension struct {
	Since time.Time     `json:"since"`
	By    time.Duration `json:"by"`
}

// admitOperator checks an operator action against the session: it is open,
// and the action's object is there (the variables deleted are set, the
// next speaker takes part and may be chosen, a turn is held, the
// expectation named runs).
func (m *Machine) admitOperator(env *hubpb.Envelope) error {
	if m.Lifecycle.State != session.StateOpen {
		return fmt.Errorf("operator actions steer an open session; this one is %v: %w", m.Lifecycle.State, session.ErrNotOpen)
	}
	if err := m.Turns.Validate(env); err != nil {
		return err
	}
	switch x := env.GetOperatorAction().GetAction().(type) {
	case *hubpb.OperatorAction_Context:
		return m.admitContextDelete(x.Context.GetDelete())
	case *hubpb.OperatorAction_NextSpeaker:
		return m.admitNext(x.NextSpeaker)
	case *hubpb.OperatorAction_ReleaseResult:
		if m.Calls.held() == nil {
			return fmt.Errorf("no turn is held in session %s: nothing to release: %w", m.Meta.GetSessionId(), ErrNothingToSteer)
		}
		return nil
	case *hubpb.OperatorAction_Timer:
		_, err := m.runningPeriod(x.Timer.GetName())
		return err
	}
	return nil
}

func (m *Machine) admitContextDelete(keys []string) error {
	ctx := m.Turns.Summary().Context
	for _, k := range keys {
		if _, ok := ctx[k]; !ok {
			return fmt.Errorf("context variable %q is not set, nothing to delete (set: %s): %w",
				k, listOrNone(slices.Sorted(maps.Keys(ctx))), session.ErrMalformed)
		}
	}
	return nil
}

func (m *Machine) admitNext(name string) error {
	if !session.IsParticipant(m.Meta, name) {
		return fmt.Errorf("next speaker %q is not a participant (participants: %s): %w",
			name, strings.Join(session.Names(m.Meta), ", "), session.ErrMalformed)
	}
	if _, ok := m.Turns.(Steerable); !ok {
		return fmt.Errorf("a %s session has no turn order to override; only workflow sessions take a next speaker: %w",
			m.Meta.GetType(), session.ErrMalformed)
	}
	return m.Calls.checkHeld()
}

// runningPeriod returns the index of the expectation named whose period
// runs now, the first such in the metadata's order.
func (m *Machine) runningPeriod(name string) (int, error) {
	var names []string
	found := false
	for i, e := range m.Meta.GetExpectations() {
		names = append(names, e.GetName())
		if e.GetName() != name {
			continue
		}
		found = true
		if _, ok := m.pending(i); ok {
			return i, nil
		}
	}
	if !found {
		return -1, fmt.Errorf("session %s has no expectation %q (its expectations: %s): %w",
			m.Meta.GetSessionId(), name, listOrNone(names), session.ErrMalformed)
	}
	return -1, fmt.Errorf("expectation %q has no running period now (it fired already or does not apply): %w", name, ErrNothingToSteer)
}

// pending returns the start of expectation i's running period, false when
// none runs (it does not apply now, or fired or was cancelled for it).
func (m *Machine) pending(i int) (time.Time, bool) {
	since, _, ok := m.period(m.Meta.GetExpectations()[i])
	if !ok || (i < len(m.Clocks.Fired) && m.Clocks.Fired[i].Equal(since)) {
		return time.Time{}, false
	}
	return since, true
}

// foldOperator folds an operator action's effect on the calls, the clocks
// and the turn order (the context is the session type's, in Base.FoldOther)
// and reports whether it begins a turn.
func (m *Machine) foldOperator(env *hubpb.Envelope) bool {
	switch x := env.GetOperatorAction().GetAction().(type) {
	case *hubpb.OperatorAction_ReleaseResult:
		m.Calls.release()
		m.Clocks.ResumedAt = session.Time(env.GetAcceptedAt()) // the holder's timers count from its release
		return true
	case *hubpb.OperatorAction_NextSpeaker:
		m.Turns.(Steerable).SetNext(x.NextSpeaker)
		m.Clocks.ResumedAt = session.Time(env.GetAcceptedAt()) // the speaker's timers count from now
		return true
	case *hubpb.OperatorAction_Timer:
		m.foldTimer(x.Timer)
	}
	return false
}

// foldTimer extends or cancels the running period of the expectation
// named.
func (m *Machine) foldTimer(t *hubpb.TimerChange) {
	i, err := m.runningPeriod(t.GetName())
	if err != nil {
		return // admitted against this very state: cannot happen
	}
	since, _ := m.pending(i)
	c := &m.Clocks
	if t.GetCancel() {
		c.growFired(len(m.Meta.GetExpectations()))
		c.Fired[i] = since // as if it fired for this period: it does not
		return
	}
	if n := len(m.Meta.GetExpectations()); len(c.Extended) < n {
		c.Extended = append(c.Extended, make([]Extension, n-len(c.Extended))...)
	}
	if !c.Extended[i].Since.Equal(since) {
		c.Extended[i] = Extension{Since: since}
	}
	c.Extended[i].By += session.Duration(t.GetExtend())
}

// extension returns how much expectation i's period that began at since
// was extended.
func (c *Clocks) extension(i int, since time.Time) time.Duration {
	if i < len(c.Extended) && c.Extended[i].Since.Equal(since) {
		return c.Extended[i].By
	}
	return 0
}

func (c *Clocks) growFired(n int) {
	if len(c.Fired) < n {
		c.Fired = append(c.Fired, make([]time.Time, n-len(c.Fired))...)
	}
}

// release ends the held turn as if answered: a question's hold ends its
// question, a blocking delegation's stops waiting (its children stay open,
// their results then grant nothing).
func (c *Calls) release() {
	h := c.held()
	switch {
	case h == nil:
	case h.Kind == HoldQuestion:
		c.close(h.Question)
	default:
		c.Holds = c.Holds[1:]
	}
}
