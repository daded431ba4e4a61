package session

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/hubd/hubd/hubpb"
)

// MaxNameLen bounds agent names.
const MaxNameLen = 128

// MaxContextKeyLen bounds the length of a context variable name.
const MaxContextKeyLen = 256

// CheckName reports whether s is a valid agent name: 1 to MaxNameLen bytes of
// printable characters without spaces, not starting with '@'.
func CheckName(s string) error {
	if s == "" {
		return fmt.Errorf("agent name is empty: %w", ErrMalformed)
	}
	if len(s) > MaxNameLen {
		return fmt.Errorf("agent name %.20q... is %d bytes, at most %d: %w", s, len(s), MaxNameLen, ErrMalformed)
	}
	if s[0] == '@' {
		return fmt.Errorf("agent name %q starts with '@': %w", s, ErrMalformed)
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r == ',' {
			return fmt.Errorf("agent name %q has a space, comma or control character: %w", s, ErrMalformed)
		}
	}
	return nil
}

// PayloadField returns the name of the envelope payload field that carries
// event type t ("text", "packet", "ended", ...), "custom" for a custom type
// and "" for the types without data (invite acks, opened).
func PayloadField(t string) string {
	switch t {
	case EventText, EventPacket, EventQuestion, EventAnswer, EventDelegationResult, EventTaskProgress:
		return t
	case EventContextSet:
		return "context_set"
	case EventInvite:
		return "invite"
	case EventInviteReject, EventClosed, EventExpired:
		return "ended"
	case EventViolation:
		return "violation"
	case EventInviteAck, EventOpened:
		return ""
	}
	return "custom"
}

// payloadName returns the name of the payload field e carries, "" for none.
func payloadName(e *hubpb.Envelope) string {
	switch e.GetPayload().(type) {
	case nil:
		return ""
	case *hubpb.Envelope_Text:
		return "text"
	case *hubpb.Envelope_Packet:
		return "packet"
	case *hubpb.Envelope_ContextSet:
		return "context_set"
	case *hubpb.Envelope_Invite:
		return "invite"
	case *hubpb.Envelope_Ended:
		return "ended"
	case *hubpb.Envelope_Violation:
		return "violation"
	case *hubpb.Envelope_Question:
		return "question"
	case *hubpb.Envelope_Answer:
		return "answer"
	case *hubpb.Envelope_DelegationResult:
		return "delegation_result"
	case *hubpb.Envelope_TaskProgress:
		return "task_progress"
	case *hubpb.Envelope_Custom:
		return "custom"
	}
	return "unknown"
}

// CheckEnvelope reports whether an envelope's shape is valid: a known or
// custom type in its stored form, a payload field matching it, well-formed
// payload fields, valid audience names and times. It looks at no session
// state. Messages name the proto fields ("text needs the envelope field
// text, got packet").
func CheckEnvelope(e *hubpb.Envelope) error {
	t, err := ParseEventType(e.GetType())
	if err != nil {
		return err
	}
	if t != e.GetType() {
		return fmt.Errorf("event type %q must be given as %q: %w", e.GetType(), t, ErrMalformed)
	}
	for _, n := range e.GetAudience().GetNames() {
		if err := CheckName(n); err != nil {
			return fmt.Errorf("audience: %w", err)
		}
	}
	if e.GetCall().GetDepth() < 0 {
		return fmt.Errorf("call.depth %d is negative: %w", e.GetCall().GetDepth(), ErrMalformed)
	}
	if ts := e.GetAcceptedAt(); ts != nil {
		if err := ts.CheckValid(); err != nil {
			return fmt.Errorf("accepted_at: %v: %w", err, ErrMalformed)
		}
	}
	if err := checkPayloadField(t, e); err != nil {
		return err
	}
	return checkPayload(t, e)
}

func checkPayloadField(t string, e *hubpb.Envelope) error {
	want, got := PayloadField(t), payloadName(e)
	switch {
	case want == got, want == "custom" && got == "":
		return nil
	case want == "":
		return fmt.Errorf("%s carries no payload, got the field %s: %w", t, got, ErrMalformed)
	case got == "":
		return fmt.Errorf("%s needs the envelope field %s, got none: %w", t, want, ErrMalformed)
	}
	return fmt.Errorf("%s needs the envelope field %s, got %s: %w", t, want, got, ErrMalformed)
}

