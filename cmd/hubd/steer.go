package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/exitcode"
)

// steerCmd is "sessions steer": one operator action on a live session.
type steerCmd struct {
	set     varsFlag
	unset   multiFlag
	next    string
	release string
	extend  string
	cancel  string
	reason  string
}

// steerFlags registers the flags of "sessions steer" and returns it.
func steerFlags(fs *flag.FlagSet) *clientCommand {
	s := &steerCmd{set: varsFlag{}}
	fs.Var(s.set, "set", "set a context variable (`k=VALUE`, VALUE JSON or else a string; repeatable)")
	fs.Var(&s.unset, "unset", "delete a context variable (`k`, which must be set; repeatable)")
	fs.StringVar(&s.next, "next", "", "the next speaker, once, over the graph (`AGENT`, a participant; workflow sessions)")
	fs.StringVar(&s.release, "release-result", "", "release the held turn with this result (`TEXT`)")
	fs.StringVar(&s.extend, "extend", "", "extend the running period of an expectation (`NAME=DURATION`, e.g. turn_within=5m)")
	fs.StringVar(&s.cancel, "cancel-timer", "", "cancel the running period of an expectation (`NAME`)")
	fs.StringVar(&s.reason, "reason", "", "why, logged with the action (required)")
	out := outputFlags(fs, "the output `format`: text (a line in words) or json (the hub's acknowledgement, a SendResponse)", formatText, formatJSON)
	var action *hubpb.OperatorAction
	check := func(*flag.FlagSet) error {
		var err error
		action, err = s.action()
		return err
	}
	run := func(ctx context.Context, c *agentsdk.Client, fs *flag.FlagSet, w *bufio.Writer) error {
		ack, err := c.Steer(ctx, fs.Arg(0), s.reason, action)
		if err != nil {
			return err
		}
		if out.json() {
			return writeJSON(w, ack.SendResponse)
		}
		writeAck(w, "steered", fs.Arg(0), ack.SendResponse)
		return nil
	}
	return &clientCommand{run: run, nargs: 1, check: check}
}

// action returns the one action the flags ask for (--set and --unset
// together are one).
func (s *steerCmd) action() (*hubpb.OperatorAction, error) {
	if s.reason == "" {
		return nil, exitcode.Usage("sessions steer: --reason is required: say why")
	}
	var acts []*hubpb.OperatorAction
	if len(s.set) > 0 || len(s.unset) > 0 {
		a, err := agentsdk.SetContext(s.set.values())
		if err != nil {
			return nil, exitcode.Usage("sessions steer: --set: %v", err)
		}
		a.GetContext().Delete = s.unset
		acts = append(acts, a)
	}
	if s.next != "" {
		acts = append(acts, agentsdk.NextSpeaker(s.next))
	}
	if s.release != "" {
		acts = append(acts, agentsdk.ReleaseTurn(s.release))
	}
	if s.extend != "" {
		name, d, ok := strings.Cut(s.extend, "=")
		dur, err := time.ParseDuration(d)
		if !ok || name == "" || err != nil || dur <= 0 {
			return nil, exitcode.Usage("sessions steer: --extend wants NAME=DURATION (turn_within=5m), got %q", s.extend)
		}
		acts = append(acts, agentsdk.ExtendTimer(name, dur))
	}
	if s.cancel != "" {
		acts = append(acts, agentsdk.CancelTimer(s.cancel))
	}
	if len(acts) != 1 {
		return nil, exitcode.Usage("sessions steer: want one action of --set/--unset, --next, --release-result, --extend, --cancel-timer; got %d", len(acts))
	}
	return acts[0], nil
}

// varsFlag is --set k=VALUE, repeatable: VALUE is JSON, or else a string.
type varsFlag map[string]any

func (v varsFlag) String() string { return "" }

func (v varsFlag) Set(s string) error {
	key, val, ok := strings.Cut(s, "=")
	if !ok || key == "" {
		return errors.New("want k=VALUE")
	}
	if _, dup := v[key]; dup {
		return fmt.Errorf("variable %q given twice", key)
	}
	if json.Valid([]byte(val)) {
		v[key] = json.RawMessage(val)
	} else {
		v[key] = val
	}
	return nil
}

func (v varsFlag) values() map[string]any { return v }

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string { return strings.Join(*m, ",") }

func (m *multiFlag) Set(s string) error {
	*m = append(*m, s)
	return nil
}
