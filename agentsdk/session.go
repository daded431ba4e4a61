package agentsdk

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hubd/hubd/hubpb"
)

// Session types served by a stock hub ("kind@version").
const (
	TypeWorkflow     = "workflow@1"     // a transition graph picks the next speaker
	TypeConversation = "conversation@1" // two participants, free turns
	TypeDiscussion   = "discussion@1"   // strict round robin from the creator
	TypeConsulting   = "consulting@1"   // a question, then its answer
)

// State is a session's lifecycle state.
type State string

// The lifecycle states: PENDING until every invitee has acknowledged, then
// OPEN, then CLOSED or EXPIRED.
const (
	StatePending State = "PENDING"
	StateOpen    State = "OPEN"
	StateClosed  State = "CLOSED"
	StateExpired State = "EXPIRED"
)

// Ended reports whether the session is over.
func (s State) Ended() bool { return s == StateClosed || s == StateExpired }

// Participant is one member of a session.
type Participant struct {
	Name string
	// Role describes the member ("creator", "member", "human", ...).
	Role string
	// AutoAccept counts the member as acknowledged at open: it needs no
	// AckInvite.
	AutoAccept bool
}

// Invited returns participants who must acknowledge their invite, one per
// name.
func Invited(names ...string) []Participant {
	out := make([]Participant, len(names))
	for i, n := range names {
		out[i] = Participant{Name: n}
	}
	return out
}

// AutoAccepted returns participants who need not acknowledge, one per name.
func AutoAccepted(names ...string) []Participant {
	out := make([]Participant, len(names))
	for i, n := range names {
		out[i] = Participant{Name: n, AutoAccept: true}
	}
	return out
}

// Expectation is one timer of a session.
type Expectation struct {
	// Name is "turn_within", "reply_within", "max_silence" or
	// "acks_within".
	Name string
	// Within is the threshold.
	Within time.Duration
	// Action is "warn", "notify" or "auto_close".
	Action string
}

// OpenOptions describe a new session. The caller is its creator and first
// participant.
type OpenOptions struct {
	// Type is the session type, "kind@version"; default TypeWorkflow.
	Type string
	// Participants in session order; the caller is added first when
	// missing.
	Participants []Participant
	// Graph is a workflow session's transition graph.
	Graph *Graph
	// Knobs are other settings of the session type, each encoded as JSON:
	// "max_handoffs": 3, "supervisor": "lead", "context": map[string]any{...}.
	Knobs map[string]any
	// Labels are for listing.
	Labels map[string]string
	// TTL is the session's lifetime; 0 means none.
	TTL time.Duration
	// InviteTimeout is how long invitees have to acknowledge; 0 means the
	// hub's default.
	InviteTimeout time.Duration
	// Expectations replace the session type's default timers; nil keeps
	// the defaults, an empty non-nil slice means none.
	Expectations []Expectation
	// Parent makes this a child of a session the caller takes part in.
	Parent string
	// IdempotencyKey makes the open idempotent: the same caller and key
	// return the same session (SessionInfo.Existing).
	IdempotencyKey string
}

// SessionInfo is a session's metadata and state.
type SessionInfo struct {
	ID           string
	Type         string
	Creator      string
	Participants []Participant
	State        State
	// CloseReason is why the session ended, once it has.
	CloseReason string
	// Seq is the last seq of its log.
	Seq uint64
	// Turn is how many turns were taken.
	Turn int64
	// Expected are who is expected to speak next.
	Expected []string
	// Context maps context variables to their JSON values.
	Context map[string]json.RawMessage
	// Usage is summed over the session.
	Usage Usage
	// LastRule is the rule that decided the last turn.
	LastRule     string
	Labels       map[string]string
	Knobs        map[string]json.RawMessage
	Expectations []Expectation
	CreatedAt    time.Time
	TTL          time.Duration
	ParentID     string
	RootID       string
	Depth        int
	// Existing is set by Open when an earlier open with the same
	// idempotency key made the session.
	Existing bool
	// Proto is the info as received.
	Proto *hubpb.SessionInfo
}

