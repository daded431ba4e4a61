package agentsdk

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hubd/hubd/hubpb"
)

// Event types of the hub (Envelope.Type). Texts and packets are turns;
// context sets are not; the lifecycle types are written by the hub. Any
// other string is a custom type ([Client.SendEvent]): logged and delivered,
// never a turn.
const (
	EventText         = "text"
	EventPacket       = "packet"
	EventContextSet   = "context_set"
	EventInvite       = "session_invite"
	EventInviteAck    = "session_invite_ack"
	EventInviteReject = "session_invite_reject"
	EventOpened       = "session_opened"
	EventClosed       = "session_closed"
	EventExpired      = "session_expired"
	EventViolation    = "expectation_violated"
	EventQuestion     = "question"
	EventAnswer       = "answer"
	EventDelegation   = "delegation_result"
	EventTaskProgress = "task_progress"
)

// Routing kinds of a packet (Routing.Kind).
const (
	RoutingText     = "text"     // the graph decides ("" too)
	RoutingHandoff  = "handoff"  // to Target, or by the graph on Tool
	RoutingFinish   = "finish"   // end the session with Reason
	RoutingEscalate = "escalate" // to the session's supervisor
)

// defaultFinishReason is the hub's close reason of a finish without one.
const defaultFinishReason = "finished"

// Envelope is one entry of a session's log, as delivered or read.
type Envelope struct {
	SessionID string
	Seq       uint64
	ID        string
	// From is the sender; "" for the hub itself.
	From string
	// To lists the recipients when the envelope is addressed (empty: log
	// only); nil means every participant but the sender.
	To   []string
	Type string
	// Text is what a text says, a packet's body, a question's or an
	// answer's text, or a delegation result's summary.
	Text string
	// Packet is a packet's payload, nil for other types.
	Packet *Packet
	// Context is a context_set's update, nil for other types.
	Context *ContextUpdate
	// Reason is why a session closed or expired, why an invite was
	// rejected, or a delegation result's close reason.
	Reason string
	// Invitees are who must acknowledge a session_invite.
	Invitees []string
	// Data is a custom event's payload.
	Data []byte

	CausationID string
	ClientMsgID string
	TraceParent string
	AcceptedAt  time.Time

	// Proto is the envelope as received, for the fields and payloads the
	// SDK type does not carry (questions, answers, the call tree, ...).
	Proto *hubpb.Envelope
}

// IsTurn reports whether the envelope is substantive: a text or a packet.
func (e *Envelope) IsTurn() bool { return e.Type == EventText || e.Type == EventPacket }

// Ends reports whether the envelope ends its session.
func (e *Envelope) Ends() bool { return e.Type == EventClosed || e.Type == EventExpired }

// Delivery is one item of a stream: an envelope, and whether it is now the
// receiver's turn in its session.
type Delivery struct {
	// Envelope is the envelope delivered; for a bare turn notice, the
	// envelope that began the turn (without payload if the receiver may not
	// see it).
	Envelope *Envelope
	// YourTurn: it is now the receiver's turn in Envelope.SessionID, begun
	// by Envelope.
	YourTurn bool
	// Proto is the delivery as received.
	Proto *hubpb.Delivery
}

func deliveryFromPB(d *hubpb.Delivery) Delivery {
	return Delivery{Envelope: envelopeFromPB(d.GetEnvelope()), YourTurn: d.GetYourTurn(), Proto: d}
}

func envelopeFromPB(p *hubpb.Envelope) *Envelope {
	e := &Envelope{SessionID: p.GetSessionId(), Seq: p.GetSeq(), ID: p.GetId(), From: p.GetFrom(), Type: p.GetType(),
		CausationID: p.GetCausationId(), ClientMsgID: p.GetClientMsgId(), TraceParent: p.GetTraceparent(), Proto: p}
	if a := p.GetAudience(); a != nil {
		e.To = append([]string{}, a.GetNames()...)
	}
	if t := p.GetAcceptedAt(); t != nil {
		e.AcceptedAt = t.AsTime()
	}
	switch x := p.GetPayload().(type) {
	case *hubpb.Envelope_Text:
		e.Text = x.Text.GetText()
	case *hubpb.Envelope_Packet:
		e.Packet = packetFromPB(x.Packet)
		e.Text = e.Packet.Body
	case *hubpb.Envelope_ContextSet:
		u := contextFromPB(x.ContextSet)
		e.Context = &u
	case *hubpb.Envelope_Ended:
		e.Reason = x.Ended.GetReason()
	case *hubpb.Envelope_Invite:
		e.Invitees = x.Invite.GetInvitees()
	case *hubpb.Envelope_Custom:
		e.Data = x.Custom
	case *hubpb.Envelope_Question:
		e.Text = x.Question.GetText()
	case *hubpb.Envelope_Answer:
		e.Text = x.Answer.GetText()
	case *hubpb.Envelope_DelegationResult:
		e.Text, e.Reason = x.DelegationResult.GetSummary(), x.DelegationResult.GetReason()
	}
	return e
}

