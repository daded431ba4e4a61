package hub_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/fakeclock"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

// TestScripts runs the whole-hub interaction scripts under
// testdata/scripts (github.com/cockroachdb/datadriven; -rewrite
// regenerates the expected output). Envelopes and open requests are given,
// and envelopes printed, in the one JSON form (hubpb.MarshalJSON). After
// each script every session is rebuilt from the log by a fresh hub, and
// its snapshot must equal the live one byte for byte.
//
// Commands (sessions are named s1, s2, ... in the order they were opened;
// an agent named "" is written as ""):
//
//	config [subscriber_buffer=N] [max_open_per_agent=N] [max_depth=N] [max_envelope_bytes=N] [invite_timeout=D]
//	    restart the hub with these limits
//	open CREATOR type=KIND@V [with=(A,B)] [auto=(A,B)] [sequence=(A,B)] [round_robin=N] [parent=S] [key=K]
//	    input: more of the hubpb.OpenRequest (labels, ttl, expectations, graph, knobs)
//	send AGENT S      input: the hubpb.Envelope
//	ack AGENT S | reject AGENT S [REASON...] | close AGENT S [REASON...]
//	advance D         move the fake clock (timers fire)
//	subscribe AGENT [ended] [S=SEQ ...] | watch AGENT S [FROM] | drain NAME
//	state S | log S [FROM] | pending AGENT | view AGENT S [NAME [WINDOW]] [history=H]
//	list AGENT [state=STATE] [labels=(K=V,...)]  (AGENT "operator" sees all)
//	delegate AGENT S [mode=M] [await=A] [notify=N] [key=K]
//	    input: one hubpb.OpenRequest per line, a child each (named on)
//	answer AGENT S [operator] [key=K]   input: the hubpb.Answer
//	questions AGENT [operator] [answerer=A] [root=S]
//	steer AGENT S [operator]   input: the hubpb.OperatorAction
//	info S | tree S | replay S | deadlines S
//	watch AGENT S [FROM] [tree] [verbose]  (AGENT "operator" sees all)
//	stop | start | restart | fail-append N | lose-ack N
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/scripts", func(t *testing.T, path string) {
		r := &runner{names: map[string]session.ID{}, subs: map[string]*feed.Subscription{}}
		r.env = newEnv(t, nil)
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			return r.run(t, td)
		})
		r.checkReplay(t)
	})
}

type runner struct {
	env   *env
	names map[string]session.ID // s1, s2, ... in open order
	order []string
	subs  map[string]*feed.Subscription
}

// id returns the session a script names; an unknown name is an unknown
// session.
func (r *runner) id(name string) session.ID {
	if id, ok := r.names[name]; ok {
		return id
	}
	return session.ID{0xde, 0xad}
}

// nameOf returns the script's name of a session id.
func (r *runner) nameOf(id string) string {
	for _, n := range r.order {
		if r.names[n].String() == id {
			return n
		}
	}
	return id
}

// positional returns the command's arguments that have no value, with the
// agent spelled "" as the empty string.
func positional(td *datadriven.TestData) []string {
	var out []string
	for _, a := range td.CmdArgs {
		if len(a.Vals) == 0 {
			out = append(out, strings.Trim(a.Key, `"`))
		}
	}
	return out
}

// arg returns the values of a key=value argument.
func arg(td *datadriven.TestData, key string) []string {
	a, _ := td.Arg(key)
	return a.Vals
}

