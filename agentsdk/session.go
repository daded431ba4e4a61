package agentsdk

import (
	"context"
	"fmt"
	"maps"
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

// The lifecycle states (hubpb.SessionInfo.State): PENDING until every
// invitee has acknowledged, then OPEN, then CLOSED or EXPIRED.
const (
	StatePending = "PENDING"
	StateOpen    = "OPEN"
	StateClosed  = "CLOSED"
	StateExpired = "EXPIRED"
)

// Invited returns participants who must acknowledge their invite, one per
// name.
func Invited(names ...string) []*hubpb.Participant {
	out := make([]*hubpb.Participant, len(names))
	for i, n := range names {
		out[i] = &hubpb.Participant{Name: n}
	}
	return out
}

// AutoAccepted returns participants who need not acknowledge, one per name.
func AutoAccepted(names ...string) []*hubpb.Participant {
	out := make([]*hubpb.Participant, len(names))
	for i, n := range names {
		out[i] = &hubpb.Participant{Name: n, AutoAccept: true}
	}
	return out
}

// Expect returns one timer of a session: name is "turn_within",
// "reply_within", "max_silence" or "acks_within"; action is "warn",
// "notify" or "auto_close".
func Expect(name string, within time.Duration, action string) *hubpb.Expectation {
	return &hubpb.Expectation{Name: name, Within: durationpb.New(within), Action: action}
}

// OpenOptions describe a new session. The caller is its creator and first
// participant.
type OpenOptions struct {
	// Type is the session type, "kind@version"; default TypeWorkflow.
	Type string
	// Participants in session order ([Invited], [AutoAccepted]); the caller
	// is added first when missing.
	Participants []*hubpb.Participant
	// Graph is a workflow session's transition graph.
	Graph *Graph
	// Knobs are other settings of the session type, any Go value
	// encoding/json encodes: "max_handoffs": 3, "supervisor": "lead",
	// "context": map[string]any{...}.
	Knobs map[string]any
	// Labels are for listing.
	Labels map[string]string
	// TTL is the session's lifetime; 0 means none.
	TTL time.Duration
	// Retention is how long the hub keeps the session once its whole
	// tree ended, before archiving and purging it; 0 means the hub's
	// policy (at least 1s otherwise).
	Retention time.Duration
	// InviteTimeout is how long invitees have to acknowledge; 0 means the
	// hub's default.
	InviteTimeout time.Duration
	// Expectations replace the session type's default timers ([Expect]);
	// nil keeps the defaults, an empty non-nil slice means none.
	Expectations []*hubpb.Expectation
	// Parent makes this a child of a session the caller takes part in.
	Parent string
	// IdempotencyKey makes the open idempotent: the same caller and key
	// return the same session (Session.Existing).
	IdempotencyKey string
	// Task is the session's first input from its creator (a delegated
	// child's task), written with the open: the creator's first turn when
	// the session type expects the creator to speak first (a
	// conversation), else a message its first speaker sees in its view.
	// Every participant must be AutoAccepted.
	Task string
	// Delegates are the agents the session may delegate to; empty: any.
	Delegates []string
	// Budget bounds the usage of the session's whole tree (a root's).
	Budget *hubpb.Budget
	// ThreadKey continues a conversation thread: while a session the
	// caller opened with this key is open, Open returns it (Existing);
	// otherwise the new session links the thread's previous one.
	ThreadKey string
}

// Proto returns the options as the hub's open request.
func (o OpenOptions) Proto() (*hubpb.OpenRequest, error) {
	req := &hubpb.OpenRequest{Type: o.Type, Participants: o.Participants, Labels: maps.Clone(o.Labels),
		ParentSessionId: o.Parent, IdempotencyKey: o.IdempotencyKey, Task: o.Task, Delegates: o.Delegates,
		Budget: o.Budget, ThreadKey: o.ThreadKey}
	if req.Type == "" {
		req.Type = TypeWorkflow
	}
	if o.Graph != nil {
		g, err := o.Graph.Struct()
		if err != nil {
			return nil, fmt.Errorf("agentsdk: graph: %w", err)
		}
		req.Graph = g
	}
	knobs, err := values("knob", o.Knobs)
	if err != nil {
		return nil, err
	}
	req.Knobs = knobs
	if o.TTL > 0 {
		req.Ttl = durationpb.New(o.TTL)
	}
	if o.Retention > 0 {
		req.Retention = durationpb.New(o.Retention)
	}
	if o.InviteTimeout > 0 {
		req.InviteTimeout = durationpb.New(o.InviteTimeout)
	}
	if o.Expectations != nil {
		req.Expectations = &hubpb.Expectations{Items: o.Expectations}
	}
	return req, nil
}

// Session is a session's metadata and state as the hub answered: the hub's
// SessionInfo (its fields and getters are promoted), with what an open
// adds.
type Session struct {
	*hubpb.SessionInfo
	// Existing is set by Open when an earlier open with the same
	// idempotency key made the session.
	Existing bool
}

// ID returns the session id.
func (s *Session) ID() string { return s.GetMeta().GetSessionId() }

// Ended reports whether the session is over (CLOSED or EXPIRED).
func (s *Session) Ended() bool { return s.GetState() == StateClosed || s.GetState() == StateExpired }

// Var decodes context variable key into v (a pointer), and reports whether
// the variable is set.
func (s *Session) Var(key string, v any) (bool, error) {
	val, ok := s.GetContext()[key]
	if !ok {
		return false, nil
	}
	return true, Decode(val, v)
}

// Open creates a session. It is logged with its invite; it opens once every
// participant not marked AutoAccept has acknowledged (at once when none
// must), and the first speaker is then told it is its turn. With
// TransportStream it goes over the Client's agent stream, as its sends
// do (an Open call against a hub that does not take opens there).
func (c *Client) Open(ctx context.Context, opts OpenOptions) (*Session, error) {
	req, err := opts.Proto()
	if err != nil {
		return nil, err
	}
	if st, err := c.mainStream(ctx); err == nil && st != nil {
		return st.open(ctx, req)
	}
	return c.openCall(ctx, req) // unary, or the stream would not open: the call says why
}

// openCall opens with an Open call.
func (c *Client) openCall(ctx context.Context, req *hubpb.OpenRequest) (*Session, error) {
	resp, err := c.rpc.Open(ctx, req)
	if err != nil {
		return nil, wrapErr("open", err)
	}
	return &Session{SessionInfo: resp.GetSession(), Existing: resp.GetExisting()}, nil
}

// OpenWorkflow opens a workflow session following g with the caller as
// creator and the named participants invited, in that order; each must
// acknowledge (an agent running [Client.Serve] does so by default).
func (c *Client) OpenWorkflow(ctx context.Context, g *Graph, participants ...string) (*Session, error) {
	return c.Open(ctx, OpenOptions{Type: TypeWorkflow, Graph: g, Participants: Invited(participants...)})
}

// GetSession returns a session's metadata and current state. Only its
// participants (or an operator) may read it.
func (c *Client) GetSession(ctx context.Context, sessionID string) (*Session, error) {
	resp, err := c.rpc.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: sessionID})
	if err != nil {
		return nil, wrapErr("get session", err)
	}
	return &Session{SessionInfo: resp}, nil
}

