package agentsdk

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
)

// Event types of the hub (hubpb.Envelope.Type). Texts and packets are
// turns; context sets are not; the lifecycle types are written by the hub.
// Any other string is a custom type ([Client.SendEvent]): logged and
// delivered, never a turn.
const (
	EventText             = "text"
	EventPacket           = "packet"
	EventContextSet       = "context_set"
	EventInvite           = "session_invite"
	EventInviteAck        = "session_invite_ack"
	EventInviteReject     = "session_invite_reject"
	EventOpened           = "session_opened"
	EventClosed           = "session_closed"
	EventExpired          = "session_expired"
	EventViolation        = "expectation_violated"
	EventQuestion         = "question"
	EventAnswer           = "answer"
	EventQuestionClosed   = "question_closed"   // a question withdrawn, by the hub
	EventDelegation       = "delegation"        // children opened, by the hub
	EventDelegationResult = "delegation_result" // a child's result, by the hub
	EventTaskProgress     = "task_progress"
	EventToolCall         = "tool_call"       // a tool an agent called (not a turn)
	EventToolResult       = "tool_result"     // what the tool returned (not a turn)
	EventMessage          = "message"         // a note for a session's next speaker (not a turn)
	EventForked           = "session_forked"  // a fork's first record, by the hub (Envelope.fork)
	EventOperator         = "operator_action" // an operator's hand on the session, by the hub (not a turn)
)

// Routing kinds of a packet (hubpb.Routing.Kind).
const (
	RoutingText     = "text"     // the graph decides ("" too)
	RoutingHandoff  = "handoff"  // to Target, or by the graph on Tool
	RoutingFinish   = "finish"   // end the session with Reason
	RoutingEscalate = "escalate" // to the session's supervisor
	// RoutingPassCaller hands the turn and the duty to answer the
	// session's caller to Target.
	RoutingPassCaller = "pass_caller"
)

// defaultFinishReason is the hub's close reason of a finish without one.
const defaultFinishReason = "finished"

// The SDK works on the hub's own messages (package hubpb): envelopes,
// deliveries, views and session info are the generated types, read with
// their getters; the aliases below name the common ones without importing
// hubpb, and the functions and builders make the common cases short.
type (
	// Envelope is one entry of a session's log (hubpb.Envelope).
	Envelope = hubpb.Envelope
	// Delivery is one item of a stream: an envelope, and whether it is now
	// the receiver's turn (hubpb.Delivery).
	Delivery = hubpb.Delivery
	// View is the transcript of a session the caller may see
	// (hubpb.View).
	View = hubpb.View
	// Usage is the token usage and cost of a round (hubpb.Usage).
	Usage = hubpb.Usage
)

// CloseReason returns why a session_closed or session_expired envelope
// ended its session (the reason of its ended payload), "" for any other.
func CloseReason(e *hubpb.Envelope) string {
	if !Ends(e) {
		return ""
	}
	return e.GetEnded().GetReason()
}

// TextOf returns what an envelope says in words: a text's text, a packet's
// body, a question's or an answer's text, a delegation result's summary;
// "" for anything else.
func TextOf(e *hubpb.Envelope) string {
	switch p := e.GetPayload().(type) {
	case *hubpb.Envelope_Text:
		return p.Text.GetText()
	case *hubpb.Envelope_Packet:
		return p.Packet.GetBody()
	case *hubpb.Envelope_Question:
		return p.Question.GetText()
	case *hubpb.Envelope_Answer:
		return p.Answer.GetText()
	case *hubpb.Envelope_DelegationResult:
		return p.DelegationResult.GetSummary()
	}
	return ""
}

// IsTurn reports whether an envelope is substantive: a text or a packet.
func IsTurn(e *hubpb.Envelope) bool {
	return e.GetType() == EventText || e.GetType() == EventPacket
}

// Ends reports whether an envelope ends its session (closed or expired).
func Ends(e *hubpb.Envelope) bool {
	return e.GetType() == EventClosed || e.GetType() == EventExpired
}

