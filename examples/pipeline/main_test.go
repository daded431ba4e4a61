package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
)

const want = `[5] researcher: Findings: group commit batches the fsyncs of concurrent sends.
[6] writer: Draft: durable writes stay fast because group commit batches the fsyncs of concurrent sends.
[7] editor: Approved after reading 2 turns.
closed: sequence_complete
`

func TestPipeline(t *testing.T) {
	var out, errs bytes.Buffer
	if err := run(context.Background(), nil, &out, &errs); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestServesOnlyItsSession runs the example against a hub in which another
// client has opened two sessions with an agent named editor (one inviting
// it, one in which it speaks first): the example's editor serves the
// session its run opened, labelled with the run, and never acts in those.
func TestServesOnlyItsSession(t *testing.T) {
	h := hubtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	person, err := agentsdk.Dial(ctx, h.Addr(), agentsdk.Options{Name: "person"})
	if err != nil {
		t.Fatal(err)
	}
	defer person.Close()
	invited, err := person.OpenWorkflow(ctx, agentsdk.Sequence("person", "editor"), "editor")
	if err != nil {
		t.Fatal(err)
	}
	first, err := person.Open(ctx, agentsdk.OpenOptions{Graph: agentsdk.Sequence("editor", "person"), Participants: agentsdk.AutoAccepted("editor")})
	if err != nil {
		t.Fatal(err)
	}

	var out, errs bytes.Buffer
	if err := run(ctx, []string{"--hub", h.Addr()}, &out, &errs); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	for _, s := range []*agentsdk.Session{invited, first} {
		log, err := person.ReadLog(ctx, s.ID(), 1, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range log {
			if e.GetFrom() == "editor" {
				t.Errorf("the example's editor acted in %s, a session it did not open: %s %s", s.ID(), e.GetType(), agentsdk.TextOf(e))
			}
		}
	}
	// The example's session carries the run's label.
	op, err := agentsdk.Dial(ctx, h.Addr(), agentsdk.Options{Name: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	closed, _, err := op.ListSessions(ctx, agentsdk.ListOptions{State: agentsdk.StateClosed})
	if err != nil {
		t.Fatal(err)
	}
	if len(closed) != 1 || !strings.HasPrefix(closed[0].GetMeta().GetLabels()["example"], "pipeline-") {
		t.Errorf("%d closed sessions, want the example's, labelled example=pipeline-...", len(closed))
		for _, s := range closed {
			t.Logf("closed: %s by %s, labels %v", s.ID(), s.GetMeta().GetCreator(), s.GetMeta().GetLabels())
		}
	}
}
