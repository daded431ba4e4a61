package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/examples/internal/demo"
)

func main() { demo.Main(run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return demo.Run(ctx, "pipeline", args, stdout, stderr, demo.Scenario{
		Agents: []demo.Agent{
			{Name: "researcher", Handle: researcher},
			{Name: "writer", Handle: writer},
			{Name: "editor", Handle: editor},
		},
		Open: func(ctx context.Context, c *agentsdk.Client, labels map[string]string) (*agentsdk.Session, error) {
			return c.Open(ctx, agentsdk.OpenOptions{Graph: agentsdk.Sequence("researcher", "writer", "editor"),
				Participants: agentsdk.Invited("writer", "editor"), Labels: labels})
		},
	})
}

// researcher opens the work with its findings.
func researcher(context.Context, *agentsdk.Turn) (agentsdk.Reply, error) {
	return agentsdk.ReplyText("Findings: group commit batches the fsyncs of concurrent sends."), nil
}

// writer drafts from what the researcher found (the trigger of its turn).
func writer(_ context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	found := strings.TrimSuffix(strings.TrimPrefix(t.Text(), "Findings: "), ".")
	return agentsdk.ReplyText(fmt.Sprintf("Draft: durable writes stay fast because %s.", found)), nil
}

// editor signs off, counting the turns in its view of the session.
func editor(_ context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	return agentsdk.ReplyText(fmt.Sprintf("Approved after reading %d turns.", len(t.View.GetItems()))), nil
}