// ListOptions filter ListSessions. Zero fields match everything.
type ListOptions struct {
	State       string
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
func (c *Client) ListSessions(ctx context.Context, opts ListOptions) (sessions []*Session, next string, err error) {
	resp, err := c.rpc.ListSessions(ctx, &hubpb.ListSessionsRequest{State: opts.State, Creator: opts.Creator,
		Participant: opts.Participant, Labels: opts.Labels, PageToken: opts.PageToken, PageSize: int32(opts.PageSize)})
	if err != nil {
		return nil, "", wrapErr("list sessions", err)
	}
	for _, s := range resp.GetSessions() {
		sessions = append(sessions, &Session{SessionInfo: s})
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
	return Ack{SendResponse: resp}, nil
}

// RejectInvite declines the caller's invite; the session closes with
// "invite_rejected". reason ("" is the hub's "declined") is logged.
func (c *Client) RejectInvite(ctx context.Context, sessionID, reason string) (Ack, error) {
	resp, err := c.rpc.RejectInvite(ctx, &hubpb.InviteRequest{SessionId: sessionID, Reason: reason})
	if err != nil {
		return Ack{}, wrapErr("reject invite", err)
	}
	return Ack{SendResponse: resp}, nil
}

// CloseSession ends a session with reason ("" is "explicit_close"). Only
// its creator (or an operator) may close it.
func (c *Client) CloseSession(ctx context.Context, sessionID, reason string) (Ack, error) {
	resp, err := c.rpc.Close(ctx, &hubpb.CloseRequest{SessionId: sessionID, Reason: reason})
	if err != nil {
		return Ack{}, wrapErr("close session", err)
	}
	return Ack{SendResponse: resp}, nil
}
