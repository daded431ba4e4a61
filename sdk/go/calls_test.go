package sdkgo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
	"github.com/hubd/hubd/hubpb"
)

// researcher answers every turn of a child by finishing it with a summary
// of its task and some usage.
func researcher(c *agentsdk.Client) agentsdk.Handler {
	return func(ctx context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
		p := agentsdk.NewPacket("done").Finish("", c.Name()+" on "+t.Text()).WithUsage(&hubpb.Usage{InputTokens: 10, OutputTokens: 5})
		return agentsdk.ReplyPacket(p), nil
	}
}

// child is a conversation child with agent, given task.
func child(agent, task string) agentsdk.OpenOptions {
	return agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted(agent), Task: task}
}

// askUser opens a conversation of user with main and says text; it returns
// the session.
func askUser(t *testing.T, ctx context.Context, user *agentsdk.Client, text string) *agentsdk.Session {
	t.Helper()
	s, err := user.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("main")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := user.SendText(ctx, s.ID(), text); err != nil {
		t.Fatal(err)
	}
	return s
}

// nextTurn follows a session from seq from until a turn by from, and
// returns its text.
func nextTurn(t *testing.T, ctx context.Context, c *agentsdk.Client, id string, from uint64, by string) *hubpb.Envelope {
	t.Helper()
	var got *hubpb.Envelope
	_, err := c.Follow(ctx, id, from, func(e *hubpb.Envelope) error {
		if agentsdk.IsTurn(e) && e.GetFrom() == by {
			got = e
			return errStop
		}
		return nil
	})
	if got == nil {
		t.Fatalf("no turn by %s in %s: %v", by, id, err)
	}
	return got
}

var errStop = errors.New("stop")

// count returns how many envelopes of a session's log (read by c) have
// type typ.
func count(t *testing.T, ctx context.Context, c *agentsdk.Client, id, typ string) int {
	t.Helper()
	es, err := c.ReadLog(ctx, id, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if e.GetType() == typ {
			n++
		}
	}
	return n
}

