package hubgrpc

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// parseID parses a session id of a request.
func parseID(field, s string) (session.ID, error) {
	if s == "" {
		return session.ID{}, fmt.Errorf("%s is required: %w", field, session.ErrMalformed)
	}
	id, err := session.ParseID(s)
	if err != nil {
		return session.ID{}, fmt.Errorf("%s: %v: %w", field, err, session.ErrMalformed)
	}
	return id, nil
}

func optionalUUID(field, s string) (uuid.UUID, error) {
	if s == "" {
		return uuid.Nil, nil
	}
	u, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, fmt.Errorf("%s %q is not a UUID: %w", field, s, session.ErrMalformed)
	}
	return u, nil
}

func uuidString(u uuid.UUID) string {
	if u == uuid.Nil {
		return ""
	}
	return u.String()
}

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func fromTS(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.AsTime().UTC()
}

// jsonMap turns JSON-valued wire maps into canonical JSON values.
func jsonMap(field string, m map[string]string) (map[string]json.RawMessage, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[string]json.RawMessage, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v, err := session.CanonicalJSON([]byte(m[k]))
		if err != nil {
			return nil, fmt.Errorf("%s[%q]: %w", field, k, err)
		}
		out[k] = v
	}
	return out, nil
}

func stringMap(m map[string]json.RawMessage) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

// EnvelopeFromPB converts a wire envelope into hubd's. Context values are
// made canonical; a bad value, id or type is an ErrMalformed error naming
// the field.
func EnvelopeFromPB(p *hubpb.Envelope) (*session.Envelope, error) {
	if p == nil {
		return nil, fmt.Errorf("envelope is required: %w", session.ErrMalformed)
	}
	t, err := session.ParseEventType(p.GetType())
	if err != nil {
		return nil, err
	}
	e := &session.Envelope{From: p.GetFrom(), Type: t, ClientMsgID: p.GetClientMsgId(), TraceParent: p.GetTraceparent(),
		Seq: p.GetSeq(), AcceptedAt: fromTS(p.GetAcceptedAt())}
	if p.GetSessionId() != "" {
		if e.Session, err = parseID("envelope.session_id", p.GetSessionId()); err != nil {
			return nil, err
		}
	}
	if e.ID, err = optionalUUID("envelope.id", p.GetId()); err != nil {
		return nil, err
	}
	if e.Causation, err = optionalUUID("envelope.causation_id", p.GetCausationId()); err != nil {
		return nil, err
	}
	if a := p.GetAudience(); a != nil {
		e.Audience = session.Only(a.GetNames()...)
	}
	if c := p.GetCall(); c != nil {
		e.Call = session.Call{ID: c.GetId(), Parent: c.GetParent(), Root: c.GetRoot(), Depth: int(c.GetDepth())}
	}
	e.Payload, err = payloadFromPB(t, p)
	return e, err
}

func payloadFromPB(t session.EventType, p *hubpb.Envelope) (session.Payload, error) {
	switch x := p.GetPayload().(type) {
	case nil:
		return nil, nil
	case *hubpb.Envelope_Text:
		return session.Text{Text: x.Text.GetText()}, nil
	case *hubpb.Envelope_Packet:
		return packetFromPB(x.Packet)
	case *hubpb.Envelope_ContextSet:
		return contextFromPB("context_set", x.ContextSet)
	case *hubpb.Envelope_Invite:
		return session.Invite{Invitees: x.Invite.GetInvitees()}, nil
	case *hubpb.Envelope_Ended:
		return session.Ended{Reason: x.Ended.GetReason()}, nil
	case *hubpb.Envelope_Violation:
		v := x.Violation
		return session.Violation{Expectation: v.GetExpectation(), Index: int(v.GetIndex()), Action: session.Action(v.GetAction()),
			Since: fromTS(v.GetSince()), Violators: v.GetViolators(), Detail: v.GetDetail()}, nil
	case *hubpb.Envelope_Question:
		q := session.Question{QuestionID: x.Question.GetQuestionId(), Text: x.Question.GetText()}
		for _, o := range x.Question.GetOptions() {
			q.Options = append(q.Options, session.Option{ID: o.GetId(), Label: o.GetLabel()})
		}
		return q, nil
	case *hubpb.Envelope_Answer:
		return session.Answer{QuestionID: x.Answer.GetQuestionId(), OptionIDs: x.Answer.GetOptionIds(), Text: x.Answer.GetText()}, nil
	case *hubpb.Envelope_DelegationResult:
		d := x.DelegationResult
		child, err := optionalUUID("delegation_result.child_session_id", d.GetChildSessionId())
		return session.DelegationResult{Child: session.ID(child), Reason: d.GetReason(), Summary: d.GetSummary()}, err
	case *hubpb.Envelope_TaskProgress:
		return session.TaskProgress{Task: x.TaskProgress.GetTask(), Percent: x.TaskProgress.GetPercent(), Detail: x.TaskProgress.GetDetail()}, nil
	case *hubpb.Envelope_Custom:
		if len(x.Custom) == 0 {
			return session.Custom{}, nil
		}
		return session.Custom{Data: x.Custom}, nil
	}
	return nil, fmt.Errorf("%s: unknown payload: %w", t, session.ErrMalformed)
}