// Value returns the stored form of a Go value (anything encoding/json
// encodes): how context variables and knobs travel.
func Value(v any) (*structpb.Value, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := &structpb.Value{}
	if err := protojson.Unmarshal(b, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Decode decodes a stored value (a context variable, a knob) into v, as
// encoding/json would decode its JSON.
func Decode(val *structpb.Value, v any) error {
	b, err := protojson.Marshal(val)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// values returns the stored form of a map of Go values.
func values(what string, m map[string]any) (map[string]*structpb.Value, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[string]*structpb.Value, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v, err := Value(m[k])
		if err != nil {
			return nil, fmt.Errorf("agentsdk: %s %q: %w", what, k, err)
		}
		out[k] = v
	}
	return out, nil
}

// Packet builds one agent round: a body, a routing decision, context
// updates applied before routing, and token usage. Build one with
// [NewPacket] and its methods:
//
//	agentsdk.NewPacket("Over to billing.").Handoff("transfer_to_billing", "", "a refund")
//	agentsdk.NewPacket("Done.").Set("approved", true).Finish("approved", "shipped")
type Packet struct {
	pb  *hubpb.Packet
	set map[string]any
}

// NewPacket returns a packet with body and text routing (the graph
// decides).
func NewPacket(body string) *Packet { return &Packet{pb: &hubpb.Packet{Body: body}} }

// Handoff routes the turn by tool (tool_called rules see it) and/or
// directly to target; at least one must be set. It returns p.
func (p *Packet) Handoff(tool, target, reason string) *Packet {
	p.pb.Routing = &hubpb.Routing{Kind: RoutingHandoff, Tool: tool, Target: target, Reason: reason}
	return p
}

// Finish ends the session with reason ("" is "finished") and summary. It
// returns p.
func (p *Packet) Finish(reason, summary string) *Packet {
	if reason == "" {
		reason = defaultFinishReason
	}
	p.pb.Routing = &hubpb.Routing{Kind: RoutingFinish, Reason: reason, Summary: summary}
	return p
}

// PassCaller hands the turn, and the duty to answer this child session's
// caller, to target, another participant: its finish closes the session
// and answers the parent. It returns p.
func (p *Packet) PassCaller(target string) *Packet {
	p.pb.Routing = &hubpb.Routing{Kind: RoutingPassCaller, Target: target}
	return p
}

// Escalate hands the turn to the session's supervisor with reason. It
// returns p.
func (p *Packet) Escalate(reason string) *Packet {
	p.pb.Routing = &hubpb.Routing{Kind: RoutingEscalate, Reason: reason}
	return p
}

// Set sets context variable key to value (any Go value encoding/json
// encodes) before the packet is routed, so a rule evaluated on this turn
// sees it. It returns p.
func (p *Packet) Set(key string, value any) *Packet {
	if p.set == nil {
		p.set = map[string]any{}
	}
	p.set[key] = value
	return p
}

// Delete deletes context variables before the packet is routed. It returns
// p.
func (p *Packet) Delete(keys ...string) *Packet {
	if p.pb.ContextUpdates == nil {
		p.pb.ContextUpdates = &hubpb.ContextUpdate{}
	}
	p.pb.ContextUpdates.Delete = append(p.pb.ContextUpdates.Delete, keys...)
	return p
}

// WithUsage records the round's token usage and cost. It returns p.
func (p *Packet) WithUsage(u *hubpb.Usage) *Packet {
	p.pb.Usage = protoClone(u)
	return p
}

// Proto returns the packet as the hub's message, or the error of a context
// value that does not encode.
func (p *Packet) Proto() (*hubpb.Packet, error) {
	set, err := values("context variable", p.set)
	if err != nil {
		return nil, err
	}
	out := protoClone(p.pb)
	if set != nil {
		if out.ContextUpdates == nil {
			out.ContextUpdates = &hubpb.ContextUpdate{}
		}
		out.ContextUpdates.Set = set
	}
	return out, nil
}

// ContextUpdate deletes, then sets, session context variables.
type ContextUpdate struct {
	// Set maps variables to values: any Go value encoding/json encodes.
	Set map[string]any
	// Delete lists variables to delete.
	Delete []string
}

// Proto returns the update as the hub's message.
func (u ContextUpdate) Proto() (*hubpb.ContextUpdate, error) {
	set, err := values("context variable", u.Set)
	if err != nil {
		return nil, err
	}
	return &hubpb.ContextUpdate{Set: set, Delete: slices.Clone(u.Delete)}, nil
}