func (r *runner) run(t *testing.T, td *datadriven.TestData) string {
	ctx := context.Background()
	h := r.env.hub
	args := positional(td)
	need := func(n int) {
		if len(args) < n {
			td.Fatalf(t, "%s needs %d arguments", td.Cmd, n)
		}
	}
	switch td.Cmd {
	case "config":
		return r.config(t, td)
	case "open":
		need(1)
		return r.open(args[0], td)
	case "send":
		need(2)
		var e hubpb.Envelope
		if err := hubpb.UnmarshalJSON([]byte(td.Input), &e); err != nil {
			return "bad envelope: " + err.Error()
		}
		return ackLine(h.Send(ctx, args[0], r.id(args[1]), &e))
	case "ack":
		need(2)
		return ackLine(h.AckInvite(ctx, args[0], r.id(args[1])))
	case "reject":
		need(2)
		return ackLine(h.RejectInvite(ctx, args[0], r.id(args[1]), strings.Join(args[2:], " ")))
	case "close":
		need(2)
		return ackLine(h.CloseSession(ctx, args[0], false, r.id(args[1]), strings.Join(args[2:], " ")))
	case "advance":
		need(1)
		d, err := time.ParseDuration(args[0])
		if err != nil {
			td.Fatalf(t, "advance: %v", err)
		}
		r.env.clock.Advance(d) // with the hub stopped, time passes while it is down
		return fmt.Sprintf("now +%v", r.env.clock.Now().Sub(epoch))
	case "subscribe":
		need(1)
		return r.subscribe(td, args[0])
	case "watch":
		need(2)
		return r.watch(args)
	case "drain":
		need(1)
		return r.drain(args[0])
	case "state":
		need(1)
		return r.state(args[0])
	case "log":
		need(1)
		return r.log(args)
	case "pending":
		need(1)
		return r.pending(args[0])
	case "view":
		need(2)
		return r.view(td, args)
	case "list":
		need(1)
		return r.list(td, args[0])
	case "delegate":
		need(2)
		return r.delegate(td, args[0], args[1])
	case "answer":
		need(2)
		return r.answer(td, args)
	case "steer":
		need(2)
		return r.steer(td, args)
	case "questions":
		need(1)
		return r.questions(td, args)
	case "info":
		need(1)
		return r.info(args[0])
	case "tree":
		need(1)
		return r.tree(args[0])
	case "replay":
		need(1)
		return r.replay(args[0])
	case "deadlines":
		need(1)
		return r.deadlines(args[0])
	case "stop":
		r.env.shutdown()
		return "stopped"
	case "start":
		r.env.open()
		return fmt.Sprintf("started: %d quarantined", len(r.env.hub.Quarantined()))
	case "restart":
		r.env.restart()
		return fmt.Sprintf("restarted: %d quarantined", len(r.env.hub.Quarantined()))
	case "fail-append", "lose-ack":
		need(1)
		n, err := strconv.Atoi(args[0])
		if err != nil {
			td.Fatalf(t, "%s: %v", td.Cmd, err)
		}
		if td.Cmd == "fail-append" {
			r.env.log.failNth(n)
		} else {
			r.env.log.loseNth(n)
		}
		return "armed"
	}
	td.Fatalf(t, "unknown command %q", td.Cmd)
	return ""
}

// config restarts the hub with new limits; unset ones are defaults.
func (r *runner) config(t *testing.T, td *datadriven.TestData) string {
	c, fc := &r.env.cfg, &r.env.feedCfg
	fc.SubscriberBuffer, c.MaxOpenPerAgent, c.MaxDepth, c.MaxEnvelopeBytes, c.InviteTimeout = 0, 0, 0, 0, 0
	td.MaybeScanArgs(t, "subscriber_buffer", &fc.SubscriberBuffer)
	td.MaybeScanArgs(t, "max_open_per_agent", &c.MaxOpenPerAgent)
	td.MaybeScanArgs(t, "max_depth", &c.MaxDepth)
	td.MaybeScanArgs(t, "max_envelope_bytes", &c.MaxEnvelopeBytes)
	if v := arg(td, "invite_timeout"); len(v) == 1 {
		d, err := time.ParseDuration(v[0])
		if err != nil {
			td.Fatalf(t, "invite_timeout: %v", err)
		}
		c.InviteTimeout = d
	}
	r.env.restart()
	return "restarted with config"
}

// open opens a session: the input is the rest of the hubpb.OpenRequest.
func (r *runner) open(creator string, td *datadriven.TestData) string {
	req := &hubpb.OpenRequest{}
	if td.Input != "" {
		if err := hubpb.UnmarshalJSON([]byte(td.Input), req); err != nil {
			return "bad open request: " + err.Error()
		}
	}
	if v := arg(td, "type"); len(v) == 1 {
		req.Type = v[0]
	}
	auto := arg(td, "auto")
	for _, n := range arg(td, "with") {
		req.Participants = append(req.Participants, &hubpb.Participant{Name: n, AutoAccept: slices.Contains(auto, n)})
	}
	if err := r.graph(td, creator, req); err != nil {
		return "bad open request: " + err.Error()
	}
	if v := arg(td, "parent"); len(v) == 1 {
		req.ParentSessionId = r.id(v[0]).String()
	}
	if v := arg(td, "key"); len(v) == 1 {
		req.IdempotencyKey = v[0]
	}
	o, err := r.env.hub.Open(context.Background(), creator, req)
	if err != nil {
		return errLine(err)
	}
	id := o.GetSession().GetMeta().GetSessionId()
	if o.GetExisting() {
		return fmt.Sprintf("%s %s (existing)", r.nameOf(id), o.GetSession().GetState())
	}
	name := fmt.Sprintf("s%d", len(r.order)+1)
	r.names[name] = session.MustParseID(id)
	r.order = append(r.order, name)
	return fmt.Sprintf("%s %s", name, o.GetSession().GetState())
}