func packetFromPB(p *hubpb.Packet) (session.Packet, error) {
	r := p.GetRouting()
	out := session.Packet{Body: p.GetBody(),
		Routing: session.Routing{Kind: session.RoutingKind(r.GetKind()), Tool: r.GetTool(), Target: r.GetTarget(), Reason: r.GetReason(), Summary: r.GetSummary()},
		Usage:   session.Usage{InputTokens: p.GetUsage().GetInputTokens(), OutputTokens: p.GetUsage().GetOutputTokens(), CostUSD: p.GetUsage().GetCostUsd()}}
	u, err := contextFromPB("packet.context_updates", p.GetContextUpdates())
	out.Context = u
	return out, err
}

func contextFromPB(field string, c *hubpb.ContextUpdate) (session.ContextUpdate, error) {
	set, err := jsonMap(field+".set", c.GetSet())
	if err != nil {
		return session.ContextUpdate{}, err
	}
	return session.ContextUpdate{Set: set, Delete: c.GetDelete()}, nil
}

// EnvelopeToPB converts hubd's envelope to the wire form.
func EnvelopeToPB(e *session.Envelope) *hubpb.Envelope {
	p := &hubpb.Envelope{SessionId: e.Session.String(), Seq: e.Seq, Id: uuidString(e.ID), From: e.From, Type: string(e.Type),
		CausationId: uuidString(e.Causation), ClientMsgId: e.ClientMsgID, Traceparent: e.TraceParent, AcceptedAt: ts(e.AcceptedAt)}
	if e.Audience.Restricted {
		p.Audience = &hubpb.Audience{Names: e.Audience.Names}
	}
	if e.Call != (session.Call{}) {
		p.Call = &hubpb.Call{Id: e.Call.ID, Parent: e.Call.Parent, Root: e.Call.Root, Depth: int32(e.Call.Depth)}
	}
	switch x := e.Payload.(type) {
	case session.Text:
		p.Payload = &hubpb.Envelope_Text{Text: &hubpb.Text{Text: x.Text}}
	case session.Packet:
		p.Payload = &hubpb.Envelope_Packet{Packet: packetToPB(x)}
	case session.ContextUpdate:
		p.Payload = &hubpb.Envelope_ContextSet{ContextSet: contextToPB(x)}
	case session.Invite:
		p.Payload = &hubpb.Envelope_Invite{Invite: &hubpb.Invite{Invitees: x.Invitees}}
	case session.Ended:
		p.Payload = &hubpb.Envelope_Ended{Ended: &hubpb.Ended{Reason: x.Reason}}
	case session.Violation:
		p.Payload = &hubpb.Envelope_Violation{Violation: &hubpb.Violation{Expectation: x.Expectation, Index: int32(x.Index),
			Action: string(x.Action), Since: ts(x.Since), Violators: x.Violators, Detail: x.Detail}}
	case session.Question:
		q := &hubpb.Question{QuestionId: x.QuestionID, Text: x.Text}
		for _, o := range x.Options {
			q.Options = append(q.Options, &hubpb.Option{Id: o.ID, Label: o.Label})
		}
		p.Payload = &hubpb.Envelope_Question{Question: q}
	case session.Answer:
		p.Payload = &hubpb.Envelope_Answer{Answer: &hubpb.Answer{QuestionId: x.QuestionID, OptionIds: x.OptionIDs, Text: x.Text}}
	case session.DelegationResult:
		p.Payload = &hubpb.Envelope_DelegationResult{DelegationResult: &hubpb.DelegationResult{
			ChildSessionId: x.Child.String(), Reason: x.Reason, Summary: x.Summary}}
	case session.TaskProgress:
		p.Payload = &hubpb.Envelope_TaskProgress{TaskProgress: &hubpb.TaskProgress{Task: x.Task, Percent: x.Percent, Detail: x.Detail}}
	case session.Custom:
		data := x.Data
		if data == nil {
			data = []byte{}
		}
		p.Payload = &hubpb.Envelope_Custom{Custom: data}
	}
	return p
}

