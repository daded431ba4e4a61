package hub_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/internal/fakeclock"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/scripts")

// TestScripts runs the whole-hub interaction scripts under
// testdata/scripts. A script is a list of commands, each a line "> cmd
// args", followed by its expected output. After each script the sessions
// are rebuilt from the log by a fresh hub and must equal the live ones.
func TestScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/scripts/*.txt")
	if len(files) == 0 {
		t.Fatal("no scripts")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			r := &runner{t: t, names: map[string]session.ID{}, subs: map[string]*hub.Subscription{}}
			r.env = newEnv(t, nil)
			var out strings.Builder
			for _, blk := range parseBlocks(string(data)) {
				out.WriteString(blk.pre)
				if blk.cmd == "" {
					continue
				}
				got := r.run(blk.cmd)
				out.WriteString("> " + blk.cmd + "\n" + got)
				if !*rewrite && got != blk.want {
					t.Errorf("%s: > %s\n--- got ---\n%s--- want ---\n%s", file, blk.cmd, got, blk.want)
				}
			}
			r.checkReplay()
			if *rewrite {
				if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

type block struct {
	pre  string // comments and blank lines before the command
	cmd  string
	want string
}

func parseBlocks(text string) []block {
	var out []block
	cur := block{}
	inWant := false
	for _, line := range strings.SplitAfter(text, "\n") {
		if line == "" {
			continue
		}
		trim := strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(trim, "> "):
			if cur.cmd != "" || cur.pre != "" {
				out = append(out, cur)
			}
			cur = block{cmd: strings.TrimPrefix(trim, "> ")}
			inWant = true
		case inWant && (trim == "" || strings.HasPrefix(trim, "#")):
			out = append(out, cur)
			cur = block{pre: line}
			inWant = false
		case inWant:
			cur.want += line
		default:
			cur.pre += line
		}
	}
	if cur.cmd != "" || cur.pre != "" {
		out = append(out, cur)
	}
	return out
}

type runner struct {
	t     *testing.T
	env   *env
	names map[string]session.ID // s1, s2, ... in open order
	order []string
	subs  map[string]*hub.Subscription
}

func (r *runner) id(name string) session.ID {
	if id, ok := r.names[name]; ok {
		return id
	}
	return session.ID{0xde, 0xad} // an unknown session
}

func (r *runner) nameOf(id session.ID) string {
	for _, n := range r.order {
		if r.names[n] == id {
			return n
		}
	}
	return id.String()
}

func (r *runner) run(cmd string) string {
	verb, rest, _ := strings.Cut(cmd, " ")
	args := strings.Fields(rest)
	ctx := context.Background()
	h := r.env.hub
	switch verb {
	case "open":
		creator, spec, _ := strings.Cut(rest, " ")
		return r.open(creator, spec)
	case "send":
		agent, rest2, _ := strings.Cut(rest, " ")
		name, body, _ := strings.Cut(rest2, " ")
		var e session.Envelope
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			return errLine(err)
		}
		return ackLine(h.Send(ctx, agent, r.id(name), &e))
	case "ack":
		return ackLine(h.AckInvite(ctx, args[0], r.id(args[1])))
	case "reject":
		return ackLine(h.RejectInvite(ctx, args[0], r.id(args[1]), strings.Join(args[2:], " ")))
	case "close":
		return ackLine(h.CloseSession(ctx, args[0], false, r.id(args[1]), strings.Join(args[2:], " ")))
	case "advance":
		d, err := time.ParseDuration(args[0])
		if err != nil {
			return errLine(err)
		}
		if r.env.hub == nil {
			r.env.clock.Advance(d) // time passes while the hub is down
		} else {
			r.env.clock.Advance(d)
		}
		return fmt.Sprintf("now +%v\n", r.env.clock.Now().Sub(epoch))
	case "subscribe":
		return r.subscribe(args)
	case "watch":
		from := uint64(1)
		if len(args) > 2 {
			from, _ = strconv.ParseUint(args[2], 10, 64)
		}
		sub, err := h.Watch(ctx, args[0], false, r.id(args[1]), from)
		if err != nil {
			return errLine(err)
		}
		r.subs["watch:"+args[1]] = sub
		return "watching\n"
	case "drain":
		return r.drain(args[0])
	case "state":
		return r.state(args[0])
	case "log":
		return r.log(args)
	case "pending":
		ds, err := h.PendingTurns(ctx, args[0])
		if err != nil {
			return errLine(err)
		}
		var b strings.Builder
		for _, d := range ds {
			b.WriteString(r.delivery(d))
		}
		return b.String() + fmt.Sprintf("%d pending\n", len(ds))
	case "view":
		return r.view(args)
	case "list":
		return r.list(args)
	case "stop":
		r.env.shutdown()
		return "stopped\n"
	case "start":
		r.env.open()
		return fmt.Sprintf("started: %d quarantined\n", len(r.env.hub.Quarantined()))
	case "restart":
		r.env.restart()
		return fmt.Sprintf("restarted: %d quarantined\n", len(r.env.hub.Quarantined()))
	case "config":
		var c struct {
			SubscriberBuffer int    `json:"subscriber_buffer"`
			MaxOpenPerAgent  int    `json:"max_open_per_agent"`
			MaxDepth         int    `json:"max_depth"`
			MaxEnvelopeBytes int    `json:"max_envelope_bytes"`
			InviteTimeout    string `json:"invite_timeout"`
		}
		if err := json.Unmarshal([]byte(rest), &c); err != nil {
			return errLine(err)
		}
		r.env.cfg.SubscriberBuffer, r.env.cfg.MaxOpenPerAgent = c.SubscriberBuffer, c.MaxOpenPerAgent
		r.env.cfg.MaxDepth, r.env.cfg.MaxEnvelopeBytes = c.MaxDepth, c.MaxEnvelopeBytes
		r.env.cfg.InviteTimeout, _ = time.ParseDuration(orZero(c.InviteTimeout))
		r.env.restart()
		return "restarted with config\n"
	case "fail-append":
		n, _ := strconv.Atoi(args[0])
		r.env.log.failNth(n)
		return "armed\n"
	}
	return "unknown command " + verb + "\n"
}

// openSpec is the JSON of an open command.
type openSpec struct {
	Type          string                 `json:"type"`
	With          []string               `json:"with"`
	Auto          []string               `json:"auto"`
	Graph         json.RawMessage        `json:"graph"`
	Sequence      []string               `json:"sequence"`
	RoundRobin    int                    `json:"round_robin"`
	Knobs         map[string]any         `json:"knobs"`
	Labels        map[string]string      `json:"labels"`
	TTL           string                 `json:"ttl"`
	InviteTimeout string                 `json:"invite_timeout"`
	Expectations  *[]session.Expectation `json:"expectations"`
	Key           string                 `json:"key"`
	Parent        string                 `json:"parent"`
}

func (r *runner) open(creator, spec string) string {
	var s openSpec
	dec := json.NewDecoder(strings.NewReader(spec))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return "bad spec: " + err.Error() + "\n"
	}
	typ, _ := session.ParseType(s.Type)
	req := hub.OpenRequest{Type: typ, Labels: s.Labels, Key: s.Key, Knobs: map[string]json.RawMessage{}}
	for _, n := range s.With {
		req.Participants = append(req.Participants, session.Participant{Name: n, AutoAccept: slices.Contains(s.Auto, n)})
	}
	names := append([]string{creator}, s.With...)
	switch {
	case s.Graph != nil:
		req.Knobs["graph"] = s.Graph
	case s.Sequence != nil:
		req.Knobs["graph"], _ = json.Marshal(transition.Sequence(s.Sequence...))
	case s.RoundRobin > 0:
		req.Knobs["graph"], _ = json.Marshal(transition.RoundRobin(names, s.RoundRobin))
	}
	for k, v := range s.Knobs {
		req.Knobs[k], _ = json.Marshal(v)
	}
	if s.Expectations != nil {
		req.Expectations = *s.Expectations
	}
	req.TTL, _ = time.ParseDuration(orZero(s.TTL))
	req.InviteTimeout, _ = time.ParseDuration(orZero(s.InviteTimeout))
	if s.Parent != "" {
		req.Parent = r.id(s.Parent)
	}
	o, err := r.env.hub.Open(context.Background(), creator, req)
	if err != nil {
		return errLine(err)
	}
	name := r.nameOf(o.Meta.ID)
	if !o.Existing {
		name = fmt.Sprintf("s%d", len(r.order)+1)
		r.names[name] = o.Meta.ID
		r.order = append(r.order, name)
	}
	line := fmt.Sprintf("%s %v", name, o.State)
	if o.Existing {
		line += " (existing)"
	}
	return line + "\n"
}

func orZero(s string) string {
	if s == "" {
		return "0s"
	}
	return s
}

func errLine(err error) string {
	code, ok := adapters.Reason(err)
	if !ok {
		code = "ERROR"
	}
	msg := adapters.Detail(err)
	return fmt.Sprintf("error %s: %s\n", code, msg)
}

func ackLine(a hub.Ack, err error) string {
	if err != nil {
		return errLine(err)
	}
	s := fmt.Sprintf("ack seq=%d", a.Seq)
	if a.Duplicate {
		s += " duplicate"
	}
	if a.Closed {
		s += " closed=" + a.Reason
	}
	return s + "\n"
}

func (r *runner) subscribe(args []string) string {
	opts := hub.SubscribeOptions{Cursors: map[session.ID]uint64{}}
	for _, a := range args[1:] {
		if a == "ended" {
			opts.Ended = true
			continue
		}
		name, seq, _ := strings.Cut(a, "=")
		n, _ := strconv.ParseUint(seq, 10, 64)
		opts.Cursors[r.id(name)] = n
	}
	if old := r.subs[args[0]]; old != nil {
		old.Close()
	}
	sub, err := r.env.hub.Subscribe(context.Background(), args[0], opts)
	if err != nil {
		return errLine(err)
	}
	r.subs[args[0]] = sub
	return "subscribed\n"
}

// drain prints every delivery available now, without waiting.
func (r *runner) drain(name string) string {
	sub := r.subs[name]
	if sub == nil {
		return "no subscription " + name + "\n"
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	var b strings.Builder
	for {
		d, err := sub.Next(done)
		if err != nil {
			if err != context.Canceled {
				b.WriteString("ended: " + err.Error() + "\n")
				delete(r.subs, name)
			}
			break
		}
		b.WriteString(r.delivery(d))
	}
	if b.Len() == 0 {
		return "(nothing)\n"
	}
	return b.String()
}

func (r *runner) delivery(d hub.Delivery) string {
	s := r.envLine(d.Envelope)
	if d.Turn {
		s = strings.TrimSuffix(s, "\n") + " [your turn]\n"
	}
	return s
}

func (r *runner) envLine(e *session.Envelope) string {
	from := e.From
	if from == "" {
		from = "hub"
	}
	to := ""
	if e.Audience.Restricted {
		to = " to=" + strings.Join(e.Audience.Names, ",")
	}
	var data string
	if e.Payload != nil {
		b, _ := json.Marshal(e.Payload)
		data = " " + string(b)
	}
	return fmt.Sprintf("%s#%d +%v %s %s%s%s\n", r.nameOf(e.Session), e.Seq, e.AcceptedAt.Sub(epoch), from, e.Type, to, data)
}

func (r *runner) state(name string) string {
	info, err := r.env.hub.Get(context.Background(), "", true, r.id(name))
	if err != nil {
		return errLine(err)
	}
	ctx, _ := json.Marshal(info.Context)
	s := fmt.Sprintf("%v seq=%d turn=%d expected=%s context=%s", info.State, info.Seq, info.Turn, strings.Join(info.Expected, ","), ctx)
	if info.Reason != "" {
		s += " reason=" + info.Reason
	}
	return s + "\n"
}

func (r *runner) log(args []string) string {
	from := uint64(1)
	if len(args) > 1 {
		from, _ = strconv.ParseUint(args[1], 10, 64)
	}
	es, err := r.env.hub.ReadLog(context.Background(), "", true, r.id(args[0]), from, 0)
	if err != nil {
		return errLine(err)
	}
	var b strings.Builder
	for _, e := range es {
		b.WriteString(r.envLine(e))
	}
	return b.String()
}

func (r *runner) view(args []string) string {
	opts := hub.ViewOptions{}
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
	fmt.Fprintf(&b, "view %s: %d items", v.Name, len(v.Items))
	if v.OlderTotal > 0 {
		fmt.Fprintf(&b, ", %d older:", v.OlderTotal)
		for _, c := range v.Older {
			fmt.Fprintf(&b, " %s×%d", c.Speaker, c.Count)
		}
	}
	b.WriteString("\n")
	for _, it := range v.Items {
		fmt.Fprintf(&b, "  #%d %s: %s\n", it.Seq, it.From, it.Text)
	}
	return b.String()
}

func (r *runner) list(args []string) string {
	f := hub.Filter{}
	if len(args) > 1 {
		if err := json.Unmarshal([]byte(strings.Join(args[1:], " ")), &f); err != nil {
			return errLine(err)
		}
	}
	infos, _, err := r.env.hub.List(args[0], args[0] == "operator", f)
	if err != nil {
		return errLine(err)
	}
	var names []string
	for _, i := range infos {
		names = append(names, fmt.Sprintf("%s:%v", r.nameOf(i.Meta.ID), i.State))
	}
	return fmt.Sprintf("%d: %s\n", len(infos), strings.Join(names, " "))
}

// checkReplay hydrates a second hub from the same log and compares every
// session's folded state with the live hub's.
func (r *runner) checkReplay() {
	e := r.env
	cfg := e.cfg
	cfg.Log = e.log.Log
	cfg.Clock = fakeclock.New(e.clock.Now()) // never advanced: no timer fires
	fresh, err := hub.New(context.Background(), cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	defer fresh.Close()
	var names []string
	names = append(names, r.order...)
	sort.Strings(names)
	for _, n := range names {
		live, err1 := e.hub.Get(context.Background(), "", true, r.names[n])
		again, err2 := fresh.Get(context.Background(), "", true, r.names[n])
		if err1 != nil || err2 != nil {
			r.t.Errorf("replay %s: %v / %v", n, err1, err2)
			continue
		}
		if !bytes.Equal(live.Snapshot, again.Snapshot) {
			r.t.Errorf("replay of %s differs:\nlive:   %s\nreplay: %s", n, live.Snapshot, again.Snapshot)
		}
	}
}
