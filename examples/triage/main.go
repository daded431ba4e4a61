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
	return demo.Run(ctx, "triage", args, stdout, stderr, demo.Scenario{
		Agents: []demo.Agent{
			{Name: "router", Handle: router},
			{Name: "billing", Handle: specialist("billing", "Refund of the duplicate charge issued.")},
			{Name: "tech", Handle: specialist("tech", "Password reset link sent; the login works again.")},
		},
		Open: func(ctx context.Context, c *agentsdk.Client, labels map[string]string) (*agentsdk.Session, error) {
			return c.Open(ctx, agentsdk.OpenOptions{Graph: Graph(), Participants: agentsdk.Invited("billing", "tech"), Labels: labels})
		},
	})
}

// Graph routes by tool to the specialists and back to the router (who
// opened the session); a turn no rule matches ends the session.
func Graph() *agentsdk.Graph {
	return agentsdk.NewGraph("router").
		On(agentsdk.ToolCalled("transfer_to_billing"), agentsdk.ToAgent("billing")).
		On(agentsdk.ToolCalled("transfer_to_tech"), agentsdk.ToAgent("tech")).
		On(agentsdk.AnyOf(agentsdk.FromSpeaker("billing"), agentsdk.FromSpeaker("tech")), agentsdk.RevertToInitiator()).
		Otherwise(agentsdk.Terminate("triage_done")).
		WithMaxTurns(10)
}

// router works through the customer's two problems, one specialist at a
// time, then finishes.
func router(_ context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	switch t.Trigger.GetFrom() {
	case "": // the session opened
		return agentsdk.ReplyPacket(agentsdk.NewPacket("The customer was charged twice; over to billing.").
			Handoff("transfer_to_billing", "", "double charge")), nil
	case "billing":
		return agentsdk.ReplyPacket(agentsdk.NewPacket("They cannot log in either; over to tech.").
			Handoff("transfer_to_tech", "", "login")), nil
	case "tech":
		return agentsdk.ReplyPacket(agentsdk.NewPacket("Both problems are solved.").
			Finish("resolved", "refund issued, login restored")), nil
	}
	return agentsdk.Reply{}, fmt.Errorf("unexpected turn after %q", t.Trigger.GetFrom())
}

// specialist answers with its fix and records it in the session's context;
// the graph hands the turn back to the router.
func specialist(name, answer string) agentsdk.Handler {
	return func(context.Context, *agentsdk.Turn) (agentsdk.Reply, error) {
		return agentsdk.ReplyPacket(agentsdk.NewPacket(answer).Set("fixed_by_"+name, true)), nil
	}
}
