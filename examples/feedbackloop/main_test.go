package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/examples/internal/demo"
)

func TestFeedbackLoop(t *testing.T) {
	var out, errs bytes.Buffer
	if err := run(context.Background(), nil, &out, &errs); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	want := `[4] drafter: Draft 1: hubd keeps every session in a write-ahead log.
[5] reviewer: Say why the log matters.
[6] drafter: Draft 2: as asked ("Say why the log matters."), revised.
[7] reviewer: Mention replay after a crash.
[8] drafter: Draft 3: as asked ("Mention replay after a crash."), revised.
[9] reviewer: Approved. [set approved=true]
closed: approved
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestSafetyCap: a reviewer that never approves is stopped by max_turns.
func TestSafetyCap(t *testing.T) {
	never := func(context.Context, *agentsdk.Turn) (agentsdk.Reply, error) {
		return agentsdk.ReplyText("Not yet."), nil
	}
	var out, errs bytes.Buffer
	err := demo.Run(context.Background(), "feedbackloop", nil, &out, &errs, demo.Scenario{
		Agents: []demo.Agent{
			{Name: "drafter", Handle: drafter, Serve: []agentsdk.ServeOption{agentsdk.WithView(agentsdk.ViewFull, 0)}},
			{Name: "reviewer", Handle: never},
		},
		Open: func(ctx context.Context, c *agentsdk.Client, labels map[string]string) (*agentsdk.Session, error) {
			return c.Open(ctx, agentsdk.OpenOptions{Graph: Graph(), Participants: agentsdk.Invited("reviewer"), Labels: labels})
		},
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != maxTurns+1 || lines[maxTurns] != "closed: max_turns" {
		t.Errorf("got:\n%s", out.String())
	}
}