// Var decodes context variable key into v (a pointer), and reports whether
// the variable is set.
func (s *SessionInfo) Var(key string, v any) (bool, error) {
	raw, ok := s.Context[key]
	if !ok {
		return false, nil
	}
	return true, json.Unmarshal(raw, v)
}

func infoFromPB(p *hubpb.SessionInfo) *SessionInfo {
	s := &SessionInfo{ID: p.GetSessionId(), Type: p.GetType(), Creator: p.GetCreator(), State: State(p.GetState()),
		CloseReason: p.GetCloseReason(), Seq: p.GetSeq(), Turn: p.GetTurn(), Expected: p.GetExpected(), LastRule: p.GetLastRule(),
		Labels: p.GetLabels(), ParentID: p.GetParentSessionId(), RootID: p.GetRootSessionId(), Depth: int(p.GetDepth()), Proto: p,
		Usage: Usage{InputTokens: p.GetUsage().GetInputTokens(), OutputTokens: p.GetUsage().GetOutputTokens(), CostUSD: p.GetUsage().GetCostUsd()}}
	for _, x := range p.GetParticipants() {
		s.Participants = append(s.Participants, Participant{Name: x.GetName(), Role: x.GetRole(), AutoAccept: x.GetAutoAccept()})
	}
	s.Context = rawMap(p.GetContext())
	s.Knobs = rawMap(p.GetKnobs())
	for _, e := range p.GetExpectations() {
		s.Expectations = append(s.Expectations, Expectation{Name: e.GetName(), Action: e.GetAction(),
			Within: time.Duration(e.GetSeconds() * float64(time.Second))})
	}
	if t := p.GetCreatedAt(); t != nil {
		s.CreatedAt = t.AsTime()
	}
	if d := p.GetTtl(); d != nil {
		s.TTL = d.AsDuration()
	}
	return s
}

func rawMap(m map[string]string) map[string]json.RawMessage {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = json.RawMessage(v)
	}
	return out
}

func (o OpenOptions) toPB() (*hubpb.OpenRequest, error) {
	req := &hubpb.OpenRequest{Type: o.Type, Labels: o.Labels, ParentSessionId: o.Parent, IdempotencyKey: o.IdempotencyKey}
	if req.Type == "" {
		req.Type = TypeWorkflow
	}
	for _, p := range o.Participants {
		req.Participants = append(req.Participants, &hubpb.Participant{Name: p.Name, Role: p.Role, AutoAccept: p.AutoAccept})
	}
	if o.Graph != nil {
		g, err := o.Graph.JSON()
		if err != nil {
			return nil, fmt.Errorf("agentsdk: graph: %w", err)
		}
		req.GraphJson = g
	}
	if len(o.Knobs) > 0 {
		req.Knobs = make(map[string]string, len(o.Knobs))
	}
	for _, k := range slices.Sorted(maps.Keys(o.Knobs)) {
		b, err := json.Marshal(o.Knobs[k])
		if err != nil {
			return nil, fmt.Errorf("agentsdk: knob %q: %w", k, err)
		}
		req.Knobs[k] = string(b)
	}
	if o.TTL > 0 {
		req.Ttl = durationpb.New(o.TTL)
	}
	if o.InviteTimeout > 0 {
		req.InviteTimeout = durationpb.New(o.InviteTimeout)
	}
	if o.Expectations != nil {
		req.Expectations = &hubpb.Expectations{Items: []*hubpb.Expectation{}}
		for _, e := range o.Expectations {
			req.Expectations.Items = append(req.Expectations.Items, &hubpb.Expectation{Name: e.Name, Seconds: e.Within.Seconds(), Action: e.Action})
		}
	}
	return req, nil
}