func packetToPB(x session.Packet) *hubpb.Packet {
	p := &hubpb.Packet{Body: x.Body}
	if x.Routing != (session.Routing{}) {
		r := x.Routing
		p.Routing = &hubpb.Routing{Kind: string(r.Kind), Tool: r.Tool, Target: r.Target, Reason: r.Reason, Summary: r.Summary}
	}
	if !x.Context.Empty() {
		p.ContextUpdates = contextToPB(x.Context)
	}
	if x.Usage != (session.Usage{}) {
		p.Usage = &hubpb.Usage{InputTokens: x.Usage.InputTokens, OutputTokens: x.Usage.OutputTokens, CostUsd: x.Usage.CostUSD}
	}
	return p
}

func contextToPB(u session.ContextUpdate) *hubpb.ContextUpdate {
	return &hubpb.ContextUpdate{Set: stringMap(u.Set), Delete: u.Delete}
}

func expectationsToPB(es []session.Expectation) []*hubpb.Expectation {
	out := make([]*hubpb.Expectation, 0, len(es))
	for _, e := range es {
		out = append(out, &hubpb.Expectation{Name: e.Name, Seconds: e.Within.Seconds(), Action: string(e.Action)})
	}
	return out
}

func participantsToPB(ps []session.Participant) []*hubpb.Participant {
	out := make([]*hubpb.Participant, 0, len(ps))
	for _, p := range ps {
		out = append(out, &hubpb.Participant{Name: p.Name, Role: p.Role, AutoAccept: p.AutoAccept})
	}
	return out
}

// metaToPB fills the metadata part of a SessionInfo.
func metaToPB(m *session.Meta, st session.State) *hubpb.SessionInfo {
	info := &hubpb.SessionInfo{SessionId: m.ID.String(), Type: m.Type.String(), Creator: m.Creator,
		Participants: participantsToPB(m.Participants), State: st.String(), Labels: m.Labels, Knobs: stringMap(m.Knobs),
		Expectations: expectationsToPB(m.Expectations), CreatedAt: ts(m.CreatedAt),
		ParentSessionId: m.Parent.String(), RootSessionId: m.Root.String(), Depth: int32(m.Depth)}
	if m.TTL > 0 {
		info.Ttl = durationpb.New(m.TTL)
	}
	return info
}

func infoToPB(i hub.Info) *hubpb.SessionInfo {
	p := metaToPB(i.Meta, i.State)
	p.CloseReason, p.Seq, p.Turn, p.Expected, p.LastRule = i.Reason, i.Seq, int64(i.Turn), i.Expected, i.LastRule
	p.Context = stringMap(i.Context)
	if i.Usage != (session.Usage{}) {
		p.Usage = &hubpb.Usage{InputTokens: i.Usage.InputTokens, OutputTokens: i.Usage.OutputTokens, CostUsd: i.Usage.CostUSD}
	}
	return p
}

func deliveryToPB(d hub.Delivery) *hubpb.Delivery {
	return &hubpb.Delivery{Envelope: EnvelopeToPB(d.Envelope), YourTurn: d.Turn}
}

func ackToPB(a hub.Ack) *hubpb.SendResponse {
	return &hubpb.SendResponse{Seq: a.Seq, Id: uuidString(a.ID), AcceptedAt: ts(a.AcceptedAt), Duplicate: a.Duplicate,
		Closed: a.Closed, CloseReason: a.Reason}
}

func durationOfSeconds(s float64) time.Duration {
	if s <= 0 || s > float64(1<<62)/float64(time.Second) {
		return 0 // refused by Expectation.Check as a non-positive threshold
	}
	return time.Duration(s*float64(time.Second) + 0.5)
}