// TestTurnDelegateAll: a handler fans out to two children with
// Turn.DelegateAll and gets both results, in closing order; the turn
// comes back to the same handler call (never to a second one), and the
// parent shows the tree's usage.
func TestTurnDelegateAll(t *testing.T) {
	ctx := testCtx(t)
	h := hubtest.New(t)
	user, main := dial(t, h.Addr(), "user"), dial(t, h.Addr(), "main")
	research, legal := dial(t, h.Addr(), "research"), dial(t, h.Addr(), "legal")
	var got calls
	serve(t, ctx, []*agentsdk.Client{research, legal}, researcher)
	serve(t, ctx, []*agentsdk.Client{main}, func(c *agentsdk.Client) agentsdk.Handler {
		return func(ctx context.Context, turn *agentsdk.Turn) (agentsdk.Reply, error) {
			got.add("%s@%d", turn.Trigger.GetType(), turn.Trigger.GetSeq())
			rs, err := turn.DelegateAll(ctx, child("research", "acme"), child("legal", "acme"))
			if err != nil {
				return agentsdk.Reply{}, err
			}
			var sums []string
			for _, r := range rs {
				sums = append(sums, r.GetSummary())
			}
			slices.Sort(sums)
			return agentsdk.ReplyText(strings.Join(sums, "; ")), nil
		}
	})
	s := askUser(t, ctx, user, "what about acme?")
	reply := nextTurn(t, ctx, user, s.ID(), 1, "main")
	if agentsdk.TextOf(reply) != "legal on acme; research on acme" {
		t.Errorf("main replied %q", agentsdk.TextOf(reply))
	}
	if c := got.get(); !slices.Equal(c, []string{"text@3"}) {
		t.Errorf("main's handler ran for %v, want once for the user's text", c)
	}
	if n := count(t, ctx, main, s.ID(), agentsdk.EventDelegationResult); n != 2 {
		t.Errorf("%d results in the parent, want 2", n)
	}
	info, err := user.GetSession(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if u := info.GetTreeUsage(); u.GetInputTokens() != 20 || u.GetOutputTokens() != 10 {
		t.Errorf("tree usage %s, want 20 in and 10 out", js(t, u))
	}
	if len(info.GetOpenChildren()) != 0 || len(info.GetHolds()) != 0 {
		t.Errorf("open children %v, holds %v after both results", info.GetOpenChildren(), info.GetHolds())
	}

	// The whole tree in one feed, as the delegator reads it.
	if _, err := user.CloseSession(ctx, s.ID(), "thanks"); err != nil {
		t.Fatal(err)
	}
	for _, verbose := range []bool{true, false} {
		seen := map[string][]uint64{}
		end, err := main.FollowTree(ctx, s.ID(), agentsdk.TreeOptions{Verbose: verbose}, func(e *hubpb.Envelope) error {
			if d := e.GetCall().GetDepth(); (d == 0) != (e.GetSessionId() == s.ID()) {
				t.Errorf("%s#%d labelled depth %d", e.GetSessionId(), e.GetSeq(), d)
			}
			seen[e.GetSessionId()] = append(seen[e.GetSessionId()], e.GetSeq())
			return nil
		})
		if err != nil || agentsdk.CloseReason(end) != "thanks" {
			t.Fatalf("follow tree: %v, %v", end, err)
		}
		want := 3 // the root and its two children
		if !verbose {
			want = 1 // the children's envelopes are neither questions, answers nor results
		}
		if len(seen) != want {
			t.Errorf("verbose=%v: the feed had sessions %v, want %d", verbose, seen, want)
		}
		for id, seqs := range seen {
			for i, seq := range seqs {
				if seq != uint64(i+1) {
					t.Errorf("verbose=%v: session %s gave seqs %v, want 1, 2, 3, ...", verbose, id, seqs)
					break
				}
			}
		}
	}
}

// TestTaskBackground: a background task is polled, messaged (as a turn,
// the child being a conversation with the delegator), waited for, and a
// second one cancelled; the parent's turn never moves.
func TestTaskBackground(t *testing.T) {
	ctx := testCtx(t)
	h := hubtest.New(t)
	main, worker := dial(t, h.Addr(), "main"), dial(t, h.Addr(), "tasks")
	serve(t, ctx, []*agentsdk.Client{worker}, func(c *agentsdk.Client) agentsdk.Handler {
		return func(ctx context.Context, turn *agentsdk.Turn) (agentsdk.Reply, error) {
			progress := &hubpb.Envelope{Type: agentsdk.EventTaskProgress, Payload: &hubpb.Envelope_TaskProgress{
				TaskProgress: &hubpb.TaskProgress{Task: "count", Percent: 50, Detail: "half way"}}}
			if _, err := c.Send(ctx, turn.SessionID, progress); err != nil {
				return agentsdk.Reply{}, err
			}
			if turn.Text() == "stop" {
				return agentsdk.ReplyPacket(agentsdk.NewPacket("stopped").Finish("", "counted to 2")), nil
			}
			return agentsdk.ReplyText("working on: " + turn.Text()), nil
		}
	})
	p, err := main.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("user")})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := main.Delegate(ctx, p.ID(), agentsdk.DelegateOptions{Mode: agentsdk.ModeBackground,
		Children: []agentsdk.OpenOptions{child("tasks", "count to 2"), child("tasks", "never mind")}})
	if err != nil {
		t.Fatal(err)
	}
	counting, doomed := tasks[0], tasks[1]
	if err := doomed.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := doomed.Wait(ctx)
	if err != nil || r.GetReason() != agentsdk.CancelReason || r.GetState() != agentsdk.StateClosed {
		t.Fatalf("cancelled task: %v, %v", r, err)
	}
	if st, err := doomed.Poll(ctx); err != nil || st.State != agentsdk.TaskCancelled || st.Result.GetReason() != agentsdk.CancelReason {
		t.Fatalf("poll of the cancelled task: %+v, %v", st, err)
	}

	reply, err := counting.MessageAndWait(ctx, "status?")
	if err != nil || reply.GetFrom() != "tasks" {
		t.Fatalf("message and wait: %v, %v", reply, err)
	}
	st, err := counting.Poll(ctx)
	if err != nil || st.State != agentsdk.TaskRunning || len(st.Progress) == 0 || st.Result != nil {
		t.Fatalf("poll of the running task: %+v, %v", st, err)
	}
	if _, err := counting.Message(ctx, "stop"); err != nil {
		t.Fatal(err)
	}
	r, err = counting.Wait(ctx)
	if err != nil || r.GetSummary() != "counted to 2" || r.GetReason() != "finished" {
		t.Fatalf("wait: %v, %v", r, err)
	}
	st, err = counting.Poll(ctx)
	if err != nil || st.State != agentsdk.TaskClosed || st.Result.GetSummary() != "counted to 2" {
		t.Fatalf("poll of the finished task: %+v, %v", st, err)
	}
	again, err := main.Task(ctx, counting.ID)
	if err != nil || again.Parent != p.ID() || again.DelegationID != counting.DelegationID {
		t.Fatalf("task rebuilt from its id: %+v, %v", again, err)
	}
	if r, err := again.Wait(ctx); err != nil || r.GetSummary() != "counted to 2" {
		t.Fatalf("wait of the rebuilt task: %v, %v", r, err)
	}
	info, err := main.GetSession(ctx, p.ID())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(info.GetExpected(), []string{"main"}) {
		t.Errorf("the parent expects %v after background results, want main still", info.GetExpected())
	}
}

