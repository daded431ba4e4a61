package session

import (
	"encoding/json"
	"time"
)

// Payload is the typed data of an envelope. The concrete types are the ones
// in this file; an envelope's payload matches its [EventType] (see
// [Envelope.Check]). Types without data (invite acks, opened) have a nil
// payload.
type Payload interface {
	isPayload()
}

// Text is the payload of [EventText].
type Text struct {
	Text string `json:"text"`
}

// Packet is the payload of [EventPacket]: one agent round, with the routing
// decision it made, context updates applied before routing, and token usage.
type Packet struct {
	Body    string        `json:"body,omitempty"`
	Routing Routing       `json:"routing,omitzero"`
	Context ContextUpdate `json:"context_updates,omitzero"`
	Usage   Usage         `json:"usage,omitzero"`
}

// RoutingKind says what a packet asks of the session's routing.
type RoutingKind string

// The routing kinds of a packet.
const (
	// RouteText: a plain turn; the graph decides who is next.
	RouteText RoutingKind = "text"
	// RouteHandoff: with a target, go there directly; without, the graph
	// decides, and tool_called conditions see Tool.
	RouteHandoff RoutingKind = "handoff"
	// RouteFinish: terminate the session with Reason (default "finished").
	RouteFinish RoutingKind = "finish"
	// RouteEscalate: the sender asks the session's supervisor for help.
	RouteEscalate RoutingKind = "escalate"
)

// Routing is a packet's routing decision. The zero value is a plain text
// turn.
type Routing struct {
	Kind    RoutingKind `json:"kind,omitempty"`
	Tool    string      `json:"tool,omitempty"`
	Target  string      `json:"target,omitempty"`
	Reason  string      `json:"reason,omitempty"`
	Summary string      `json:"summary,omitempty"`
}

// ContextUpdate deletes, then sets, session context variables. It is the
// payload of [EventContextSet] and the context_updates of a [Packet].
// Values are canonical JSON (see [CanonicalJSON]).
type ContextUpdate struct {
	Set    map[string]json.RawMessage `json:"set,omitempty"`
	Delete []string                   `json:"delete,omitempty"`
}

// Empty reports whether u changes nothing.
func (u ContextUpdate) Empty() bool { return len(u.Set) == 0 && len(u.Delete) == 0 }

// Usage is the token usage and cost of one round, summed per session and per
// delegation tree.
type Usage struct {
	InputTokens  int64   `json:"input_tokens,omitempty"`
	OutputTokens int64   `json:"output_tokens,omitempty"`
	CostUSD      float64 `json:"cost_usd,omitempty"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.InputTokens + v.InputTokens, u.OutputTokens + v.OutputTokens, u.CostUSD + v.CostUSD}
}

// Invite is the payload of [EventInvite]: who must acknowledge before the
// session opens.
type Invite struct {
	Invitees []string `json:"invitees"`
}

// Ended is the payload of [EventInviteReject], [EventClosed] and
// [EventExpired]: the stable reason.
type Ended struct {
	Reason string `json:"reason"`
}

// Violation is the payload of [EventViolation]: an expectation that was not
// met. Index and Since identify the expectation and the period it fired
// for, so folding the log knows it fired and never fires it twice.
type Violation struct {
	Expectation string    `json:"expectation"`
	Index       int       `json:"index"`
	Action      Action    `json:"action"`
	Since       time.Time `json:"since"`
	Violators   []string  `json:"violators,omitempty"`
	Detail      string    `json:"detail,omitempty"`
}

// Question asks a person (or an agent) to choose among options or answer in
// words. The session waits for the answer.
type Question struct {
	QuestionID string   `json:"question_id"`
	Text       string   `json:"text"`
	Options    []Option `json:"options,omitempty"`
}

// Option is one choice of a [Question].
type Option struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// Answer answers a [Question] with option ids or free text.
type Answer struct {
	QuestionID string   `json:"question_id"`
	OptionIDs  []string `json:"option_ids,omitempty"`
	Text       string   `json:"text,omitempty"`
}

// DelegationResult is a child session's outcome posted into its parent.
type DelegationResult struct {
	Child   ID     `json:"child"`
	Reason  string `json:"reason"`
	Summary string `json:"summary,omitempty"`
}

// TaskProgress reports progress of a long-running task.
type TaskProgress struct {
	Task    string  `json:"task"`
	Percent float64 `json:"percent,omitempty"`
	Detail  string  `json:"detail,omitempty"`
}

// Custom is the payload of any application event type: opaque bytes carried
// as they came.
type Custom struct {
	Data []byte `json:"data,omitempty"`
}

func (Text) isPayload()             {}
func (Packet) isPayload()           {}
func (ContextUpdate) isPayload()    {}
func (Invite) isPayload()           {}
func (Ended) isPayload()            {}
func (Violation) isPayload()        {}
func (Question) isPayload()         {}
func (Answer) isPayload()           {}
func (DelegationResult) isPayload() {}
func (TaskProgress) isPayload()     {}
func (Custom) isPayload()           {}
