package main

import (
	"flag"
	"io"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
)

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Minute: "0s", 0: "0s", 3*time.Second + 900*time.Millisecond: "3s", 59 * time.Second: "59s",
		time.Minute: "1m", 4*time.Minute + 59*time.Second: "4m", 2*time.Hour + 59*time.Minute: "2h",
		23 * time.Hour: "23h", 24 * time.Hour: "1d", 5*24*time.Hour + 23*time.Hour: "5d", 400 * 24 * time.Hour: "400d",
	} {
		if got := age(d); got != want {
			t.Errorf("age(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestOutputFlag: --json is --output json, the last one given wins,
// --json=false is the default again, and a format is taken in any case.
func TestOutputFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "table"},
		{[]string{"--json"}, "json"},
		{[]string{"--output", "json"}, "json"},
		{[]string{"--output=JSON"}, "json"},
		{[]string{"--json", "--output", "table"}, "table"},
		{[]string{"--output", "json", "--json=false"}, "table"},
	} {
		fs := flag.NewFlagSet("list", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		out := outputFlags(fs, "`format`", formatTable, formatJSON)
		if err := fs.Parse(tc.args); err != nil || out.format != tc.want {
			t.Errorf("%v: %q, %v; want %q", tc.args, out.format, err, tc.want)
		}
	}
}

func logged(seq uint64, from, typ string) *hubpb.Envelope {
	return &hubpb.Envelope{Seq: seq, From: from, Type: typ}
}

// TestEventLine covers the timeline's line of each kind of envelope the
// end-to-end tests do not write.
func TestEventLine(t *testing.T) {
	handoff := logged(1, "router", agentsdk.EventPacket)
	handoff.Payload = &hubpb.Envelope_Packet{Packet: &hubpb.Packet{Body: "over", Routing: &hubpb.Routing{Kind: agentsdk.RoutingHandoff, Tool: "transfer_to_b", Target: "b"},
		ContextUpdates: &hubpb.ContextUpdate{Set: map[string]*structpb.Value{"n": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewNumberValue(1)}})}, Delete: []string{"old"}},
		Usage:          &hubpb.Usage{InputTokens: 10, OutputTokens: 2}}}
	whisper := logged(2, "alice", agentsdk.EventText)
	whisper.Payload, whisper.Audience = &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "psst"}}, &hubpb.Audience{Names: []string{"bob"}}
	escalate := logged(3, "s", agentsdk.EventPacket)
	escalate.Payload = &hubpb.Envelope_Packet{Packet: &hubpb.Packet{Body: "help", Routing: &hubpb.Routing{Kind: agentsdk.RoutingEscalate, Reason: "stuck"}}}
	ack := logged(4, "bob", agentsdk.EventInviteAck)
	reject := logged(5, "bob", agentsdk.EventInviteReject)
	reject.Payload = &hubpb.Envelope_Ended{Ended: &hubpb.Ended{Reason: "busy"}}
	expired := logged(6, "", agentsdk.EventExpired)
	expired.Payload = &hubpb.Envelope_Ended{Ended: &hubpb.Ended{Reason: "budget_exceeded", Detail: "tokens 120 > 100"}}
	late := logged(7, "", agentsdk.EventViolation)
	late.Payload = &hubpb.Envelope_Violation{Violation: &hubpb.Violation{Expectation: "turn_within", Action: "warn", Violators: []string{"bob"}}}
	answer := logged(8, "operator", agentsdk.EventAnswer)
	answer.Payload = &hubpb.Envelope_Answer{Answer: &hubpb.Answer{QuestionId: "q1", OptionIds: []string{"yes"}, By: "person"}}
	deleg := logged(9, "", agentsdk.EventDelegation)
	deleg.Payload = &hubpb.Envelope_Delegation{Delegation: &hubpb.Delegation{Delegator: "planner", Mode: agentsdk.ModeBlocking, Await: "all", ChildSessionIds: []string{"c1", "c2"}}}
	call := logged(10, "a", agentsdk.EventToolCall)
	call.Payload = &hubpb.Envelope_ToolCall{ToolCall: &hubpb.ToolCall{Name: "search"}}
	result := logged(11, "a", agentsdk.EventToolResult)
	result.Payload = &hubpb.Envelope_ToolResult{ToolResult: &hubpb.ToolResult{Name: "search", Result: structpb.NewStringValue("3 hits")}}
	progress := logged(12, "a", agentsdk.EventTaskProgress)
	progress.Payload = &hubpb.Envelope_TaskProgress{TaskProgress: &hubpb.TaskProgress{Task: "index", Percent: 50}}
	forked := logged(1, "", agentsdk.EventForked)
	forked.Payload = &hubpb.Envelope_Fork{Fork: &hubpb.Fork{Origin: &hubpb.ForkOrigin{SessionId: "s1", AtSeq: 3}, ForkedBy: "bob", NextSpeaker: "carol",
		Context: &hubpb.ContextUpdate{Set: map[string]*structpb.Value{"n": structpb.NewNumberValue(2)}}}}
	custom := logged(13, "a", "x.audit")
	custom.Payload = &hubpb.Envelope_Custom{Custom: []byte("abc")}
	for e, want := range map[*hubpb.Envelope]string{
		handoff:  `router: over [handoff transfer_to_b b; set n=[1]; delete old; tokens=10/2 cost=$0.0000 tools=0]`,
		whisper:  "alice → bob: psst",
		escalate: "s: help [escalate stuck]",
		ack:      "bob accepts the invite",
		reject:   "bob declines the invite: busy",
		expired:  "session expired: budget_exceeded (tokens 120 > 100)",
		late:     "turn_within not met by bob (warn)",
		answer:   "person answers q1: yes",
		deleg:    "planner delegates (blocking, await all) to c1, c2",
		call:     "a calls search {}",
		result:   "a: search → 3 hits",
		progress: "a: progress index 50%",
		custom:   "a: x.audit (3 bytes)",
		forked:   "bob forks s1 at seq 3; carol speaks next; set n=2",
	} {
		if got := eventLine(e); got != want {
			t.Errorf("%s: %q, want %q", e.GetType(), got, want)
		}
	}
}

// TestOperatorLine: each operator action in the timeline names the
// operator, what it did and why.
func TestOperatorLine(t *testing.T) {
	act := func(a *hubpb.OperatorAction) *hubpb.Envelope {
		a.Operator, a.Reason = "ops", "because"
		e := logged(1, "", agentsdk.EventOperator)
		e.Payload = &hubpb.Envelope_OperatorAction{OperatorAction: a}
		return e
	}
	ctx, _ := agentsdk.SetContext(map[string]any{"k": 1})
	ctx.GetContext().Delete = []string{"old"}
	for _, tc := range []struct {
		e    *hubpb.Envelope
		want string
	}{
		{act(ctx), "operator ops: context: set k=1; delete old (why: because)"},
		{act(agentsdk.NextSpeaker("carol")), "operator ops: next speaker carol (why: because)"},
		{act(agentsdk.ReleaseTurn("yes")), "operator ops: releases the held turn: yes (why: because)"},
		{act(agentsdk.ExtendTimer("turn_within", 5*time.Minute)), "operator ops: extends turn_within by 5m0s (why: because)"},
		{act(agentsdk.CancelTimer("turn_within")), "operator ops: cancels turn_within (why: because)"},
	} {
		if got := eventLine(tc.e); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}
