package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/internal/exitcode"
)

// forkCmd is "sessions fork": open a session continuing another from one
// of its seqs, and print the new session's id.
type forkCmd struct {
	at     uint64
	set    knobFlag
	delete namesFlag
	opts   agentsdk.ForkOptions
	out    *outputFlag
}

// namesFlag is a repeatable flag of names.
type namesFlag []string

func (n *namesFlag) String() string     { return fmt.Sprint([]string(*n)) }
func (n *namesFlag) Set(v string) error { *n = append(*n, v); return nil }

// forkFlags registers the flags of "sessions fork" and returns it.
func forkFlags(fs *flag.FlagSet) *clientCommand {
	f := &forkCmd{set: knobFlag{}}
	fs.Uint64Var(&f.at, "at", 0, "the source's `seq` the fork starts from (1 to its last seq; hubd sessions tail shows them)")
	fs.Var(f.set, "set", "set a context variable in the fork (`k=VALUE`, VALUE JSON or else a string; repeatable)")
	fs.Var(&f.delete, "delete", "delete a context variable in the fork (`k`; repeatable)")
	fs.StringVar(&f.opts.NextSpeaker, "next", "", "the participant to speak next in the fork (an `agent`; a workflow's); default whoever the source expected")
	fs.Var((*labelFlag)(&f.opts.Labels), "label", "a label added to the source's (`k=v`; repeatable)")
	f.out = outputFlags(fs, "the output `format`: text (the new session's id) or json (its SessionInfo)", formatText, formatJSON)
	return &clientCommand{run: f.run, check: f.check, nargs: 1}
}

// check wants --at.
func (f *forkCmd) check(*flag.FlagSet) error {
	if f.at == 0 {
		return exitcode.Usage("sessions fork: --at SEQ is required (the source's seq to fork from, from 1)")
	}
	if len(f.set) > 0 {
		f.opts.Set = map[string]any(f.set)
	}
	f.opts.Delete = f.delete
	return nil
}

// run forks and prints the fork's id, or its SessionInfo.
func (f *forkCmd) run(ctx context.Context, c *agentsdk.Client, fs *flag.FlagSet, w *bufio.Writer) error {
	s, err := c.Fork(ctx, fs.Arg(0), f.at, f.opts)
	if err != nil {
		return err
	}
	if f.out.json() {
		return writeJSON(w, s.SessionInfo)
	}
	fmt.Fprintln(w, s.ID())
	return nil
}
