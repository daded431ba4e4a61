package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
)

// treeFlags registers --output and returns "sessions tree": a session's
// call tree, one session per line indented by depth (id, type, state and
// close reason, turns, the node's own usage and how long it ran), or the
// TreeNode as indented JSON.
func treeFlags(fs *flag.FlagSet) subcommand {
	out := outputFlags(fs, "the output `format`: table (for people: one session per line, indented by depth) or json (for programs: the TreeNode, indented)",
		formatTable, formatJSON)
	return func(ctx context.Context, c *agentsdk.Client, fs *flag.FlagSet, w *bufio.Writer) error {
		root, err := c.Tree(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		if out.json() {
			return writeIndented(w, root)
		}
		writeTree(w, root, 0)
		u := root.GetSession().GetTreeUsage()
		fmt.Fprintf(w, "tree usage: %s\n", usageLine(u))
		return nil
	}
}

func writeTree(w *bufio.Writer, n *hubpb.TreeNode, depth int) {
	s := n.GetSession()
	state := s.GetState()
	if r := s.GetCloseReason(); r != "" {
		state += " " + r
	}
	fmt.Fprintf(w, "%s%s %s %s turns=%d %s took=%s\n", strings.Repeat("  ", depth), s.GetMeta().GetSessionId(),
		s.GetMeta().GetType(), state, n.GetTurns(), usageLine(n.GetUsage()), n.GetDuration().AsDuration().Round(time.Millisecond))
	for _, k := range n.GetChildren() {
		writeTree(w, k, depth+1)
	}
}

// usageLine is a usage as "tokens=in/out cost=$x tools=n".
func usageLine(u *hubpb.Usage) string {
	return fmt.Sprintf("tokens=%d/%d cost=$%.4f tools=%d", u.GetInputTokens(), u.GetOutputTokens(), u.GetCostUsd(), u.GetToolCalls())
}

// errReplayDiffers is the exit of a replay that does not give the live
// state.
type errReplayDiffers struct {
	id     string
	seq    uint64
	detail string
}

func (e *errReplayDiffers) Error() string {
	return fmt.Sprintf("session %s: the replay differs from the live state from seq %d: %s", e.id, e.seq, e.detail)
}

// replayFlags registers --output and returns "sessions replay": a
// session re-folded from its log with no agent called, each envelope with
// the rule the replay decided and the state after it (or the
// ReplayResponse as indented JSON); it fails (exit 1) when the replay does
// not give the live state, naming the first seq that differs.
func replayFlags(fs *flag.FlagSet) subcommand {
	out := outputFlags(fs, "the output `format`: text (for people: a step per line) or json (for programs: the ReplayResponse, indented)",
		formatText, formatJSON)
	return func(ctx context.Context, c *agentsdk.Client, fs *flag.FlagSet, w *bufio.Writer) error {
		r, err := c.Replay(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		if out.json() {
			err = writeIndented(w, r)
		} else {
			writeReplay(w, r)
		}
		if err == nil && !r.GetEqual() {
			err = &errReplayDiffers{id: fs.Arg(0), seq: r.GetFirstDifference(), detail: r.GetDetail()}
		}
		return err
	}
}

// writeReplay writes the steps of a replay, and that it equals the live
// state when it does.
func writeReplay(w *bufio.Writer, r *hubpb.ReplayResponse) {
	for _, st := range r.GetSteps() {
		e := st.GetEnvelope()
		from := e.GetFrom()
		if from == "" {
			from = "hub"
		}
		line := fmt.Sprintf("#%d %s %s", e.GetSeq(), from, e.GetType())
		if st.GetRule() != "" {
			line += fmt.Sprintf(" rule=%q", st.GetRule())
		}
		fmt.Fprintf(w, "%s → %s turn=%d expected=%s\n", line, st.GetState(), st.GetTurn(), strings.Join(st.GetExpected(), ","))
	}
	if r.GetEqual() {
		fmt.Fprintln(w, "the replay equals the live state")
	}
}
