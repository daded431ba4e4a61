package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/exitcode"
	"github.com/hubd/hubd/session"
)

// The commands that change a running hub's sessions: sessions open, send
// and close, and tasks cancel. Each acts as the agent of the client flags
// and prints a line a person reads, or with --output json (--json) the
// hub's answer in the one JSON form.

// openCmd is "sessions open": open a session with the caller as its
// creator, and print its id.
type openCmd struct {
	opts                agentsdk.OpenOptions
	participants, graph string
	autoAccept          bool
	out                 *outputFlag
	knobs               knobFlag
	expect              expectFlag
	ttl                 time.Duration
}

// openFlags registers the flags of "sessions open" and returns it.
func openFlags(fs *flag.FlagSet) *clientCommand {
	o := &openCmd{knobs: knobFlag{}}
	fs.StringVar(&o.opts.Type, "type", "", "the session `type` (kind@version; a bare kind is version 1); default workflow@1 with --graph, else conversation@1")
	fs.StringVar(&o.participants, "participants", "", "the other participants, in session order (comma-separated `names`); the caller comes first")
	fs.BoolVar(&o.autoAccept, "auto-accept", false, "the participants need not acknowledge their invites: the session opens at once")
	fs.StringVar(&o.graph, "graph", "", "the workflow graph (JSON `file`, as hubd graph validate reads)")
	fs.Var((*labelFlag)(&o.opts.Labels), "label", "a label (`k=v`; repeatable)")
	fs.Var(o.knobs, "knob", "a knob of the session type (`k=VALUE`, VALUE JSON or else a string; repeatable): max_handoffs=3, context={\"k\":1}")
	fs.Var(&o.expect, "expect", "a timer replacing the type's defaults (`NAME=DURATION:ACTION`, e.g. turn_within=5m:auto_close; repeatable), or none for no timers")
	fs.DurationVar(&o.ttl, "ttl", 0, "the session's lifetime (0: none)")
	fs.StringVar(&o.opts.Task, "task", "", "the creator's first input (`text`), written with the open; the participants must be --auto-accept")
	fs.StringVar(&o.opts.Parent, "parent", "", "open as a child of this session (`ID`), which the caller takes part in")
	fs.StringVar(&o.opts.IdempotencyKey, "idempotency-key", "", "open at most once: the same caller and `key` get the same session")
	o.out = outputFlags(fs, "the output `format`: text (the new session's id) or json (its SessionInfo)", formatText, formatJSON)
	return &clientCommand{run: o.run, check: o.check}
}

// check reads the graph file and completes the options from the flags.
func (o *openCmd) check(*flag.FlagSet) error {
	if o.graph != "" {
		if _, ok := o.knobs["graph"]; ok {
			return exitcode.Usage("sessions open: --graph and --knob graph=... give the graph twice")
		}
		_, data, err := loadGraph(o.graph)
		if err != nil {
			return exitcode.Usage("sessions open: --graph %v", err)
		}
		o.knobs["graph"] = json.RawMessage(data)
	}
	if o.opts.Type == "" {
		o.opts.Type = agentsdk.TypeConversation
		if _, ok := o.knobs["graph"]; ok {
			o.opts.Type = agentsdk.TypeWorkflow
		}
	}
	o.opts.Participants = agentsdk.Invited(splitNames(o.participants)...)
	if o.autoAccept {
		o.opts.Participants = agentsdk.AutoAccepted(splitNames(o.participants)...)
	}
	o.opts.Knobs, o.opts.Expectations, o.opts.TTL = o.knobs, o.expect.list, o.ttl
	return nil
}

func (o *openCmd) run(ctx context.Context, c *agentsdk.Client, _ *flag.FlagSet, w *bufio.Writer) error {
	s, err := c.Open(ctx, o.opts)
	if err != nil {
		return err
	}
	if o.out.json() {
		return writeJSON(w, s.SessionInfo)
	}
	_, err = fmt.Fprintln(w, s.ID())
	return err
}

// knobFlag is --knob k=VALUE, repeatable: VALUE is JSON, or else a string.
type knobFlag map[string]any

func (k knobFlag) String() string { return "" }

