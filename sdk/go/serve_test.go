package sdkgo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
	"github.com/hubd/hubd/hubpb"
)

// serving runs Serve for each client until the test stops it.
type serving struct {
	t      *testing.T
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func serve(t *testing.T, ctx context.Context, clients []*agentsdk.Client, h func(c *agentsdk.Client) agentsdk.Handler, opts ...agentsdk.ServeOption) *serving {
	ctx, cancel := context.WithCancel(ctx)
	s := &serving{t: t, cancel: cancel}
	for _, c := range clients {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := c.Serve(ctx, h(c), opts...); err != nil {
				t.Errorf("%s: serve: %v", c.Name(), err)
			}
		}()
	}
	t.Cleanup(s.stop)
	return s
}

// stop stops every Serve and waits for them to return.
func (s *serving) stop() {
	s.cancel()
	s.wg.Wait()
}

// transcript watches a session until it ends and returns its turns as
// "speaker: text" and its close reason.
func transcript(t *testing.T, ctx context.Context, c *agentsdk.Client, sessionID string) ([]string, string) {
	t.Helper()
	var turns []string
	end, err := c.Follow(ctx, sessionID, 1, func(e *hubpb.Envelope) error {
		if agentsdk.IsTurn(e) {
			turns = append(turns, e.GetFrom()+": "+agentsdk.TextOf(e))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("follow: %v (so far %v)", err, turns)
	}
	return turns, end.GetEnded().GetReason()
}

// calls records handler calls.
type calls struct {
	mu   sync.Mutex
	list []string
}

func (c *calls) add(format string, args ...any) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, fmt.Sprintf(format, args...))
	return len(c.list)
}

func (c *calls) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.list)
}

// TestServePipeline runs three agents with Serve through a pipeline: the
// invites are acknowledged, each agent is called once with the trigger and
// its view, and the session closes sequence_complete.
func TestServePipeline(t *testing.T) {
	h := hubtest.New(t)
	ctx := testCtx(t)
	names := []string{"researcher", "writer", "editor"}
	var clients []*agentsdk.Client
	for _, n := range names {
		clients = append(clients, dial(t, h.Addr(), n))
	}
	var got calls
	serve(t, ctx, clients, func(c *agentsdk.Client) agentsdk.Handler {
		return func(ctx context.Context, turn *agentsdk.Turn) (agentsdk.Reply, error) {
			var seen []string
			for _, it := range turn.View.GetItems() {
				seen = append(seen, it.GetFrom())
			}
			got.add("%s after %s(%s) seeing %v", c.Name(), turn.Trigger.GetType(), turn.Trigger.GetFrom(), seen)
			return agentsdk.ReplyText("notes from " + c.Name()), nil
		}
	})
	s, err := clients[0].OpenWorkflow(ctx, agentsdk.Sequence(names...), "writer", "editor")
	if err != nil {
		t.Fatal(err)
	}
	turns, reason := transcript(t, ctx, clients[0], s.ID())
	if want := []string{"researcher: notes from researcher", "writer: notes from writer", "editor: notes from editor"}; !slices.Equal(turns, want) || reason != "sequence_complete" {
		t.Errorf("turns %q reason %q", turns, reason)
	}
	want := []string{
		"researcher after session_opened() seeing []",
		"writer after text(researcher) seeing [researcher]",
		"editor after text(writer) seeing [researcher writer]",
	}
	if !slices.Equal(got.get(), want) {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(got.get(), "\n"), strings.Join(want, "\n"))
	}
}

