package feed

import (
	"context"
	"time"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Deadline is one pending timer of a session, as a dashboard shows it.
type Deadline struct {
	// Name is the expectation's ("turn_within", "reply_within",
	// "max_silence", "acks_within"), "answer_within" for a question's,
	// or the reason the session ends with for its TTL ("ttl_expired") and
	// its invite timeout ("invite_timeout").
	Name string `json:"name"`
	// Action is what the timer does: "warn", "notify", "auto_close", or
	// "end" for the TTL and the invite timeout.
	Action string `json:"action"`
	// At is when it falls due; Since the start of the period it measures.
	At    time.Time `json:"at"`
	Since time.Time `json:"since"`
	// Violators are who would break it.
	Violators []string `json:"violators,omitempty"`
	// Question is the question's envelope id, for "answer_within".
	Question string `json:"question,omitempty"`
}

// Deadlines returns a session's pending timers, earliest first: the same
// deadlines the hub's timers act on. Only its participants (or an
// operator) may read them.
func (f *Feed) Deadlines(ctx context.Context, agent string, operator bool, id session.ID) ([]Deadline, error) {
	s, err := f.readable(ctx, agent, operator, id)
	if err != nil {
		return nil, err
	}
	ds, err := f.h.Timers(ctx, s)
	if err != nil {
		return nil, err
	}
	return deadlinesOf(ds, s.Meta().GetExpectations()), nil
}

// deadlinesOf returns a session's deadlines in their dashboard form; exps
// are its expectations.
func deadlinesOf(ds []adapters.Deadline, exps []*hubpb.Expectation) []Deadline {
	out := make([]Deadline, 0, len(ds))
	for _, d := range ds {
		x := Deadline{At: d.At, Since: d.Since, Violators: d.Violators}
		switch {
		case d.Question != nil:
			x.Name, x.Action, x.Question = adapters.AnswerWithin, d.Question.Question.GetOnDeadline(), d.Question.Envelope
		case d.Index >= 0 && d.Index < len(exps):
			x.Name, x.Action = exps[d.Index].GetName(), exps[d.Index].GetAction()
		default:
			x.Name, x.Action = d.End, "end"
		}
		out = append(out, x)
	}
	return out
}
