package main

import (
	"bytes"
	"context"
	"testing"
)

// TestDelegation runs the example against an in-process hub. The
// background task runs beside MainAgent's turn, but MainAgent acts only on
// what it has polled or waited for, so the hub writes the tree in the
// same order every run and the feed is exact.
func TestDelegation(t *testing.T) {
	var out, errs bytes.Buffer
	if err := run(context.Background(), nil, &out, &errs); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	want := `user: Prepare my review of the Acme account.
MainAgent delegates (blocking) to ResearchAgent (task=news)
  MainAgent: Research Acme's latest product announcements.
  ResearchAgent calls web_search {"query":"Acme product announcements"}
  web_search → Acme launches Widget 2 (May 4); Acme cuts list prices 10% (May 20)
  ResearchAgent: Two announcements in May. [finish finished] [usage 1200 in, 300 out, $0.0150, 1 tool call]
  closed: finished
result of ResearchAgent (task=news): finished, answered by ResearchAgent: Acme launched Widget 2 and cut its list prices by 10%. [usage 1200 in, 300 out, $0.0150, 1 tool call]
MainAgent delegates (background) to TasksAgent (task=follow-ups)
  MainAgent: List Acme's open follow-ups.
  TasksAgent: progress follow-ups 50% 3 of 6 accounts checked
  TasksAgent: 6 open follow-ups so far.
MainAgent calls get_background_sub_agent_result {"task":"follow-ups"}
get_background_sub_agent_result → {"progress":"50% 3 of 6 accounts checked","state":"running"}
MainAgent calls message_sub_agent {"message":"Which of them are overdue?","mode":"send_and_wait","task":"follow-ups"}
  MainAgent: Which of them are overdue?
  TasksAgent: progress follow-ups 100% 6 of 6 accounts checked
  TasksAgent: 2 are overdue: the renewal call and the security review.
message_sub_agent → 2 are overdue: the renewal call and the security review.
  MainAgent: Thanks, that is all: wrap up.
  TasksAgent: Done. [finish finished] [usage 800 in, 120 out, $0.0060]
  closed: finished
result of TasksAgent (task=follow-ups): finished, answered by TasksAgent: 6 open, 2 overdue (renewal call, security review). [usage 800 in, 120 out, $0.0060]
MainAgent calls get_background_sub_agent_result {"task":"follow-ups"}
get_background_sub_agent_result → {"progress":"100% 6 of 6 accounts checked","result":"6 open, 2 overdue (renewal call, security review).","state":"closed"}
MainAgent delegates (background) to TasksAgent (task=emails)
  MainAgent: Draft follow-up emails to all 40 Acme contacts.
  TasksAgent: progress emails 0% 0 of 40 drafted
MainAgent calls get_background_sub_agent_result {"task":"emails"}
get_background_sub_agent_result → {"progress":"0% 0 of 40 drafted","state":"running"}
  closed: cancelled
result of TasksAgent (task=emails): cancelled
MainAgent asks user: Send reminders for the 2 overdue follow-ups? [now = Now; tomorrow = Tomorrow morning; no = Do not send]
user answers: tomorrow
MainAgent: Acme review: Acme launched Widget 2 and cut its list prices by 10%. Follow-ups: 6 open, 2 overdue (renewal call, security review). Reminders: tomorrow. The email drafts were cancelled. [usage 2400 in, 180 out, $0.0210, 4 tool calls]
user: Thanks! [finish answered]
call tree:
  user, MainAgent: conversation@1 CLOSED answered, 3 turns, usage 2400 in, 180 out, $0.0210, 4 tool calls
    ResearchAgent (task=news): conversation@1 CLOSED finished, 2 turns, usage 1200 in, 300 out, $0.0150, 1 tool call
    TasksAgent (task=follow-ups): conversation@1 CLOSED finished, 6 turns, usage 800 in, 120 out, $0.0060
    TasksAgent (task=emails): conversation@1 CLOSED cancelled, 1 turn, usage 0 in, 0 out, $0.0000
tree usage: 4400 in, 600 out, $0.0420, 5 tool calls
closed: answered
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