// graph sets the request's graph from the sequence or round_robin
// argument.
func (r *runner) graph(td *datadriven.TestData, creator string, req *hubpb.OpenRequest) error {
	var g *transition.Graph
	if steps := arg(td, "sequence"); steps != nil {
		g = transition.Sequence(steps...)
	}
	if v := arg(td, "round_robin"); len(v) == 1 {
		n, err := strconv.Atoi(v[0])
		if err != nil {
			return err
		}
		g = transition.RoundRobin(append([]string{creator}, arg(td, "with")...), n)
	}
	if g == nil {
		return nil
	}
	b, err := g.MarshalJSON()
	if err != nil {
		return err
	}
	req.Graph = &structpb.Struct{}
	return hubpb.UnmarshalJSON(b, req.Graph)
}

// errLine prints an error as its stable reason and its detail.
func errLine(err error) string {
	if r, ok := session.ReasonOf(err); ok {
		return fmt.Sprintf("error %s: %s", r, session.Detail(err))
	}
	return "error: " + err.Error()
}

func ackLine(a *hubpb.SendResponse, err error) string {
	if err != nil {
		return errLine(err)
	}
	s := fmt.Sprintf("ack seq=%d", a.GetSeq())
	if a.GetDuplicate() {
		s += " duplicate"
	}
	if a.GetClosed() {
		s += " closed=" + a.GetCloseReason()
	}
	return s
}

func (r *runner) subscribe(td *datadriven.TestData, agent string) string {
	opts := feed.SubscribeOptions{Cursors: map[session.ID]uint64{}}
	for _, a := range td.CmdArgs {
		switch {
		case a.Key == "ended":
			opts.Ended = true
		case a.Key == "terse":
			opts.Terse = true
		case len(a.Vals) == 1:
			n, _ := strconv.ParseUint(a.Vals[0], 10, 64)
			opts.Cursors[r.id(a.Key)] = n
		}
	}
	if old := r.subs[agent]; old != nil {
		old.Close()
	}
	sub, err := r.env.hub.Subscribe(context.Background(), agent, opts)
	if err != nil {
		return errLine(err)
	}
	r.subs[agent] = sub
	return "subscribed"
}

func (r *runner) watch(args []string) string {
	opts := feed.WatchOptions{From: 1}
	for _, a := range args[2:] {
		switch a {
		case "tree":
			opts.Tree = true
		case "verbose":
			opts.Verbose = true
		default:
			opts.From, _ = strconv.ParseUint(a, 10, 64)
		}
	}
	sub, err := r.env.hub.Watch(context.Background(), args[0], args[0] == "operator", r.id(args[1]), opts)
	if err != nil {
		return errLine(err)
	}
	name := "watch:" + args[1]
	for _, a := range args[2:] {
		if a == "tree" || a == "verbose" {
			name += ":" + a
		}
	}
	r.subs[name] = sub
	return "watching as " + name
}

// drain prints every delivery available now, without waiting.
func (r *runner) drain(name string) string {
	sub := r.subs[name]
	if sub == nil {
		return "no subscription " + name
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	var b strings.Builder
	for {
		d, err := sub.Next(done)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				b.WriteString("ended: " + errLine(err) + "\n")
				delete(r.subs, name)
			}
			break
		}
		b.WriteString(r.delivery(d))
	}
	if b.Len() == 0 {
		return "(nothing)"
	}
	return b.String()
}

func (r *runner) delivery(d *hubpb.Delivery) string {
	s := r.envLine(d.GetEnvelope())
	if d.GetYourTurn() {
		s = strings.TrimSuffix(s, "\n") + " [your turn]\n"
	}
	return s
}

// envLine prints an envelope on one line: session#seq, time since the
// epoch, sender, type, restricted audience, depth in the call tree (when
// not 0), then the rest of the envelope (payload, client message id, ...)
// in the one JSON form.
func (r *runner) envLine(e *hubpb.Envelope) string {
	from := e.GetFrom()
	if from == "" {
		from = "hub"
	}
	to := ""
	if a := e.GetAudience(); a != nil {
		to = " to=" + strings.Join(a.GetNames(), ",")
	}
	if d := e.GetCall().GetDepth(); d > 0 {
		to += fmt.Sprintf(" depth=%d", d)
	}
	rest := proto.CloneOf(e)
	rest.SessionId, rest.Seq, rest.Id, rest.From, rest.Type, rest.Audience, rest.AcceptedAt, rest.Call = "", 0, "", "", "", nil, nil, nil
	data, err := hubpb.MarshalJSON(rest)
	if err != nil {
		data = []byte("marshal: " + err.Error())
	}
	body := ""
	if string(data) != "{}" {
		body = " " + string(data)
	}
	at := session.Time(e.GetAcceptedAt()).Sub(epoch)
	return fmt.Sprintf("%s#%d +%v %s %s%s%s\n", r.nameOf(e.GetSessionId()), e.GetSeq(), at, from, e.GetType(), to, body)
}