func checkPayload(t string, e *hubpb.Envelope) error {
	switch p := e.GetPayload().(type) {
	case *hubpb.Envelope_Packet:
		return checkPacket(p.Packet)
	case *hubpb.Envelope_ContextSet:
		u := p.ContextSet
		if len(u.GetSet()) == 0 && len(u.GetDelete()) == 0 {
			return fmt.Errorf("context_set sets and deletes nothing: %w", ErrMalformed)
		}
		return checkContext("context_set", u)
	case *hubpb.Envelope_Ended:
		if p.Ended.GetReason() == "" {
			return fmt.Errorf("%s needs ended.reason: %w", t, ErrMalformed)
		}
	case *hubpb.Envelope_Violation:
		if ts := p.Violation.GetSince(); ts != nil {
			if err := ts.CheckValid(); err != nil {
				return fmt.Errorf("violation.since: %v: %w", err, ErrMalformed)
			}
		}
	case *hubpb.Envelope_Question:
		return checkQuestion(p.Question)
	case *hubpb.Envelope_Answer:
		a := p.Answer
		if a.GetQuestionId() == "" {
			return fmt.Errorf("answer needs answer.question_id: %w", ErrMalformed)
		}
		if len(a.GetOptionIds()) == 0 && a.GetText() == "" {
			return fmt.Errorf("answer to %q has neither answer.option_ids nor answer.text: %w", a.GetQuestionId(), ErrMalformed)
		}
	case *hubpb.Envelope_TaskProgress:
		if pc := p.TaskProgress.GetPercent(); math.IsNaN(pc) || math.IsInf(pc, 0) {
			return fmt.Errorf("task_progress.percent %v is not a finite number: %w", pc, ErrMalformed)
		}
	}
	return nil
}

func checkPacket(p *hubpb.Packet) error {
	r := p.GetRouting()
	switch r.GetKind() {
	case "", RouteText, RouteFinish, RouteEscalate:
	case RouteHandoff:
		if r.GetTool() == "" && r.GetTarget() == "" {
			return fmt.Errorf("a handoff needs packet.routing.tool or packet.routing.target: %w", ErrMalformed)
		}
		if r.GetTarget() != "" {
			if err := CheckName(r.GetTarget()); err != nil {
				return fmt.Errorf("packet.routing.target: %w", err)
			}
		}
	default:
		return fmt.Errorf("packet.routing.kind %q is not one of text, handoff, finish, escalate: %w", r.GetKind(), ErrMalformed)
	}
	if err := checkUsage(p.GetUsage()); err != nil {
		return err
	}
	return checkContext("packet.context_updates", p.GetContextUpdates())
}

func checkUsage(u *hubpb.Usage) error {
	c := u.GetCostUsd()
	if u.GetInputTokens() < 0 || u.GetOutputTokens() < 0 || c < 0 || math.IsNaN(c) || math.IsInf(c, 0) {
		return fmt.Errorf("packet.usage {input_tokens: %d, output_tokens: %d, cost_usd: %v} has a negative or non-finite value: %w",
			u.GetInputTokens(), u.GetOutputTokens(), c, ErrMalformed)
	}
	return nil
}

func checkContext(field string, u *hubpb.ContextUpdate) error {
	for _, k := range u.GetDelete() {
		if err := checkContextKey(field+".delete", k); err != nil {
			return err
		}
	}
	if len(u.GetSet()) == 0 {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(u.GetSet())) {
		if err := checkContextKey(field+".set", k); err != nil {
			return err
		}
		if err := CheckValue(u.GetSet()[k]); err != nil {
			return fmt.Errorf("%s[%q]: %w", field+".set", k, err)
		}
	}
	return nil
}

func checkContextKey(field, k string) error {
	if k == "" || len(k) > MaxContextKeyLen {
		return fmt.Errorf("%s: context key %.40q must be 1 to %d bytes: %w", field, k, MaxContextKeyLen, ErrMalformed)
	}
	return nil
}

func checkQuestion(q *hubpb.Question) error {
	if q.GetQuestionId() == "" {
		return fmt.Errorf("question needs question.question_id: %w", ErrMalformed)
	}
	seen := make(map[string]bool, len(q.GetOptions()))
	for _, o := range q.GetOptions() {
		if o.GetId() == "" {
			return fmt.Errorf("question %q has an option without an id: %w", q.GetQuestionId(), ErrMalformed)
		}
		if seen[o.GetId()] {
			return fmt.Errorf("question %q has option id %q twice: %w", q.GetQuestionId(), o.GetId(), ErrMalformed)
		}
		seen[o.GetId()] = true
	}
	return nil
}
