package adapters

import (
	"encoding/json"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// DryRun drives a Machine without a hub or a log: each envelope is tried
// against the session as it stands, folded if accepted, and the close a fold
// decides is folded too. It is what `hubd graph simulate` and the scenario
// tests run. The session starts open (no invites), so the first accepted
// envelope has seq 1.
type DryRun struct {
	M *Machine
	// Accepted holds every envelope folded so far, closing envelopes
	// included, for replay checks.
	Accepted []*hubpb.Envelope
	epoch    time.Time
}

// NewDryRun starts an open session of the adapter's type.
func NewDryRun(a Adapter, meta *hubpb.SessionMeta) (*DryRun, error) {
	m, err := NewMachine(a, meta)
	if err != nil {
		return nil, err
	}
	epoch := session.Time(meta.GetCreatedAt())
	m.Lifecycle = session.Lifecycle{State: session.StateOpen, Created: epoch, Opened: epoch}
	return &DryRun{M: m, epoch: epoch}, nil
}

// Step is the result of trying one envelope.
type Step struct {
	Seq      uint64
	Accepted bool
	Next     []string // who is expected next; empty once nobody is
	Turn     int
	Closed   bool
	Reason   string // the close reason when Closed
	Fired    string // the rule that decided (Outcome.Rule)
	Context  map[string]json.RawMessage
	Code     string // the stable reason of a rejection
	Err      error  // the rejection
}

// Try stamps a copy of env (session, seq, time) and admits and folds it, or
// reports why not. The sender is taken from env.from as given; an event
// type in its protocol spelling ("EV_TEXT") is taken in its stored form.
func (d *DryRun) Try(env *hubpb.Envelope) Step {
	m := d.M
	e := proto.Clone(env).(*hubpb.Envelope)
	e.SessionId, e.Seq = m.Meta.GetSessionId(), m.Seq+1
	e.AcceptedAt = session.Stamp(d.epoch.Add(time.Duration(e.Seq) * time.Second))
	if t, err := session.ParseEventType(e.GetType()); err == nil {
		e.Type = t
	}
	if err := m.Admit(e); err != nil {
		code, ok := session.ReasonOf(err)
		if !ok {
			code = hubpb.Reason_INTERNAL
		}
		return Step{Code: code.String(), Err: err}
	}
	all, out := m.Apply(e)
	d.Accepted = append(d.Accepted, all...)
	step := Step{Seq: e.Seq, Accepted: true, Fired: out.Rule}
	sum := m.Turns.Summary()
	step.Next, step.Turn, step.Context = m.Expected(), sum.Turn, sum.Context
	step.Closed, step.Reason = m.Lifecycle.State.Ended(), m.Lifecycle.Reason
	return step
}

// MarshalJSON writes an accepted step as
// {"seq":1,"accepted":true,"next":"b","turn":1,"closed":false,"reason":"","fired":"...","context":{}}
// ("next" is null once nobody is expected; several expected speakers are a
// list) and a rejected one as {"accepted":false,"code":"OUT_OF_TURN","error":"..."}.
func (s Step) MarshalJSON() ([]byte, error) {
	if !s.Accepted {
		msg := ""
		if s.Err != nil {
			msg = session.Detail(s.Err)
		}
		return json.Marshal(struct {
			Accepted bool   `json:"accepted"`
			Code     string `json:"code"`
			Error    string `json:"error"`
		}{false, s.Code, msg})
	}
	var next any
	switch len(s.Next) {
	case 0:
	case 1:
		next = s.Next[0]
	default:
		next = s.Next
	}
	ctx := s.Context
	if ctx == nil {
		ctx = map[string]json.RawMessage{}
	}
	return json.Marshal(struct {
		Seq      uint64                     `json:"seq"`
		Accepted bool                       `json:"accepted"`
		Next     any                        `json:"next"`
		Turn     int                        `json:"turn"`
		Closed   bool                       `json:"closed"`
		Reason   string                     `json:"reason"`
		Fired    string                     `json:"fired"`
		Context  map[string]json.RawMessage `json:"context"`
	}{s.Seq, true, next, s.Turn, s.Closed, s.Reason, s.Fired, ctx})
}

// Replay folds the accepted envelopes into a new machine of the same
// session and returns it; it equals the live one (compare MarshalJSON).
func (d *DryRun) Replay(a Adapter) (*Machine, error) {
	m, err := NewMachine(a, d.M.Meta)
	if err != nil {
		return nil, err
	}
	m.Lifecycle = session.Lifecycle{State: session.StateOpen, Created: d.epoch, Opened: d.epoch}
	for _, e := range d.Accepted {
		m.Fold(e)
	}
	return m, nil
}
