package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
)

// writeEvent writes an envelope as a line of "sessions tail"'s timeline:
// "[seq] " and the event in words (eventLine), after the time the hub
// accepted it with stamps. A text of several lines keeps them, indented
// under the first.
func writeEvent(w io.Writer, e *hubpb.Envelope, stamps bool) error {
	line := fmt.Sprintf("[%d] %s", e.GetSeq(), eventLine(e))
	if stamps {
		line = timeCell(e.GetAcceptedAt()) + " " + line
	}
	line = strings.ReplaceAll(strings.TrimRight(line, "\n"), "\n", "\n    ")
	_, err := fmt.Fprintln(w, line)
	return err
}

// eventLine is an envelope in words, as the examples print a session:
//
//	alice: hello                          a text
//	bob: done [finish approved; set k=1]  a packet, its routing and context updates
//	alice → bob: psst                     a text with an audience
//	invite bob, carol                     the hub's events: invite, open, close ...
//	bob accepts the invite
//	session opened
//	session closed: done
//	alice asks bob (q1): ship? [yes = Yes; no = No]
//	bob answers q1: yes
//	operator ops: next speaker carol (why: carol has the logs)
//
// and the other types likewise; a custom type by its name and size.
func eventLine(e *hubpb.Envelope) string {
	from := cell(e.GetFrom())
	switch e.GetType() {
	case agentsdk.EventText, agentsdk.EventPacket:
		return turnLine(e)
	case agentsdk.EventMessage:
		return fmt.Sprintf("%s: (message) %s", speaker(e), e.GetMessage().GetText())
	case agentsdk.EventContextSet:
		return fmt.Sprintf("%s sets the context: %s", from, contextNotes(e.GetContextSet()))
	case agentsdk.EventInvite, agentsdk.EventInviteAck, agentsdk.EventInviteReject, agentsdk.EventOpened,
		agentsdk.EventClosed, agentsdk.EventExpired, agentsdk.EventViolation:
		return lifecycleLine(e)
	case agentsdk.EventQuestion, agentsdk.EventAnswer, agentsdk.EventQuestionClosed:
		return questionLine(e)
	case agentsdk.EventDelegation, agentsdk.EventDelegationResult, agentsdk.EventTaskProgress:
		return delegationLine(e)
	case agentsdk.EventForked:
		return forkLine(e.GetFork())
	case agentsdk.EventOperator:
		return operatorLine(e.GetOperatorAction())
	case agentsdk.EventToolCall:
		c := e.GetToolCall()
		return fmt.Sprintf("%s calls %s %s", from, c.GetName(), compactJSON(c.GetArguments(), "{}"))
	case agentsdk.EventToolResult:
		r := e.GetToolResult()
		return fmt.Sprintf("%s: %s → %s", from, r.GetName(), toolResult(r))
	}
	return fmt.Sprintf("%s: %s (%d bytes)", from, e.GetType(), len(e.GetCustom()))
}

// speaker is who a turn is from, and to whom when it has an audience:
// "alice", "alice → bob, carol", "alice → (log only)".
func speaker(e *hubpb.Envelope) string {
	from := cell(e.GetFrom())
	a := e.GetAudience()
	switch {
	case a == nil:
		return from
	case len(a.GetNames()) == 0:
		return from + " → (log only)"
	}
	return from + " → " + strings.Join(a.GetNames(), ", ")
}

// turnLine is a text or a packet: "alice: hello", "bob: bye [finish
// done; set k=1]", with a packet's usage when it has any.
func turnLine(e *hubpb.Envelope) string {
	s := speaker(e) + ":"
	if text := agentsdk.TextOf(e); text != "" {
		s += " " + text
	}
	p := e.GetPacket()
	if p == nil {
		return s
	}
	notes := routingNotes(p.GetRouting())
	if c := contextNotes(p.GetContextUpdates()); c != "" {
		notes = append(notes, c)
	}
	if u := p.GetUsage(); !sameUsage(u, nil) {
		notes = append(notes, usageLine(u))
	}
	if len(notes) > 0 {
		s += " [" + strings.Join(notes, "; ") + "]"
	}
	return s
}

// routingNotes is a packet's routing as the examples print it: "handoff
// tool target", "finish reason", "escalate reason", "pass_caller target".
func routingNotes(r *hubpb.Routing) []string {
	if r.GetKind() == "" {
		return nil
	}
	var words []string
	switch r.GetKind() {
	case agentsdk.RoutingHandoff:
		words = []string{r.GetTool(), r.GetTarget()}
	case agentsdk.RoutingPassCaller:
		words = []string{r.GetTarget()}
	}
	words = append(words, r.GetReason())
	return []string{joinNonEmpty(" ", append([]string{r.GetKind()}, words...)...)}
}

// contextNotes is a context update: "set k=1; delete old".
func contextNotes(u *hubpb.ContextUpdate) string {
	var notes []string
	set := u.GetSet()
	for _, k := range slices.Sorted(maps.Keys(set)) {
		notes = append(notes, fmt.Sprintf("set %s=%s", k, compactJSON(set[k], "null")))
	}
	for _, k := range u.GetDelete() {
		notes = append(notes, "delete "+k)
	}
	return strings.Join(notes, "; ")
}