func (k knobFlag) Set(v string) error {
	key, val, ok := strings.Cut(v, "=")
	if !ok || key == "" {
		return errors.New("want k=VALUE")
	}
	if _, dup := k[key]; dup {
		return fmt.Errorf("knob %q given twice", key)
	}
	if json.Valid([]byte(val)) {
		k[key] = json.RawMessage(val)
	} else {
		k[key] = val
	}
	return nil
}

// expectFlag is --expect NAME=DURATION:ACTION, repeatable, or none.
type expectFlag struct {
	list []*hubpb.Expectation // nil: the session type's defaults
}

func (e *expectFlag) String() string { return "" }

func (e *expectFlag) Set(v string) error {
	if v == "none" {
		e.list = []*hubpb.Expectation{}
		return nil
	}
	name, rest, ok := strings.Cut(v, "=")
	within, action, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 {
		return errors.New("want NAME=DURATION:ACTION, e.g. turn_within=5m:auto_close, or none")
	}
	d, err := time.ParseDuration(within)
	if err != nil {
		return fmt.Errorf("%s: %q is not a duration (5m, 30s)", name, within)
	}
	x := session.Expect(name, d, action)
	if err := session.CheckExpectation(x); err != nil {
		return errors.New(strings.TrimSuffix(err.Error(), ": "+session.ErrMalformed.Error()))
	}
	e.list = append(e.list, x)
	return nil
}

// sendFlags registers the flags of "sessions send" and returns it: take a
// turn with a text, from the argument TEXT or else stdin, or with
// --packet a packet in the one JSON form.
func sendFlags(fs *flag.FlagSet, stdin io.Reader) *clientCommand {
	packet := fs.Bool("packet", false, "the input is a packet as JSON ({\"body\":\"...\",\"routing\":{\"kind\":\"finish\",\"reason\":\"done\"}}), not text")
	msgID := fs.String("client-msg-id", "", "the envelope's idempotency `key`: sent again with it, it is written once")
	out := outputFlags(fs, "the output `format`: text (a line in words) or json (the hub's acknowledgement, a SendResponse)", formatText, formatJSON)
	var env *hubpb.Envelope
	check := func(fs *flag.FlagSet) error {
		if fs.NArg() > 2 {
			return exitcode.Usage("sessions send: want ID [TEXT], got %d arguments (quote the text; see hubd sessions send --help)", fs.NArg())
		}
		in, err := sendInput(fs, stdin)
		if err != nil {
			return err
		}
		env, err = envelopeOf(in, *packet)
		return err
	}
	run := func(ctx context.Context, c *agentsdk.Client, fs *flag.FlagSet, w *bufio.Writer) error {
		var opts []agentsdk.SendOption
		if *msgID != "" {
			opts = append(opts, agentsdk.WithClientMsgID(*msgID))
		}
		ack, err := c.Send(ctx, fs.Arg(0), env, opts...)
		if err != nil {
			return err
		}
		if out.json() {
			return writeJSON(w, ack.SendResponse)
		}
		writeAck(w, "sent", fs.Arg(0), ack.SendResponse)
		return nil
	}
	return &clientCommand{run: run, nargs: -2, check: check}
}

// maxInput bounds what send reads from stdin: more than any hub takes in
// one envelope.
const maxInput = 64 << 20

// sendInput is what "sessions send" sends: its TEXT argument, or stdin
// for none or "-" (one final newline dropped, as echo and a shell's
// here-string add it). A terminal on stdin is not read: it is a mistake.
func sendInput(fs *flag.FlagSet, stdin io.Reader) (string, error) {
	if fs.NArg() == 2 && fs.Arg(1) != "-" {
		return fs.Arg(1), nil
	}
	if stdin == nil || isTerminal(stdin) {
		return "", exitcode.Usage("sessions send: want TEXT, or the text on stdin (see hubd sessions send --help)")
	}
	b, err := io.ReadAll(io.LimitReader(stdin, maxInput+1))
	switch {
	case err != nil:
		return "", exitcode.Usage("sessions send: reading stdin: %v", err)
	case len(b) > maxInput:
		return "", exitcode.Usage("sessions send: stdin holds more than %d bytes", maxInput)
	}
	s := strings.TrimSuffix(string(b), "\n")
	return strings.TrimSuffix(s, "\r"), nil
}