// TestTurnAsk: a handler asks a person with options; a wrong option is
// refused with what would be valid; the answer returns to the same handler
// call, which replies with it.
func TestTurnAsk(t *testing.T) {
	ctx := testCtx(t)
	h := hubtest.New(t)
	user, main, person := dial(t, h.Addr(), "user"), dial(t, h.Addr(), "main"), dial(t, h.Addr(), "person")
	var got calls
	serve(t, ctx, []*agentsdk.Client{main}, func(c *agentsdk.Client) agentsdk.Handler {
		return func(ctx context.Context, turn *agentsdk.Turn) (agentsdk.Reply, error) {
			got.add("%s@%d", turn.Trigger.GetType(), turn.Trigger.GetSeq())
			a, err := turn.Ask(ctx, &agentsdk.Question{Text: "Deploy now?", Answerer: "person",
				Options: []*agentsdk.Option{{Id: "yes", Label: "Yes"}, {Id: "no", Label: "Not yet"}}})
			if err != nil {
				return agentsdk.Reply{}, err
			}
			return agentsdk.ReplyText("person said " + strings.Join(a.GetOptionIds(), ",")), nil
		}
	})
	s := askUser(t, ctx, user, "deploy the release")
	var qs []*hubpb.PendingQuestion
	for len(qs) == 0 {
		var err error
		if qs, err = person.ListQuestions(ctx, "", ""); err != nil {
			t.Fatal(err)
		}
		if len(qs) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	q := qs[0].GetEnvelope().GetQuestion()
	if qs[0].GetSessionId() != s.ID() || qs[0].GetAsker() != "main" || q.GetText() != "Deploy now?" {
		t.Fatalf("pending question %s", js(t, qs[0]))
	}
	_, err := person.AnswerQuestion(ctx, s.ID(), &agentsdk.Answer{QuestionId: q.GetQuestionId(), OptionIds: []string{"maybe"}})
	if !errors.Is(err, agentsdk.ErrBadAnswer) || !strings.Contains(err.Error(), "yes, no") {
		t.Fatalf("a wrong option: %v, want ErrBadAnswer listing yes, no", err)
	}
	if _, err := person.AnswerQuestion(ctx, s.ID(), &agentsdk.Answer{QuestionId: q.GetQuestionId(), OptionIds: []string{"yes"}}); err != nil {
		t.Fatal(err)
	}
	if reply := nextTurn(t, ctx, user, s.ID(), 1, "main"); agentsdk.TextOf(reply) != "person said yes" {
		t.Errorf("main replied %q", agentsdk.TextOf(reply))
	}
	if c := got.get(); !slices.Equal(c, []string{"text@3"}) {
		t.Errorf("main's handler ran for %v, want once", c)
	}
	_, err = person.AnswerQuestion(ctx, s.ID(), &agentsdk.Answer{QuestionId: q.GetQuestionId(), OptionIds: []string{"no"}})
	if !errors.Is(err, agentsdk.ErrBadAnswer) {
		t.Errorf("a second answer: %v, want ErrBadAnswer", err)
	}
}

// TestDelegateAcrossRestarts: a handler waiting in Turn.Delegate gets its
// result although the hub restarts while it waits; then, with the agent
// process itself gone while waiting (its Serve stopped), the turn comes
// back to a new Serve with the result as trigger (Turn.Resumed). Each
// child's result is in the parent once.
func TestDelegateAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	ctx := testCtx(t)
	h := startAt(t, ctx, "", dir)
	addr := h.Addr()
	user, main, research := dial(t, addr, "user"), dial(t, addr, "main"), dial(t, addr, "research")
	held, release := make(chan struct{}, 1), make(chan struct{})
	serve(t, ctx, []*agentsdk.Client{research}, func(c *agentsdk.Client) agentsdk.Handler {
		return func(ctx context.Context, turn *agentsdk.Turn) (agentsdk.Reply, error) {
			held <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return agentsdk.Reply{}, ctx.Err()
			}
			return researcher(c)(ctx, turn)
		}
	}, agentsdk.WithBackoff(20*time.Millisecond, 300*time.Millisecond))
	var got calls
	handler := func(c *agentsdk.Client) agentsdk.Handler {
		return func(ctx context.Context, turn *agentsdk.Turn) (agentsdk.Reply, error) {
			got.add("%s@%d", turn.Trigger.GetType(), turn.Trigger.GetSeq())
			if turn.Resumed() {
				return agentsdk.ReplyText("resumed with " + turn.Trigger.GetDelegationResult().GetSummary()), nil
			}
			r, err := turn.Delegate(ctx, child("research", agentsdk.TextOf(turn.Trigger)))
			if err != nil {
				return agentsdk.Reply{}, err
			}
			return agentsdk.ReplyText("got " + r.GetSummary()), nil
		}
	}
	first := serve(t, ctx, []*agentsdk.Client{main}, handler, agentsdk.WithBackoff(20*time.Millisecond, 300*time.Millisecond))

	// 1. The hub restarts while main waits.
	s := askUser(t, ctx, user, "acme")
	<-held
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h = startAt(t, ctx, addr, dir)
	release <- struct{}{}
	if reply := nextTurn(t, ctx, user, s.ID(), 1, "main"); agentsdk.TextOf(reply) != "got research on acme" {
		t.Errorf("after a hub restart main replied %q", agentsdk.TextOf(reply))
	}

	// 2. The agent process is gone while main waits.
	if _, err := user.SendText(ctx, s.ID(), "globex"); err != nil {
		t.Fatal(err)
	}
	<-held
	first.stop()
	release <- struct{}{}
	var result *hubpb.Envelope
	_, _ = main.Follow(ctx, s.ID(), 1, func(e *hubpb.Envelope) error { // results are for the delegator's eyes
		if e.GetType() == agentsdk.EventDelegationResult && e.GetDelegationResult().GetSummary() == "research on globex" {
			result = e
			return errStop
		}
		return nil
	})
	if result == nil {
		t.Fatal("no result for the second delegation")
	}
	serve(t, ctx, []*agentsdk.Client{main}, handler)
	if reply := nextTurn(t, ctx, user, s.ID(), result.GetSeq(), "main"); agentsdk.TextOf(reply) != "resumed with research on globex" {
		t.Errorf("after an agent restart main replied %q", agentsdk.TextOf(reply))
	}
	want := []string{"text@3", "text@7", fmt.Sprintf("delegation_result@%d", result.GetSeq())}
	if c := got.get(); !slices.Equal(c, want) {
		t.Errorf("main's handler ran for %v, want %v", c, want)
	}
	if n := count(t, ctx, main, s.ID(), agentsdk.EventDelegationResult); n != 2 {
		t.Errorf("%d results in the parent, want 2", n)
	}
	h.Close()
}

