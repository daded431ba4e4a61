package session

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
)

// MaxNameLen bounds agent names.
const MaxNameLen = 128

// MaxContextKeyLen bounds the length of a context variable name.
const MaxContextKeyLen = 256

// CheckName reports whether s is a valid agent name: 1 to MaxNameLen bytes of
// UTF-8, graphic characters without spaces, commas, control, format
// (zero-width) or bidirectional characters, not starting with '@'.
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
	if !utf8.ValidString(s) {
		return fmt.Errorf("agent name %s is not valid UTF-8: %w", quoteBytes(s), ErrMalformed)
	}
	for i, r := range s {
		if !nameRuneOK(r) {
			return fmt.Errorf("agent name %+q has %U at byte %d: a space, comma, control, format or bidirectional character: %w", s, r, i, ErrMalformed)
		}
	}
	return nil
}

// PayloadField returns the name of the envelope payload field that carries
// event type t ("text", "packet", "ended", ...), "custom" for a custom type
// and "" for the types without data (invite acks, opened).
func PayloadField(t string) string {
	switch t {
	case EventText, EventPacket, EventQuestion, EventAnswer, EventQuestionClosed, EventDelegation, EventDelegationResult,
		EventTaskProgress, EventToolCall, EventToolResult, EventMessage, EventOperator:
		return t
	case EventContextSet:
		return "context_set"
	case EventInvite:
		return "invite"
	case EventInviteReject, EventClosed, EventExpired:
		return "ended"
	case EventViolation:
		return "violation"
	case EventForked:
		return "fork"
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
	case *hubpb.Envelope_QuestionClosed:
		return "question_closed"
	case *hubpb.Envelope_Delegation:
		return "delegation"
	case *hubpb.Envelope_ToolCall:
		return "tool_call"
	case *hubpb.Envelope_ToolResult:
		return "tool_result"
	case *hubpb.Envelope_Message:
		return "message"
	case *hubpb.Envelope_Fork:
		return "fork"
	case *hubpb.Envelope_OperatorAction:
		return "operator_action"
	}
	return "unknown"
}

// CheckEnvelope reports whether an envelope's shape is valid: a known or
// custom type in its stored form, a payload field matching it, well-formed
// payload fields, valid audience names, causation id and times, every
// string UTF-8 and every number finite ([CheckFields]). It looks at no
// session state. Messages name the proto fields ("text needs the envelope field
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
	if c := e.GetCausationId(); c != "" {
		if err := CheckUUID("envelope.causation_id", c); err != nil {
			return err
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
	if err := checkPayload(t, e); err != nil {
		return err
	}
	return CheckFields(e) // what the checks above do not look at
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
	case *hubpb.Envelope_Fork:
		return checkFork(p.Fork)
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
	case *hubpb.Envelope_ToolCall:
		return checkToolCall(p.ToolCall)
	case *hubpb.Envelope_ToolResult:
		if p.ToolResult.GetCallId() == "" {
			return fmt.Errorf("tool_result needs tool_result.call_id: %w", ErrMalformed)
		}
		if r := p.ToolResult.GetResult(); r != nil {
			if err := CheckValue(r); err != nil {
				return fmt.Errorf("tool_result.result: %w", err)
			}
		}
	case *hubpb.Envelope_Delegation:
		return checkDelegation(p.Delegation)
	case *hubpb.Envelope_OperatorAction:
		return CheckOperatorAction(p.OperatorAction)
	}
	return nil
}

func checkToolCall(c *hubpb.ToolCall) error {
	if c.GetCallId() == "" || c.GetName() == "" {
		return fmt.Errorf("tool_call needs tool_call.call_id and tool_call.name: %w", ErrMalformed)
	}
	if a := c.GetArguments(); a != nil {
		if err := CheckValue(structpb.NewStructValue(a)); err != nil {
			return fmt.Errorf("tool_call.arguments: %w", err)
		}
	}
	return nil
}

func checkPacket(p *hubpb.Packet) error {
	r := p.GetRouting()
	switch r.GetKind() {
	case "", RouteText, RouteFinish, RouteEscalate:
	case RoutePassCaller:
		if err := CheckName(r.GetTarget()); err != nil {
			return fmt.Errorf("pass_caller needs packet.routing.target: %w", err)
		}
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
		return fmt.Errorf("packet.routing.kind %q is not one of text, handoff, finish, escalate, pass_caller: %w", r.GetKind(), ErrMalformed)
	}
	if err := checkUsage(p.GetUsage()); err != nil {
		return err
	}
	return checkContext("packet.context_updates", p.GetContextUpdates())
}