func (r *runner) state(name string) string {
	info, err := r.env.hub.Get(context.Background(), "", true, r.id(name))
	if err != nil {
		return errLine(err)
	}
	vars, err := hubpb.MarshalJSON(&structpb.Struct{Fields: info.GetContext()})
	if err != nil {
		return "context: " + err.Error()
	}
	s := fmt.Sprintf("%s seq=%d turn=%d expected=%s context=%s", info.GetState(), info.GetSeq(), info.GetTurn(),
		strings.Join(info.GetExpected(), ","), vars)
	if reason := info.GetCloseReason(); reason != "" {
		s += " reason=" + reason
	}
	return s
}

func (r *runner) log(args []string) string {
	from := uint64(1)
	if len(args) > 1 {
		from, _ = strconv.ParseUint(args[1], 10, 64)
	}
	es, _, err := r.env.hub.ReadLog(context.Background(), "", true, r.id(args[0]), from, 0)
	if err != nil {
		return errLine(err)
	}
	if len(es) == 0 {
		return "(nothing)"
	}
	var b strings.Builder
	for _, e := range es {
		b.WriteString(r.envLine(e))
	}
	return b.String()
}

func (r *runner) pending(agent string) string {
	ds, err := r.env.hub.PendingTurns(context.Background(), agent)
	if err != nil {
		return errLine(err)
	}
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(r.delivery(d))
	}
	return b.String() + fmt.Sprintf("%d pending", len(ds))
}

func (r *runner) view(td *datadriven.TestData, args []string) string {
	opts := feed.ViewOptions{}
	if v := arg(td, "history"); len(v) == 1 {
		opts.History = v[0]
	}
	if len(args) > 2 {
		opts.Name = args[2]
	}
	if len(args) > 3 {
		opts.Window, _ = strconv.Atoi(args[3])
	}
	v, err := r.env.hub.View(context.Background(), args[0], r.id(args[1]), opts)
	if err != nil {
		return errLine(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "view %s: %d items", v.GetName(), len(v.GetItems()))
	if v.GetOlderTotal() > 0 {
		fmt.Fprintf(&b, ", %d older:", v.GetOlderTotal())
		for _, c := range v.GetOlder() {
			fmt.Fprintf(&b, " %s×%d", c.GetSpeaker(), c.GetCount())
		}
	}
	b.WriteString("\n")
	for _, it := range v.GetItems() {
		fmt.Fprintf(&b, "  %s#%d %s: %s\n", r.nameOf(it.GetSessionId()), it.GetSeq(), it.GetFrom(), it.GetText())
	}
	return b.String()
}

func (r *runner) list(td *datadriven.TestData, agent string) string {
	f := feed.Filter{}
	if v := arg(td, "state"); len(v) == 1 {
		st, err := session.ParseState(v[0])
		if err != nil {
			return errLine(err)
		}
		f.State = st
	}
	for _, kv := range arg(td, "labels") {
		k, v, _ := strings.Cut(kv, "=")
		if f.Labels == nil {
			f.Labels = map[string]string{}
		}
		f.Labels[k] = v
	}
	infos, _, err := r.env.hub.List(context.Background(), agent, agent == "operator", f)
	if err != nil {
		return errLine(err)
	}
	var names []string
	for _, i := range infos {
		names = append(names, fmt.Sprintf("%s:%s", r.nameOf(i.GetMeta().GetSessionId()), i.GetState()))
	}
	return strings.TrimSpace(fmt.Sprintf("%d: %s", len(infos), strings.Join(names, " ")))
}

// checkReplay hydrates a second hub from the same log and compares every
// session's snapshot (its whole folded state) with the live hub's.
func (r *runner) checkReplay(t *testing.T) {
	t.Helper()
	e := r.env
	if e.hub == nil {
		e.open()
	}
	cfg := e.cfg
	cfg.Log = e.log.Log
	cfg.Clock = fakeclock.New(e.clock.Now()) // never advanced: no timer fires
	fresh, err := openServed(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if q := fresh.Quarantined(); len(q) > 0 {
		t.Errorf("replay quarantined %v", q)
	}
	ctx := context.Background()
	for _, n := range r.order {
		live, err1 := e.hub.Snapshot(ctx, r.names[n])
		again, err2 := fresh.Snapshot(ctx, r.names[n])
		if err1 != nil || err2 != nil {
			t.Errorf("replay %s: %v / %v", n, err1, err2)
			continue
		}
		if !bytes.Equal(live, again) {
			t.Errorf("replay of %s differs:\nlive:   %s\nreplay: %s", n, live, again)
		}
	}
}