// TestServeHandoff: a router hands off with packets by tool, specialists
// answer and revert, the router finishes; Serve posts packets.
func TestServeHandoff(t *testing.T) {
	h := hubtest.New(t)
	ctx := testCtx(t)
	router, billing, tech := dial(t, h.Addr(), "router"), dial(t, h.Addr(), "billing"), dial(t, h.Addr(), "tech")
	g := agentsdk.NewGraph("router").
		On(agentsdk.ToolCalled("transfer_to_billing"), agentsdk.ToAgent("billing")).
		On(agentsdk.ToolCalled("transfer_to_tech"), agentsdk.ToAgent("tech")).
		On(agentsdk.AnyOf(agentsdk.FromSpeaker("billing"), agentsdk.FromSpeaker("tech")), agentsdk.RevertToInitiator()).
		Otherwise(agentsdk.Terminate("triage_done")).
		WithMaxTurns(10)
	serve(t, ctx, []*agentsdk.Client{router, billing, tech}, func(c *agentsdk.Client) agentsdk.Handler {
		return func(ctx context.Context, turn *agentsdk.Turn) (agentsdk.Reply, error) {
			switch {
			case c.Name() != "router":
				return agentsdk.ReplyPacket(agentsdk.NewPacket(c.Name()+" fixed it").Set(c.Name()+"_done", true)), nil
			case turn.Trigger.GetFrom() == "":
				return agentsdk.ReplyPacket(agentsdk.NewPacket("billing first").Handoff("transfer_to_billing", "", "refund")), nil
			case turn.Trigger.GetFrom() == "billing":
				return agentsdk.ReplyPacket(agentsdk.NewPacket("now tech").Handoff("transfer_to_tech", "", "")), nil
			}
			return agentsdk.ReplyPacket(agentsdk.NewPacket("all done").Finish("resolved", "refund and fix")), nil
		}
	}, agentsdk.WithView("", 0))
	opened, err := router.Open(ctx, agentsdk.OpenOptions{Graph: g, Participants: agentsdk.Invited("billing", "tech")})
	if err != nil {
		t.Fatal(err)
	}
	turns, reason := transcript(t, ctx, router, opened.ID())
	want := []string{"router: billing first", "billing: billing fixed it", "router: now tech", "tech: tech fixed it", "router: all done"}
	if !slices.Equal(turns, want) || reason != "resolved" {
		t.Errorf("turns %q reason %q", turns, reason)
	}
	s, err := router.GetSession(ctx, opened.ID())
	if err != nil {
		t.Fatal(err)
	}
	var billingDone, techDone bool
	if _, err := s.Var("billing_done", &billingDone); err != nil || !billingDone {
		t.Errorf("billing_done: %s %v", js(t, s.SessionInfo), err)
	}
	if _, err := s.Var("tech_done", &techDone); err != nil || !techDone {
		t.Errorf("tech_done: %s %v", js(t, s.SessionInfo), err)
	}
}

// TestServeRejectsInvites: an InviteFunc that refuses closes the session
// with invite_rejected, its error's text logged as the reason.
func TestServeRejectsInvites(t *testing.T) {
	h := hubtest.New(t)
	ctx := testCtx(t)
	alice, bob := dial(t, h.Addr(), "alice"), dial(t, h.Addr(), "bob")
	serve(t, ctx, []*agentsdk.Client{bob}, func(*agentsdk.Client) agentsdk.Handler {
		return func(context.Context, *agentsdk.Turn) (agentsdk.Reply, error) {
			return agentsdk.Reply{}, errors.New("never called")
		}
	}, agentsdk.WithInvites(func(ctx context.Context, inv agentsdk.Invite) error {
		if !slices.Equal(inv.Invitees, []string{"bob"}) {
			return fmt.Errorf("odd invitees %v", inv.Invitees)
		}
		return errors.New("busy")
	}))
	info, err := alice.OpenWorkflow(ctx, agentsdk.Sequence("alice", "bob"), "bob")
	if err != nil {
		t.Fatal(err)
	}
	if _, reason := transcript(t, ctx, alice, info.ID()); reason != "invite_rejected" {
		t.Errorf("reason %q", reason)
	}
	log, err := bob.ReadLog(ctx, info.ID(), 2, 1)
	if err != nil || len(log) != 1 || log[0].GetEnded().GetReason() != "busy" {
		t.Errorf("reject %+v %v", log, err)
	}
}

// logs collects a client's diagnostics, and closes stale at the first
// report of a stale turn.
type logs struct {
	mu    sync.Mutex
	lines []string
	once  sync.Once
	stale chan struct{}
}

func (l *logs) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	line := fmt.Sprintf(format, args...)
	l.lines = append(l.lines, line)
	if strings.Contains(line, "stale turn") {
		l.once.Do(func() { close(l.stale) })
	}
}