func checkUsage(u *hubpb.Usage) error {
	c := u.GetCostUsd()
	if u.GetInputTokens() < 0 || u.GetOutputTokens() < 0 || u.GetToolCalls() < 0 || c < 0 || math.IsNaN(c) || math.IsInf(c, 0) {
		return fmt.Errorf("packet.usage {input_tokens: %d, output_tokens: %d, tool_calls: %d, cost_usd: %v} has a negative or non-finite value: %w",
			u.GetInputTokens(), u.GetOutputTokens(), u.GetToolCalls(), c, ErrMalformed)
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
	id := q.GetQuestionId()
	if id == "" {
		return fmt.Errorf("question needs question.question_id: %w", ErrMalformed)
	}
	seen := make(map[string]bool, len(q.GetOptions()))
	for _, o := range q.GetOptions() {
		if o.GetId() == "" {
			return fmt.Errorf("question %q has an option without an id: %w", id, ErrMalformed)
		}
		if seen[o.GetId()] {
			return fmt.Errorf("question %q has option id %q twice: %w", id, o.GetId(), ErrMalformed)
		}
		seen[o.GetId()] = true
	}
	if a := q.GetAnswerer(); a != "" {
		if err := CheckName(a); err != nil {
			return fmt.Errorf("question.answerer: %w", err)
		}
	}
	switch {
	case q.GetMultiple() && len(seen) == 0:
		return fmt.Errorf("question %q: question.multiple needs options: %w", id, ErrMalformed)
	case q.GetSchema() != nil && len(seen) > 0:
		return fmt.Errorf("question %q: question.schema is for free-text questions, not with options: %w", id, ErrMalformed)
	case q.GetSchema() != nil:
		if err := CheckSchema(q.GetSchema()); err != nil {
			return fmt.Errorf("question %q: question.schema: %w", id, err)
		}
	}
	return checkDeadline(q, seen)
}

// checkDeadline checks a question's deadline and what happens at it.
func checkDeadline(q *hubpb.Question, options map[string]bool) error {
	id, w := q.GetQuestionId(), q.GetWithin()
	if w == nil {
		if q.GetOnDeadline() != "" || q.GetDefaultOption() != "" {
			return fmt.Errorf("question %q: question.on_deadline needs question.within: %w", id, ErrMalformed)
		}
		return nil
	}
	if err := w.CheckValid(); err != nil || w.AsDuration() <= 0 {
		return fmt.Errorf("question %q: question.within %v must be a positive duration: %w", id, w.AsDuration(), ErrMalformed)
	}
	switch q.GetOnDeadline() {
	case ActionWarn, ActionNotify, ActionAutoClose:
	case "default":
		if !options[q.GetDefaultOption()] {
			return fmt.Errorf("question %q: question.default_option %q is not one of its options: %w", id, q.GetDefaultOption(), ErrMalformed)
		}
		return nil
	default:
		return fmt.Errorf("question %q: question.on_deadline %q is not one of warn, notify, auto_close, default: %w", id, q.GetOnDeadline(), ErrMalformed)
	}
	if q.GetDefaultOption() != "" {
		return fmt.Errorf("question %q: question.default_option needs on_deadline \"default\": %w", id, ErrMalformed)
	}
	return nil
}

// Delegation modes and awaits (hubpb.Delegation).
const (
	ModeBlocking   = "blocking"
	ModeBackground = "background"
	AwaitAll       = "all"
	AwaitAny       = "any"
	NotifyTurn     = "turn"
)

func checkDelegation(d *hubpb.Delegation) error {
	if len(d.GetChildSessionIds()) == 0 {
		return fmt.Errorf("delegation names no child: %w", ErrMalformed)
	}
	for _, c := range d.GetChildSessionIds() {
		if _, err := ParseID(c); err != nil {
			return fmt.Errorf("delegation.child_session_ids: %v: %w", err, ErrMalformed)
		}
	}
	return CheckDelegationMode(d.GetMode(), d.GetAwait(), d.GetNotify())
}

// CheckDelegationMode checks a delegation's mode, await and notify.
func CheckDelegationMode(mode, await, notify string) error {
	switch {
	case mode != ModeBlocking && mode != ModeBackground:
		return fmt.Errorf("delegation mode %q is not blocking or background: %w", mode, ErrMalformed)
	case mode == ModeBlocking && await != AwaitAll && await != AwaitAny:
		return fmt.Errorf("delegation await %q is not all or any: %w", await, ErrMalformed)
	case mode == ModeBlocking && notify != "":
		return fmt.Errorf("notify is for background delegations: %w", ErrMalformed)
	case mode == ModeBackground && await != "":
		return fmt.Errorf("await is for blocking delegations: %w", ErrMalformed)
	case mode == ModeBackground && notify != "" && notify != NotifyTurn:
		return fmt.Errorf("delegation notify %q is not \"\" or turn: %w", notify, ErrMalformed)
	}
	return nil
}

// checkFork checks a fork record: its origin and its context edits.
func checkFork(f *hubpb.Fork) error {
	if err := CheckUUID("fork.origin.session_id", f.GetOrigin().GetSessionId()); err != nil {
		return err
	}
	if f.GetOrigin().GetAtSeq() == 0 {
		return fmt.Errorf("fork.origin.at_seq is 0; seqs start at 1: %w", ErrMalformed)
	}
	if n := f.GetNextSpeaker(); n != "" {
		if err := CheckName(n); err != nil {
			return fmt.Errorf("fork.next_speaker: %w", err)
		}
	}
	return checkContext("fork.context", f.GetContext())
}
