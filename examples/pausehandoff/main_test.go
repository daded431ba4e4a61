package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// want is the example's output with the person's answer "Thursday".
const want = `caller: Summarise last night's incident report.
agent_a delegates (blocking) to agent_b
  agent_a: Summarise: db-2's disk filled at 02:10, writes failed for 14 minutes, the WAL was rotated at 02:24.
  agent_b: Read it. [finish finished]
  closed: finished
result of agent_b: finished, answered by agent_b: db-2 ran out of disk at 02:10; 14 minutes of failed writes until the WAL was rotated.
agent_a: Summary: db-2 ran out of disk at 02:10; 14 minutes of failed writes until the WAL was rotated.
caller: Book a room for the incident review.
agent_a asks caller: Which day should I book the review room for?
caller answers: Thursday
agent_a: Booked room 4 for Thursday.
caller delegates (blocking) to agent_a, agent_b
  caller: (message) Find a hotel in Oslo for the review.
  agent_a: [pass_caller agent_b]
  agent_b: Hotel Bristol has rooms. [finish finished]
  closed: finished
result of agent_a, agent_b: finished, answered by agent_b: Hotel Bristol, 2 nights from the review day.
caller: Done: Hotel Bristol, 2 nights from the review day. (answered by agent_b) [finish done]
closed: done
`

// TestPauseHandoff runs the example against an in-process hub with the
// person's answer given by --answer.
func TestPauseHandoff(t *testing.T) {
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"--answer", "Thursday"}, &out, &errs); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestPauseHandoffStdin: without --answer the person types the answer on
// stdin, prompted on stderr; no answer there is an error.
func TestPauseHandoffStdin(t *testing.T) {
	var out, errs bytes.Buffer
	if err := runWith(context.Background(), nil, strings.NewReader("Thursday\n"), &out, &errs); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	if prompt := "agent_a asks: Which day should I book the review room for?\n> "; errs.String() != prompt {
		t.Errorf("stderr %q, want the prompt %q", errs.String(), prompt)
	}
	out.Reset()
	err := runWith(context.Background(), []string{"--timeout", "10s"}, strings.NewReader(""), &out, &errs)
	if err == nil || !strings.Contains(err.Error(), "no answer on stdin") {
		t.Errorf("with nothing on stdin: %v\n%s", err, out.String())
	}
}