// Packet is one agent round: a body, a routing decision, context updates
// applied before routing, and token usage. Build one with [NewPacket] and
// its methods:
//
//	agentsdk.NewPacket("Over to billing.").Handoff("transfer_to_billing", "", "a refund")
//	agentsdk.NewPacket("Done.").Set("approved", true).Finish("approved", "shipped")
type Packet struct {
	Body    string
	Routing Routing
	Context ContextUpdate
	Usage   Usage
}

// Routing is a packet's routing decision.
type Routing struct {
	// Kind is RoutingText (or ""), RoutingHandoff, RoutingFinish or
	// RoutingEscalate.
	Kind string
	// Tool is the tool that routed (tool_called conditions match it).
	Tool string
	// Target is a handoff's target agent; "" lets the graph decide on Tool.
	Target string
	// Reason is a finish's close reason or an escalation's reason.
	Reason string
	// Summary is a finish's summary.
	Summary string
}

// ContextUpdate deletes, then sets, session context variables.
type ContextUpdate struct {
	// Set maps variables to values: any Go value, encoded as JSON when
	// sent. Values received from the hub are json.RawMessage.
	Set map[string]any
	// Delete lists variables to delete.
	Delete []string
}

// Usage is the token usage of a round, summed per session by the hub.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
	CostUSD      float64
}

// NewPacket returns a packet with body and text routing (the graph
// decides).
func NewPacket(body string) *Packet { return &Packet{Body: body} }

// Handoff routes the turn by tool (tool_called rules see it) and/or
// directly to target; at least one must be set. It returns p.
func (p *Packet) Handoff(tool, target, reason string) *Packet {
	p.Routing = Routing{Kind: RoutingHandoff, Tool: tool, Target: target, Reason: reason}
	return p
}

// Finish ends the session with reason ("" is "finished") and summary. It
// returns p.
func (p *Packet) Finish(reason, summary string) *Packet {
	if reason == "" {
		reason = defaultFinishReason
	}
	p.Routing = Routing{Kind: RoutingFinish, Reason: reason, Summary: summary}
	return p
}

// Escalate hands the turn to the session's supervisor with reason. It
// returns p.
func (p *Packet) Escalate(reason string) *Packet {
	p.Routing = Routing{Kind: RoutingEscalate, Reason: reason}
	return p
}

// Set sets context variable key to value (any Go value, encoded as JSON
// when sent) before the packet is routed, so a rule evaluated on this turn
// sees it. It returns p.
func (p *Packet) Set(key string, value any) *Packet {
	if p.Context.Set == nil {
		p.Context.Set = map[string]any{}
	}
	p.Context.Set[key] = value
	return p
}

// Delete deletes context variables before the packet is routed. It returns
// p.
func (p *Packet) Delete(keys ...string) *Packet {
	p.Context.Delete = append(p.Context.Delete, keys...)
	return p
}

// WithUsage records the round's token usage. It returns p.
func (p *Packet) WithUsage(u Usage) *Packet {
	p.Usage = u
	return p
}

func (p *Packet) toPB() (*hubpb.Packet, error) {
	out := &hubpb.Packet{Body: p.Body}
	if p.Routing != (Routing{}) {
		r := p.Routing
		out.Routing = &hubpb.Routing{Kind: r.Kind, Tool: r.Tool, Target: r.Target, Reason: r.Reason, Summary: r.Summary}
	}
	if len(p.Context.Set) > 0 || len(p.Context.Delete) > 0 {
		c, err := p.Context.toPB()
		if err != nil {
			return nil, err
		}
		out.ContextUpdates = c
	}
	if p.Usage != (Usage{}) {
		out.Usage = &hubpb.Usage{InputTokens: p.Usage.InputTokens, OutputTokens: p.Usage.OutputTokens, CostUsd: p.Usage.CostUSD}
	}
	return out, nil
}

func packetFromPB(p *hubpb.Packet) *Packet {
	r := p.GetRouting()
	out := &Packet{Body: p.GetBody(),
		Routing: Routing{Kind: r.GetKind(), Tool: r.GetTool(), Target: r.GetTarget(), Reason: r.GetReason(), Summary: r.GetSummary()},
		Usage:   Usage{InputTokens: p.GetUsage().GetInputTokens(), OutputTokens: p.GetUsage().GetOutputTokens(), CostUSD: p.GetUsage().GetCostUsd()}}
	if c := p.GetContextUpdates(); c != nil {
		out.Context = contextFromPB(c)
	}
	return out
}

func (u ContextUpdate) toPB() (*hubpb.ContextUpdate, error) {
	out := &hubpb.ContextUpdate{Delete: u.Delete}
	if len(u.Set) > 0 {
		out.Set = make(map[string]string, len(u.Set))
	}
	for _, k := range slices.Sorted(maps.Keys(u.Set)) {
		b, err := json.Marshal(u.Set[k])
		if err != nil {
			return nil, fmt.Errorf("agentsdk: context variable %q: %w", k, err)
		}
		out.Set[k] = string(b)
	}
	return out, nil
}

func contextFromPB(c *hubpb.ContextUpdate) ContextUpdate {
	u := ContextUpdate{Delete: c.GetDelete()}
	if len(c.GetSet()) > 0 {
		u.Set = make(map[string]any, len(c.GetSet()))
		for k, v := range c.GetSet() {
			u.Set[k] = json.RawMessage(v)
		}
	}
	return u
}