func (l *logs) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestServeStaleTurn: a reply refused because the turn has passed is
// logged and dropped, and Serve goes on serving.
func TestServeStaleTurn(t *testing.T) {
	h := hubtest.New(t)
	ctx := testCtx(t)
	bobLogs := logs{stale: make(chan struct{})}
	alice, carol := dial(t, h.Addr(), "alice"), dial(t, h.Addr(), "carol")
	bob := dial(t, h.Addr(), "bob", func(o *agentsdk.Options) { o.Logf = bobLogs.logf })
	var got calls
	serve(t, ctx, []*agentsdk.Client{alice, bob, carol}, func(c *agentsdk.Client) agentsdk.Handler {
		return func(ctx context.Context, turn *agentsdk.Turn) (agentsdk.Reply, error) {
			got.add("%s", c.Name())
			if c.Name() == "bob" {
				// Bob answers by hand, so the reply Serve posts is stale.
				if _, err := c.SendText(ctx, turn.SessionID, "by hand"); err != nil {
					return agentsdk.Reply{}, err
				}
				return agentsdk.ReplyText("too late"), nil
			}
			if c.Name() == "carol" { // only once bob's stale reply was refused
				select {
				case <-bobLogs.stale:
				case <-ctx.Done():
				}
			}
			return agentsdk.ReplyText("from " + c.Name()), nil
		}
	}, agentsdk.WithView("", 0))
	info, err := alice.Open(ctx, agentsdk.OpenOptions{Graph: agentsdk.Sequence("alice", "bob", "carol"), Participants: agentsdk.AutoAccepted("bob", "carol")})
	if err != nil {
		t.Fatal(err)
	}
	turns, reason := transcript(t, ctx, alice, info.ID())
	if want := []string{"alice: from alice", "bob: by hand", "carol: from carol"}; !slices.Equal(turns, want) || reason != "sequence_complete" {
		t.Errorf("turns %q reason %q", turns, reason)
	}
	if !slices.Equal(got.get(), []string{"alice", "bob", "carol"}) {
		t.Errorf("calls %v", got.get())
	}
	if l := bobLogs.text(); !strings.Contains(l, "stale turn") || !strings.Contains(l, "OUT_OF_TURN") {
		t.Errorf("bob's log does not report the stale turn:\n%s", l)
	}
}

// TestServeRestart restarts the hub on the same data dir and address in
// the middle of a round robin: every agent resubscribes, the held reply is
// posted once, and all nine turns are taken exactly once each, in order.
func TestServeRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := testCtx(t)
	h := startAt(t, ctx, "", dir)
	addr := h.Addr()
	names := []string{"a", "b", "c"}
	var clients []*agentsdk.Client
	for _, n := range names {
		clients = append(clients, dial(t, addr, n))
	}
	var got calls
	var reconnects calls
	held, release := make(chan struct{}), make(chan struct{})
	s := serve(t, ctx, clients, func(c *agentsdk.Client) agentsdk.Handler {
		return func(ctx context.Context, turn *agentsdk.Turn) (agentsdk.Reply, error) {
			n := got.add("%s@%d", c.Name(), turn.Trigger.GetSeq())
			if n == 5 { // b's second turn waits for the restart
				close(held)
				select {
				case <-release:
				case <-ctx.Done():
					return agentsdk.Reply{}, ctx.Err()
				}
			}
			return agentsdk.ReplyText(fmt.Sprintf("turn %d", n)), nil
		}
	}, agentsdk.WithReconnectHook(func(err error) { reconnects.add("%v", err) }), agentsdk.WithBackoff(20*time.Millisecond, 500*time.Millisecond))
	info, err := clients[0].OpenWorkflow(ctx, agentsdk.RoundRobin(names, 9), "b", "c")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatalf("no fifth turn: %v", got.get())
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h = startAt(t, ctx, addr, dir)
	defer h.Close()
	close(release)

	turns, reason := transcript(t, ctx, clients[0], info.ID())
	s.stop()
	var want []string
	for i := range 9 {
		want = append(want, fmt.Sprintf("%s: turn %d", names[i%3], i+1))
	}
	if !slices.Equal(turns, want) || reason != "max_turns" {
		t.Errorf("turns %q reason %q", turns, reason)
	}
	// Triggers: the open (seq 4, after the invite and two acks), then each
	// turn's seq.
	wantCalls := []string{"a@4", "b@5", "c@6", "a@7", "b@8", "c@9", "a@10", "b@11", "c@12"}
	if !slices.Equal(got.get(), wantCalls) {
		t.Errorf("calls %v, want %v", got.get(), wantCalls)
	}
	if len(reconnects.get()) < len(names) {
		t.Errorf("reconnects %v: every agent's stream should have broken", reconnects.get())
	}
}