// lifecycleLine is one of the hub's events of a session's life.
func lifecycleLine(e *hubpb.Envelope) string {
	from := cell(e.GetFrom())
	switch e.GetType() {
	case agentsdk.EventInvite:
		if len(e.GetInvite().GetInvitees()) == 0 {
			return "invite (all participants auto-accept)"
		}
		return "invite " + strings.Join(e.GetInvite().GetInvitees(), ", ")
	case agentsdk.EventInviteAck:
		return from + " accepts the invite"
	case agentsdk.EventInviteReject:
		return joinNonEmpty(": ", from+" declines the invite", e.GetEnded().GetReason())
	case agentsdk.EventOpened:
		return "session opened"
	case agentsdk.EventViolation:
		v := e.GetViolation()
		return joinNonEmpty(": ", fmt.Sprintf("%s not met by %s (%s)", v.GetExpectation(), cell(strings.Join(v.GetViolators(), ", ")), v.GetAction()), v.GetDetail())
	}
	end := e.GetEnded() // session_closed, session_expired: "session closed: done"
	line := strings.ReplaceAll(e.GetType(), "_", " ") + ": " + cell(end.GetReason())
	if end.GetDetail() != "" {
		line += " (" + end.GetDetail() + ")"
	}
	return line
}

// questionLine is a question, its answer, or its withdrawal.
func questionLine(e *hubpb.Envelope) string {
	switch e.GetType() {
	case agentsdk.EventQuestion:
		q := e.GetQuestion()
		line := fmt.Sprintf("%s asks %s (%s): %s", cell(e.GetFrom()), q.GetAnswerer(), q.GetQuestionId(), q.GetText())
		var opts []string
		for _, o := range q.GetOptions() {
			opts = append(opts, joinNonEmpty(" = ", o.GetId(), o.GetLabel()))
		}
		if len(opts) > 0 {
			line += " [" + strings.Join(opts, "; ") + "]"
		}
		return line
	case agentsdk.EventAnswer:
		a := e.GetAnswer()
		by := a.GetBy()
		if by == "" {
			by = cell(e.GetFrom())
		}
		what := joinNonEmpty(": ", strings.Join(a.GetOptionIds(), ", "), a.GetText())
		if a.GetDefaulted() {
			what += " (its default, unanswered in time)"
		}
		return fmt.Sprintf("%s answers %s: %s", by, a.GetQuestionId(), what)
	}
	c := e.GetQuestionClosed()
	return fmt.Sprintf("question %s withdrawn: %s", c.GetQuestionId(), c.GetReason())
}

// delegationLine is a delegation, a child's result, or a task's progress.
func delegationLine(e *hubpb.Envelope) string {
	switch e.GetType() {
	case agentsdk.EventDelegation:
		d := e.GetDelegation()
		how := d.GetMode()
		if d.GetMode() == agentsdk.ModeBlocking && len(d.GetChildSessionIds()) > 1 {
			how += ", await " + d.GetAwait()
		}
		return fmt.Sprintf("%s delegates (%s) to %s", d.GetDelegator(), how, strings.Join(d.GetChildSessionIds(), ", "))
	case agentsdk.EventDelegationResult:
		r := e.GetDelegationResult()
		line := fmt.Sprintf("result of %s: %s", r.GetChildSessionId(), r.GetReason())
		if r.GetSummary() != "" {
			line += fmt.Sprintf(", answered by %s: %s", r.GetResponder(), r.GetSummary())
		}
		if u := r.GetUsage(); !sameUsage(u, nil) {
			line += " [" + usageLine(u) + "]"
		}
		return line
	}
	p := e.GetTaskProgress()
	return strings.TrimSpace(fmt.Sprintf("%s: progress %s %g%% %s", cell(e.GetFrom()), p.GetTask(), p.GetPercent(), p.GetDetail()))
}

// toolResult is a tool's result in words: its error, its string, or its
// JSON.
func toolResult(r *hubpb.ToolResult) string {
	if r.GetError() != "" {
		return "error: " + r.GetError()
	}
	if v, ok := r.GetResult().GetKind().(*structpb.Value_StringValue); ok {
		return v.StringValue
	}
	return compactJSON(r.GetResult(), "null")
}

// compactJSON is m in the one JSON form, or none when m is unset.
func compactJSON(m proto.Message, none string) string {
	if m == nil || !m.ProtoReflect().IsValid() {
		return none
	}
	b, err := hubpb.MarshalJSON(m)
	if err != nil {
		return none
	}
	return string(b)
}

// forkLine is a fork's first record: "bob forks ID at seq 3; carol speaks
// next; set n=2".
func forkLine(f *hubpb.Fork) string {
	line := fmt.Sprintf("%s forks %s at seq %d", cell(f.GetForkedBy()), f.GetOrigin().GetSessionId(), f.GetOrigin().GetAtSeq())
	if n := f.GetNextSpeaker(); n != "" {
		line += "; " + n + " speaks next"
	}
	if u := f.GetContext(); len(u.GetSet()) > 0 || len(u.GetDelete()) > 0 {
		line += "; " + contextNotes(u)
	}
	return line
}

// operatorLine is an operator action: "operator ops: next speaker carol
// (why: carol has the logs)".
func operatorLine(a *hubpb.OperatorAction) string {
	var what string
	switch x := a.GetAction().(type) {
	case *hubpb.OperatorAction_Context:
		what = "context: " + contextNotes(x.Context)
	case *hubpb.OperatorAction_NextSpeaker:
		what = "next speaker " + x.NextSpeaker
	case *hubpb.OperatorAction_ReleaseResult:
		what = "releases the held turn: " + x.ReleaseResult
	case *hubpb.OperatorAction_Timer:
		if x.Timer.GetCancel() {
			what = "cancels " + x.Timer.GetName()
		} else {
			what = fmt.Sprintf("extends %s by %v", x.Timer.GetName(), x.Timer.GetExtend().AsDuration())
		}
	}
	return fmt.Sprintf("operator %s: %s (why: %s)", a.GetOperator(), what, a.GetReason())
}