// Open creates a session. It is logged with its invite; it opens once every
// participant not marked AutoAccept has acknowledged (at once when none
// must), and the first speaker is then told it is its turn.
func (c *Client) Open(ctx context.Context, opts OpenOptions) (*SessionInfo, error) {
	req, err := opts.toPB()
	if err != nil {
		return nil, err
	}
	resp, err := c.rpc.Open(ctx, req)
	if err != nil {
		return nil, wrapErr("open", err)
	}
	info := infoFromPB(resp.GetSession())
	info.Existing = resp.GetExisting()
	return info, nil
}

// OpenWorkflow opens a workflow session following g with the caller as
// creator and the named participants invited, in that order; each must
// acknowledge (an agent running [Client.Serve] does so by default).
func (c *Client) OpenWorkflow(ctx context.Context, g *Graph, participants ...string) (*SessionInfo, error) {
	return c.Open(ctx, OpenOptions{Type: TypeWorkflow, Graph: g, Participants: Invited(participants...)})
}

// GetSession returns a session's metadata and current state. Only its
// participants (or an operator) may read it.
func (c *Client) GetSession(ctx context.Context, sessionID string) (*SessionInfo, error) {
	resp, err := c.rpc.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: sessionID})
	if err != nil {
		return nil, wrapErr("get session", err)
	}
	return infoFromPB(resp), nil
}

// ListOptions filter ListSessions. Zero fields match everything.
type ListOptions struct {
	State       State
	Creator     string
	Participant string
	// Labels must all match.
	Labels map[string]string
	// PageToken continues a listing (the next page token of the last one).
	PageToken string
	// PageSize is at most 1000; 0 is the hub's default (100).
	PageSize int
}

// ListSessions lists the sessions the caller takes part in (all, for an
// operator), oldest first, with only their metadata and state filled in.
// next is the page token of the next page, "" after the last.
func (c *Client) ListSessions(ctx context.Context, opts ListOptions) (sessions []*SessionInfo, next string, err error) {
	resp, err := c.rpc.ListSessions(ctx, &hubpb.ListSessionsRequest{State: string(opts.State), Creator: opts.Creator,
		Participant: opts.Participant, Labels: opts.Labels, PageToken: opts.PageToken, PageSize: int32(opts.PageSize)})
	if err != nil {
		return nil, "", wrapErr("list sessions", err)
	}
	for _, s := range resp.GetSessions() {
		sessions = append(sessions, infoFromPB(s))
	}
	return sessions, resp.GetNextPageToken(), nil
}

// AckInvite accepts the caller's invite to a session; the last ack opens
// it.
func (c *Client) AckInvite(ctx context.Context, sessionID string) (Ack, error) {
	resp, err := c.rpc.AckInvite(ctx, &hubpb.InviteRequest{SessionId: sessionID})
	if err != nil {
		return Ack{}, wrapErr("ack invite", err)
	}
	return ackFromPB(resp, ""), nil
}

// RejectInvite declines the caller's invite; the session closes with
// "invite_rejected". reason ("" is the hub's "declined") is logged.
func (c *Client) RejectInvite(ctx context.Context, sessionID, reason string) (Ack, error) {
	resp, err := c.rpc.RejectInvite(ctx, &hubpb.InviteRequest{SessionId: sessionID, Reason: reason})
	if err != nil {
		return Ack{}, wrapErr("reject invite", err)
	}
	return ackFromPB(resp, ""), nil
}

// CloseSession ends a session with reason ("" is "explicit_close"). Only
// its creator (or an operator) may close it.
func (c *Client) CloseSession(ctx context.Context, sessionID, reason string) (Ack, error) {
	resp, err := c.rpc.Close(ctx, &hubpb.CloseRequest{SessionId: sessionID, Reason: reason})
	if err != nil {
		return Ack{}, wrapErr("close session", err)
	}
	return ackFromPB(resp, ""), nil
}
