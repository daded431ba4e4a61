package main

import (
	"bytes"
	"context"
	"testing"
)

// TestSupervisor runs the example against an in-process hub: the feed is
// in log order, so it is the same every run.
func TestSupervisor(t *testing.T) {
	var out, errs bytes.Buffer
	if err := run(context.Background(), nil, &out, &errs); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	want := `[6] message user: I was charged twice for March.
[7] tool_usage router: transfer_to_billing (double charge)
[7] tool_response hub: transitions[0] tool_called(transfer_to_billing) → agent(billing)
[8] tool_usage billing: lookup_charges {"month":"March"}
[9] tool_response billing: lookup_charges → [{"amount":42,"id":"ch_1"},{"amount":42,"id":"ch_2"}]
[10] ai_message billing: I found 2 charges of $42 in March and refunded ch_2.
[11] tool_usage user: get_current_active_agent
[12] tool_response user: get_current_active_agent → billing
[13] message user: Thanks. I cannot log in either.
[14] tool_usage billing: request_help (a login problem is not billing's)
[14] tool_response hub: transitions[2] tool_called(request_help) → agent(router)
[15] tool_usage router: transfer_to_tech (login)
[15] tool_response hub: transitions[1] tool_called(transfer_to_tech) → agent(tech)
[16] tool_usage tech: send_password_reset {"account":"user"}
[17] tool_response tech: send_password_reset → reset link sent
[18] ai_message tech: I sent you a password reset link.
[19] message user: @billing When will the refund reach my card?
[20] tool_usage billing: get_supervisor_agent
[21] tool_response billing: get_supervisor_agent → router
[22] ai_message billing: I cannot promise a date myself.
[22] tool_usage billing: escalate (refund dates)
[22] tool_response hub: escalate → router
[23] ai_message router: Refunds reach your card within 5 business days.
[24] message user: Thank you!
[24] done user: resolved (refund issued, login restored)
active agent: router, supervisor: router, handoffs: 4, turns: 11
closed: resolved
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
