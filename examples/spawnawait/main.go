package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/examples/internal/demo"
	"github.com/hubd/hubd/hubpb"
)

func main() { demo.Main(run) }

// The agents.
const (
	User       = "user"
	Planner    = "planner"
	Researcher = "researcher"
	Writer     = "writer"
)

// Topics returns the topics of the three child workflows, in the order
// they are opened.
func Topics() []string { return []string{"Postgres", "SQLite", "etcd"} }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return demo.Run(ctx, "spawnawait", args, stdout, stderr, demo.Scenario{
		Agents: []demo.Agent{
			{Name: User, Handle: user},
			{Name: Planner, Handle: planner},
			{Name: Researcher, Handle: researcher},
			{Name: Writer, Handle: writer},
		},
		Open: func(ctx context.Context, c *agentsdk.Client, labels map[string]string) (*agentsdk.Session, error) {
			return c.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted(Planner),
				Task: "How do " + strings.Join(Topics(), ", ") + " make a write durable?", Labels: labels})
		},
		// The user's view of the session: its turns and the planner's
		// delegation (the results are the planner's to read).
		Format: demo.Event,
		Report: report,
	})
}

// report prints the call tree with each session's own usage, and the
// usage summed over the tree.
func report(ctx context.Context, c *agentsdk.Client, s *agentsdk.Session, out io.Writer) error {
	if err := demo.PrintTree(ctx, c, s.ID(), out); err != nil {
		return err
	}
	return demo.PrintTreeUsage(ctx, c, s.ID(), out)
}

// user asked the question (the session's task); the planner's answer
// ends the conversation.
func user(context.Context, *agentsdk.Turn) (agentsdk.Reply, error) {
	return agentsdk.ReplyPacket(agentsdk.NewPacket("Thanks!").Finish("answered", "")), nil
}

// planner fans the question out to one child workflow per topic
// (researcher, then writer), awaits all three, and summarises their
// results in topic order (they arrive in the order the children closed).
func planner(ctx context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	topics := Topics()
	var children []agentsdk.OpenOptions
	for _, topic := range topics {
		children = append(children, agentsdk.OpenOptions{Graph: agentsdk.Sequence(Researcher, Writer),
			Participants: agentsdk.AutoAccepted(Researcher, Writer), Labels: map[string]string{"topic": topic}, Task: topic})
	}
	results, err := t.DelegateAll(ctx, children...)
	if err != nil {
		return agentsdk.Reply{}, fmt.Errorf("fan-out: %w", err)
	}
	lines := make([]string, len(topics))
	var spent int64
	for _, r := range results {
		topic, _, _ := strings.Cut(r.GetSummary(), ":")
		i := slices.Index(topics, topic)
		if i < 0 || r.GetReason() != "finished" {
			return agentsdk.Reply{}, fmt.Errorf("unexpected result %s (%s)", r.GetSummary(), r.GetReason())
		}
		lines[i] = r.GetSummary()
		spent += r.GetUsage().GetInputTokens() + r.GetUsage().GetOutputTokens()
	}
	answer := fmt.Sprintf("%d of %d done (%d tokens): %s", len(results), len(topics), spent, strings.Join(lines, " "))
	return agentsdk.ReplyPacket(agentsdk.NewPacket(answer).WithUsage(&hubpb.Usage{InputTokens: 1500, OutputTokens: 250, CostUsd: 0.012})), nil
}

// notes returns what the researcher finds about a topic.
func notes(topic string) (string, bool) {
	switch topic {
	case "Postgres":
		return "fsyncs the WAL at commit, batching concurrent commits (commit_delay)", true
	case "SQLite":
		return "fsyncs the WAL file at commit in WAL mode with synchronous=FULL", true
	case "etcd":
		return "fsyncs its raft log before a majority acknowledges the entry", true
	}
	return "", false
}

// researcher takes the topic (the child's task, in its view) and reports
// what it found, with the tokens it spent and its two tool calls.
func researcher(_ context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	topic := task(t)
	n, ok := notes(topic)
	if !ok {
		return agentsdk.Reply{}, fmt.Errorf("researcher: no known topic in the view (%q)", topic)
	}
	size := int64(len(topic))
	return agentsdk.ReplyPacket(agentsdk.NewPacket(topic + " " + n + ".").
		WithUsage(&hubpb.Usage{InputTokens: 900 + 100*size, OutputTokens: 200, CostUsd: 0.008, ToolCalls: 2})), nil
}

// writer turns the researcher's notes into one sentence and finishes the
// child: its summary is the child's result.
func writer(_ context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	topic := task(t)
	n, ok := notes(topic)
	if !ok {
		return agentsdk.Reply{}, fmt.Errorf("writer: no known topic in the view (%q)", topic)
	}
	sentence := fmt.Sprintf("%s: durable once it %s.", topic, n)
	return agentsdk.ReplyPacket(agentsdk.NewPacket(sentence).Finish("", sentence).
		WithUsage(&hubpb.Usage{InputTokens: 400, OutputTokens: 60, CostUsd: 0.003})), nil
}

// task returns the child's task: the first item of the agent's view (the
// delegator's message).
func task(t *agentsdk.Turn) string {
	for _, it := range t.View.GetItems() {
		if it.GetFrom() == Planner {
			return it.GetText()
		}
	}
	return ""
}
