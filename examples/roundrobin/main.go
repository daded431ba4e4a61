package main

import (
	"context"
	"fmt"
	"io"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/examples/internal/demo"
)

func main() { demo.Main(run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	names := []string{"alice", "bob", "carol"}
	// What each agent brings, one idea per turn of its own.
	ideas := map[string][]string{
		"alice": {"Let's cache the graph per session.", "Then measure the hit rate."},
		"bob":   {"Invalidate it when the knobs change.", "And export it as a metric."},
		"carol": {"Knobs never change after open.", "Agreed; ship it."},
	}
	var agents []demo.Agent
	for _, n := range names {
		agents = append(agents, demo.Agent{Name: n, Handle: speaker(n, ideas[n]), Serve: []agentsdk.ServeOption{agentsdk.WithView(agentsdk.ViewFull, 0)}})
	}
	return demo.Run(ctx, "roundrobin", args, stdout, stderr, demo.Scenario{
		Agents: agents,
		Open: func(ctx context.Context, c *agentsdk.Client, labels map[string]string) (*agentsdk.Session, error) {
			// The creator comes first in participant order, then the
			// invitees: the order of the round.
			return c.Open(ctx, agentsdk.OpenOptions{Graph: agentsdk.RoundRobin(names, 6), Participants: agentsdk.Invited(names[1:]...), Labels: labels})
		},
	})
}

// speaker says its next idea: the full view tells it how many turns it has
// already taken.
func speaker(name string, ideas []string) agentsdk.Handler {
	return func(_ context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
		mine := 0
		for _, it := range t.View.GetItems() {
			if it.GetFrom() == name {
				mine++
			}
		}
		if mine >= len(ideas) {
			return agentsdk.Reply{}, fmt.Errorf("%s has nothing more to say", name)
		}
		return agentsdk.ReplyText(ideas[mine]), nil
	}
}