// envelopeOf makes the envelope of a send: a text, or a packet decoded
// from JSON.
func envelopeOf(in string, packet bool) (*hubpb.Envelope, error) {
	if !packet {
		if strings.TrimSpace(in) == "" {
			return nil, exitcode.Usage("sessions send: the text is empty")
		}
		return &hubpb.Envelope{Type: agentsdk.EventText, Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: in}}}, nil
	}
	p := &hubpb.Packet{}
	if err := hubpb.UnmarshalJSON([]byte(in), p); err != nil {
		return nil, exitcode.Usage(`sessions send: --packet: not a packet (want e.g. {"body":"done","routing":{"kind":"finish","reason":"approved"}}): %v`, err)
	}
	return &hubpb.Envelope{Type: agentsdk.EventPacket, Payload: &hubpb.Envelope_Packet{Packet: p}}, nil
}

// writeAck prints what a write did: "sent to ID at seq 3", and whether
// it was a repeat or ended the session.
func writeAck(w io.Writer, verb, id string, a *hubpb.SendResponse) {
	fmt.Fprintf(w, "%s %s at seq %d", verb, id, a.GetSeq())
	if a.GetDuplicate() {
		fmt.Fprint(w, " (sent before with this --client-msg-id: nothing written)")
	}
	if a.GetClosed() {
		fmt.Fprintf(w, "; the session closed: %s", a.GetCloseReason())
	}
	fmt.Fprintln(w)
}

// closeFlags registers the flags of "sessions close" and returns it.
func closeFlags(fs *flag.FlagSet) *clientCommand {
	reason := fs.String("reason", "", "why, logged with the close (default explicit_close)")
	out := outputFlags(fs, "the output `format`: text (a line in words) or json (the hub's acknowledgement, a SendResponse)", formatText, formatJSON)
	run := func(ctx context.Context, c *agentsdk.Client, fs *flag.FlagSet, w *bufio.Writer) error {
		ack, err := c.CloseSession(ctx, fs.Arg(0), *reason)
		if err != nil {
			return err
		}
		if out.json() {
			return writeJSON(w, ack.SendResponse)
		}
		fmt.Fprintf(w, "closed %s at seq %d: %s\n", fs.Arg(0), ack.GetSeq(), ack.GetCloseReason())
		return nil
	}
	return &clientCommand{run: run, nargs: 1}
}

// tasksCommand returns a tasks command (see clientGroup).
func tasksCommand(name string, fs *flag.FlagSet, _ io.Reader) *clientCommand {
	if name != "cancel" {
		return nil
	}
	out := outputFlags(fs, "the output `format`: text (a line in words per task) or json (each task's SessionInfo after the cancel, one per line)", formatText, formatJSON)
	run := func(ctx context.Context, c *agentsdk.Client, fs *flag.FlagSet, w *bufio.Writer) error {
		for _, id := range fs.Args() {
			if err := cancelTask(ctx, c, id, out.json(), w); err != nil {
				return err
			}
		}
		return nil
	}
	return &clientCommand{run: run, nargs: -2}
}

// cancelTask cancels the delegated child session id as agentsdk's
// Task.Cancel does (closing it with reason cancelled, which posts its
// result into the parent) and prints what became of it: cancelled, or
// over already.
func cancelTask(ctx context.Context, c *agentsdk.Client, id string, asJSON bool, w *bufio.Writer) error {
	task, err := c.Task(ctx, id)
	var refused *agentsdk.Error
	if errors.Is(err, agentsdk.ErrMalformed) && !errors.As(err, &refused) {
		return fmt.Errorf("session %s is not a delegated task (it has no parent): close it with hubd sessions close", id)
	}
	if err != nil {
		return err
	}
	before, err := c.GetSession(ctx, id)
	if err != nil {
		return err
	}
	if !before.Ended() {
		if err := task.Cancel(ctx); err != nil {
			return err
		}
	}
	after, err := c.GetSession(ctx, id)
	switch {
	case err != nil:
		return err
	case asJSON:
		return writeJSON(w, after.SessionInfo)
	case before.Ended():
		fmt.Fprintf(w, "%s was over already: %s %s\n", id, after.GetState(), after.GetCloseReason())
	default:
		fmt.Fprintf(w, "cancelled %s (its result is in %s)\n", id, task.Parent)
	}
	return nil
}