// TestTurnPassCaller: inside a child, the delegate passes the caller to a
// colleague, whose finish answers the parent.
func TestTurnPassCaller(t *testing.T) {
	ctx := testCtx(t)
	h := hubtest.New(t)
	user, main := dial(t, h.Addr(), "user"), dial(t, h.Addr(), "main")
	triage, hotels := dial(t, h.Addr(), "triage"), dial(t, h.Addr(), "hotels")
	serve(t, ctx, []*agentsdk.Client{triage}, func(c *agentsdk.Client) agentsdk.Handler {
		return func(ctx context.Context, turn *agentsdk.Turn) (agentsdk.Reply, error) {
			return turn.PassCaller("hotels"), nil
		}
	})
	serve(t, ctx, []*agentsdk.Client{hotels}, researcher)
	serve(t, ctx, []*agentsdk.Client{main}, func(c *agentsdk.Client) agentsdk.Handler {
		return func(ctx context.Context, turn *agentsdk.Turn) (agentsdk.Reply, error) {
			g := agentsdk.NewGraph("triage").On(agentsdk.Always(), agentsdk.ToNextInOrder())
			r, err := turn.Delegate(ctx, agentsdk.OpenOptions{Graph: g, Participants: agentsdk.AutoAccepted("triage", "hotels"), Task: "a room in Oslo"})
			if err != nil {
				return agentsdk.Reply{}, err
			}
			return agentsdk.ReplyText(r.GetResponder() + ": " + r.GetSummary()), nil
		}
	})
	s := askUser(t, ctx, user, "plan a trip")
	if reply := nextTurn(t, ctx, user, s.ID(), 1, "main"); agentsdk.TextOf(reply) != "hotels: hotels on " {
		t.Errorf("main replied %q", agentsdk.TextOf(reply))
	}
}
