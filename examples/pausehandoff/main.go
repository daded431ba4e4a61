package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/examples/internal/demo"
	"github.com/hubd/hubd/hubpb"
)

func main() { demo.Main(run) }

// The agents of seed 003's diagrams.
const (
	Caller = "caller"
	AgentA = "agent_a"
	AgentB = "agent_b"
)

// The caller's three events, one per case.
const (
	summarise = "Summarise last night's incident report."
	bookRoom  = "Book a room for the incident review."
	findHotel = "Find a hotel in Oslo for the review."
)

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runWith(ctx, args, os.Stdin, stdout, stderr)
}

// runWith runs the example with the person's input read from stdin
// unless --answer gives it.
func runWith(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var answer string
	return demo.Run(ctx, "pausehandoff", args, stdout, stderr, demo.Scenario{
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&answer, "answer", "", "the person's answer to agent_a's question (default: read a line from stdin)")
		},
		Agents: []demo.Agent{
			{Name: Caller, Handle: caller, Run: demo.Answerer(10*time.Millisecond, func(ctx context.Context, q *hubpb.PendingQuestion) (*agentsdk.Answer, error) {
				text, err := ask(ctx, q, answer, stdin, stderr)
				return &agentsdk.Answer{Text: text}, err
			})},
			{Name: AgentA, Handle: agentA},
			{Name: AgentB, Handle: agentB},
		},
		Open: func(ctx context.Context, c *agentsdk.Client, labels map[string]string) (*agentsdk.Session, error) {
			return c.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted(AgentA),
				Task: summarise, Labels: labels})
		},
		// The caller does not take part in agent_a's call of agent_b, nor
		// agent_a in the caller's results: an operator watches them all.
		Tree: &demo.Tree{As: "operator"},
	})
}

// ask is the caller putting agent_a's question to the person (case 2): the
// answer given with --answer, or a line typed on stdin.
func ask(ctx context.Context, q *hubpb.PendingQuestion, answer string, stdin io.Reader, stderr io.Writer) (string, error) {
	if answer != "" {
		return answer, nil
	}
	fmt.Fprintf(stderr, "%s asks: %s\n> ", q.GetAsker(), q.GetEnvelope().GetQuestion().GetText())
	line := make(chan string, 1)
	failed := make(chan error, 1)
	go func() { // a read of stdin cannot be cancelled: it is left behind if ctx ends first
		s, err := bufio.NewReader(stdin).ReadString('\n')
		if s = strings.TrimSpace(s); s != "" {
			line <- s
			return
		}
		failed <- fmt.Errorf("no answer on stdin: %w", errors.Join(err, io.ErrUnexpectedEOF))
	}()
	select {
	case s := <-line:
		return s, nil
	case err := <-failed:
		return "", err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// caller sends agent_a its events, one case each, and takes the answers:
// case 1 and case 2 in this session with agent_a, case 3 through a child
// workflow of agent_a and agent_b, whose answer comes from agent_b.
func caller(ctx context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	switch text := t.Text(); {
	case strings.HasPrefix(text, "Summary:"):
		return agentsdk.ReplyText(bookRoom), nil
	case strings.HasPrefix(text, "Booked"):
		r, err := t.Delegate(ctx, agentsdk.OpenOptions{Graph: agentsdk.NewGraph(AgentA),
			Participants: agentsdk.AutoAccepted(AgentA, AgentB), Task: findHotel})
		if err != nil {
			return agentsdk.Reply{}, fmt.Errorf("case 3: %w", err)
		}
		return agentsdk.ReplyPacket(agentsdk.NewPacket(fmt.Sprintf("Done: %s (answered by %s)", r.GetSummary(), r.GetResponder())).
			Finish("done", "")), nil
	}
	return agentsdk.Reply{}, fmt.Errorf("caller: unexpected turn %q", t.Text())
}

// agentA is seed 003's Agent A. Case 1: it calls agent_b and pauses
// until agent_b's turn ends (a blocking delegation holds its turn). Case
// 2: it pauses for the person's input (a question holds its turn). Case
// 3: inside the caller's child workflow it hands agent_b the turn and the
// duty to answer the caller, and stops.
func agentA(ctx context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	if t.Trigger.GetCall().GetDepth() > 0 {
		return t.PassCaller(AgentB), nil // case 3: FinishAgentResult
	}
	switch t.Text() {
	case summarise: // case 1: PauseForChildResult
		r, err := t.Delegate(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted(AgentB),
			Task: "Summarise: db-2's disk filled at 02:10, writes failed for 14 minutes, the WAL was rotated at 02:24."})
		if err != nil {
			return agentsdk.Reply{}, fmt.Errorf("case 1: %w", err)
		}
		return agentsdk.ReplyText("Summary: " + r.GetSummary()), nil
	case bookRoom: // case 2: PauseForInputResult
		a, err := t.Ask(ctx, &agentsdk.Question{Text: "Which day should I book the review room for?"})
		if err != nil {
			return agentsdk.Reply{}, fmt.Errorf("case 2: %w", err)
		}
		return agentsdk.ReplyText("Booked room 4 for " + a.GetText() + "."), nil
	}
	return agentsdk.Reply{}, fmt.Errorf("agent_a: unexpected turn %q", t.Text())
}

// agentB answers what agent_a hands it, and finishes: its finish is the
// result of the child session (case 1 to agent_a; case 3 to the caller).
func agentB(_ context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	if t.Trigger.GetPacket().GetRouting().GetKind() == agentsdk.RoutingPassCaller { // case 3
		return agentsdk.ReplyPacket(agentsdk.NewPacket("Hotel Bristol has rooms.").
			Finish("", "Hotel Bristol, 2 nights from the review day.")), nil
	}
	return agentsdk.ReplyPacket(agentsdk.NewPacket("Read it.").
		Finish("", "db-2 ran out of disk at 02:10; 14 minutes of failed writes until the WAL was rotated.")), nil
}