// cutoffWatch reports the hub's "slow subscriber cut off" log line.
type cutoffWatch struct {
	once sync.Once
	cut  chan struct{}
}

func (w *cutoffWatch) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("slow subscriber cut off")) {
		w.once.Do(func() { close(w.cut) })
	}
	return len(p), nil
}

// TestServeSlowSubscriber: an agent that stops reading is cut off by the
// hub (SLOW_SUBSCRIBER); Serve resubscribes from its cursor, sees every
// envelope once, and still takes the turn that was lost with the stream.
func TestServeSlowSubscriber(t *testing.T) {
	watch := &cutoffWatch{cut: make(chan struct{})}
	o := hubtest.Options{Logger: zerolog.New(watch)}
	o.Feed.SubscriberBuffer = 1
	h := hubtest.New(t, o)
	ctx := testCtx(t)
	alice := dial(t, h.Addr(), "alice")
	// Fixed flow-control windows, so a reader that stops stalls the hub.
	bob := dial(t, h.Addr(), "bob", func(o *agentsdk.Options) {
		o.DialOptions = []grpc.DialOption{grpc.WithInitialWindowSize(1 << 16), grpc.WithInitialConnWindowSize(1 << 16)}
	})
	blocked, release, ended := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var seen []*hubpb.Delivery // only the reader appends, until ended
	var reconnects, got calls
	observe := func(d *hubpb.Delivery) {
		seen = append(seen, d)
		if agentsdk.Ends(d.GetEnvelope()) {
			close(ended)
		}
		if e := d.GetEnvelope(); e.GetType() == "note" && len(e.GetCustom()) == 1 {
			close(blocked)
			<-release
		}
	}
	s := serve(t, ctx, []*agentsdk.Client{bob}, func(*agentsdk.Client) agentsdk.Handler {
		return func(ctx context.Context, turn *agentsdk.Turn) (agentsdk.Reply, error) {
			got.add("%d", turn.Trigger.GetSeq())
			return agentsdk.ReplyText("got " + turn.Text()), nil
		}
	}, agentsdk.WithObserver(observe), agentsdk.WithReconnectHook(func(err error) { reconnects.add("%v", err) }), agentsdk.WithView("", 0))
	info, err := alice.Open(ctx, agentsdk.OpenOptions{Graph: agentsdk.Sequence("alice", "bob"), Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.SendEvent(ctx, info.ID(), "note", []byte{1}); err != nil {
		t.Fatal(err)
	}
	<-blocked
	big := bytes.Repeat([]byte("x"), 32<<10)
	for range 40 {
		if _, err := alice.SendEvent(ctx, info.ID(), "note", big); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := alice.SendText(ctx, info.ID(), "the report"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-watch.cut:
	case <-ctx.Done():
		t.Fatal("the hub never cut bob off")
	}
	close(release)
	turns, reason := transcript(t, ctx, alice, info.ID())
	select { // bob may take the turn (from PendingTurns) before reading the catch-up
	case <-ended:
	case <-ctx.Done():
		t.Fatal("bob never saw the close")
	}
	s.stop()
	if want := []string{"alice: the report", "bob: got the report"}; !slices.Equal(turns, want) || reason != "sequence_complete" {
		t.Errorf("turns %q reason %q", turns, reason)
	}
	if len(got.get()) != 1 {
		t.Errorf("handler calls %v", got.get())
	}
	r := reconnects.get()
	if len(r) == 0 || !strings.Contains(r[0], "SLOW_SUBSCRIBER") {
		t.Errorf("reconnects %v", r)
	}
	// Every envelope bob may see, once, in order (a turn may be re-told).
	log, err := bob.ReadLog(ctx, info.ID(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want, have []uint64
	for _, e := range log {
		if e.GetFrom() != "bob" {
			want = append(want, e.GetSeq())
		}
	}
	for _, d := range seen {
		seq := d.GetEnvelope().GetSeq()
		if n := len(have); n > 0 && seq <= have[n-1] {
			if !d.GetYourTurn() {
				t.Errorf("seq %d delivered again after %d", seq, have[n-1])
			}
			continue
		}
		have = append(have, seq)
	}
	if !slices.Equal(have, want) {
		t.Errorf("bob saw %v, want %v", have, want)
	}
}

// TestIdempotentAcrossRestart: a send repeated with its client message id
// after the hub restarted is answered with the original seq, which is what
// makes Serve's reply posts safe to retry.
func TestIdempotentAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := testCtx(t)
	h := startAt(t, ctx, "", dir)
	addr := h.Addr()
	alice := dial(t, addr, "alice")
	info := openPipeline(t, ctx, alice)
	id := agentsdk.TurnMsgID(info.ID(), 2)
	first, err := alice.SendText(ctx, info.ID(), "findings", agentsdk.WithClientMsgID(id))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h = startAt(t, ctx, addr, dir)
	defer h.Close()
	again, err := alice.SendText(ctx, info.ID(), "findings", agentsdk.WithClientMsgID(id))
	if err != nil {
		t.Fatal(err)
	}
	if !again.GetDuplicate() || again.GetSeq() != first.GetSeq() || again.GetId() != first.GetId() ||
		!again.GetAcceptedAt().AsTime().Equal(first.GetAcceptedAt().AsTime()) || again.ClientMsgID != id {
		t.Errorf("first %s, again %s", js(t, first.SendResponse), js(t, again.SendResponse))
	}
}

// TestServeViewFromTheNotice: Serve asks for the view in the turn notices
// and hands the handler the very view a notice carried (no View call
// before the handler), the view the hub gives on a GetView as well.
func TestServeViewFromTheNotice(t *testing.T) {
	h := hubtest.New(t)
	ctx := testCtx(t)
	names := []string{"first", "second"}
	var clients []*agentsdk.Client
	for _, n := range names {
		clients = append(clients, dial(t, h.Addr(), n))
	}
	var mu sync.Mutex
	told := map[string]*hubpb.View{} // by agent and trigger seq
	key := func(agent string, seq uint64) string { return fmt.Sprintf("%s/%d", agent, seq) }
	var got calls
	for _, c := range clients {
		observe := agentsdk.WithObserver(func(d *hubpb.Delivery) {
			if d.GetYourTurn() {
				mu.Lock()
				told[key(c.Name(), d.GetEnvelope().GetSeq())] = d.GetView()
				mu.Unlock()
			}
		})
		serve(t, ctx, []*agentsdk.Client{c}, func(c *agentsdk.Client) agentsdk.Handler {
			return func(ctx context.Context, turn *agentsdk.Turn) (agentsdk.Reply, error) {
				mu.Lock()
				v, ok := told[key(c.Name(), turn.Trigger.GetSeq())]
				mu.Unlock()
				switch {
				case !ok:
					got.add("%s: turn %d not told on the stream", c.Name(), turn.Trigger.GetSeq())
				case v == nil || v != turn.View:
					got.add("%s: the handler's view is not the notice's (%p, %p)", c.Name(), v, turn.View)
				default:
					fresh, err := c.View(ctx, turn.SessionID, agentsdk.ViewOptions{Name: agentsdk.ViewDefault})
					if err != nil || !proto.Equal(fresh, turn.View) {
						got.add("%s: the notice's view %v, GetView %v (%v)", c.Name(), turn.View, fresh, err)
					} else {
						got.add("%s: view of %d items from the notice", c.Name(), len(turn.View.GetItems()))
					}
				}
				return agentsdk.ReplyText("from " + c.Name()), nil
			}
		}, observe)
	}
	s, err := clients[0].OpenWorkflow(ctx, agentsdk.Sequence(names...), "second")
	if err != nil {
		t.Fatal(err)
	}
	if _, reason := transcript(t, ctx, clients[0], s.ID()); reason != "sequence_complete" {
		t.Errorf("closed %q", reason)
	}
	want := []string{"first: view of 0 items from the notice", "second: view of 1 items from the notice"}
	if !slices.Equal(got.get(), want) {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(got.get(), "\n"), strings.Join(want, "\n"))
	}
}

// received records the deliveries a client's streams bring over the wire
// (agent-stream frames and Subscribe messages alike), as "type" or "type
// [your turn]".
type received struct{ calls }

func (r *received) dialOption() grpc.DialOption {
	return grpc.WithStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		return &recordingStream{ClientStream: s, r: r}, nil
	})
}

type recordingStream struct {
	grpc.ClientStream
	r *received
}

func (s *recordingStream) RecvMsg(m any) error {
	if err := s.ClientStream.RecvMsg(m); err != nil {
		return err
	}
	var d *hubpb.Delivery
	switch m := m.(type) {
	case *hubpb.HubFrame:
		d = m.GetDelivery()
	case *hubpb.Delivery:
		d = m
	}
	if d != nil {
		if d.GetYourTurn() {
			s.r.add("%s [your turn]", d.GetEnvelope().GetType())
		} else {
			s.r.add("%s", d.GetEnvelope().GetType())
		}
	}
	return nil
}

// TestServeTerse: without an observer, Serve's stream brings the agent
// only what it acts on (its turn and the session's end, not the invite
// that does not name it, the opening, a note or the others' texts), over
// either transport; WithSessionEnd is
// told of the end; WithObserver brings everything addressed to the agent.
func TestServeTerse(t *testing.T) {
	h := hubtest.New(t)
	for _, tc := range []struct {
		name      string
		transport string
		observe   bool
		want      []string
	}{
		{"stream", agentsdk.TransportStream, false, []string{"text [your turn]", "session_closed"}},
		{"unary", agentsdk.TransportUnary, false, []string{"text [your turn]", "session_closed"}},
		{"observer", agentsdk.TransportStream, true, []string{"session_invite", "session_opened", "note", "text [your turn]", "text", "session_closed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			var wire received
			alice := dial(t, h.Addr(), "alice")
			bob := dial(t, h.Addr(), "bob", func(o *agentsdk.Options) {
				o.Transport = tc.transport
				o.DialOptions = append(o.DialOptions, wire.dialOption())
			})
			carol := dial(t, h.Addr(), "carol")
			ended := make(chan *hubpb.Envelope, 1)
			opts := []agentsdk.ServeOption{agentsdk.WithSessionEnd(func(e *hubpb.Envelope) { ended <- e })}
			var observed calls
			if tc.observe {
				opts = append(opts, agentsdk.WithObserver(func(d *hubpb.Delivery) { observed.add("%s", d.GetEnvelope().GetType()) }))
			}
			reply := func(c *agentsdk.Client) agentsdk.Handler {
				return func(context.Context, *agentsdk.Turn) (agentsdk.Reply, error) {
					return agentsdk.ReplyText("from " + c.Name()), nil
				}
			}
			serve(t, ctx, []*agentsdk.Client{bob}, reply, opts...)
			serve(t, ctx, []*agentsdk.Client{carol}, reply)
			s := openPipeline(t, ctx, alice)
			if _, err := alice.SendEvent(ctx, s.ID(), "note", []byte("aside")); err != nil {
				t.Fatal(err)
			}
			if _, err := alice.SendText(ctx, s.ID(), "go"); err != nil {
				t.Fatal(err)
			}
			select {
			case e := <-ended:
				if e.GetSessionId() != s.ID() || e.GetType() != agentsdk.EventClosed {
					t.Errorf("WithSessionEnd got %s", js(t, e))
				}
			case <-ctx.Done():
				t.Fatal("WithSessionEnd was not called")
			}
			if got := wire.get(); !slices.Equal(got, tc.want) {
				t.Errorf("bob's stream brought %q, want %q", got, tc.want)
			}
			if tc.observe && !slices.Equal(observed.get(), []string{"session_invite", "session_opened", "note", "text", "text", "session_closed"}) {
				t.Errorf("the observer saw %q", observed.get())
			}
		})
	}
}
