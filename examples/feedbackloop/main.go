package main

import (
	"context"
	"fmt"
	"io"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/examples/internal/demo"
	"github.com/hubd/hubd/hubpb"
)

func main() { demo.Main(run) }

// maxTurns is the safety cap: five drafts and five reviews.
const maxTurns = 10

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	full := []agentsdk.ServeOption{agentsdk.WithView(agentsdk.ViewFull, 0)}
	return demo.Run(ctx, "feedbackloop", args, stdout, stderr, demo.Scenario{
		Agents: []demo.Agent{
			{Name: "drafter", Handle: drafter, Serve: full},
			{Name: "reviewer", Handle: reviewer, Serve: full},
		},
		Open: func(ctx context.Context, c *agentsdk.Client, labels map[string]string) (*agentsdk.Session, error) {
			return c.Open(ctx, agentsdk.OpenOptions{Graph: Graph(), Participants: agentsdk.Invited("reviewer"), Labels: labels})
		},
	})
}

// Graph alternates drafter and reviewer; the approval rule comes first so it
// wins on the turn that sets it.
func Graph() *agentsdk.Graph {
	return agentsdk.NewGraph("drafter").
		On(agentsdk.ContextEquals("approved", true), agentsdk.Terminate("approved")).
		On(agentsdk.FromSpeaker("drafter"), agentsdk.ToAgent("reviewer")).
		On(agentsdk.FromSpeaker("reviewer"), agentsdk.ToAgent("drafter")).
		WithMaxTurns(maxTurns)
}

// count returns how many items of the view name said.
func count(v *hubpb.View, name string) int {
	n := 0
	for _, it := range v.GetItems() {
		if it.GetFrom() == name {
			n++
		}
	}
	return n
}

// drafter writes the next draft, taking in the reviewer's last note.
func drafter(_ context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	n := count(t.View, "drafter") + 1
	if n == 1 {
		return agentsdk.ReplyText("Draft 1: hubd keeps every session in a write-ahead log."), nil
	}
	return agentsdk.ReplyText(fmt.Sprintf("Draft %d: as asked (%q), revised.", n, t.Text())), nil
}

// reviewer asks for changes twice, then approves the third draft.
func reviewer(_ context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	notes := []string{"Say why the log matters.", "Mention replay after a crash."}
	if drafts := count(t.View, "drafter"); drafts <= len(notes) {
		return agentsdk.ReplyText(notes[drafts-1]), nil
	}
	return agentsdk.ReplyPacket(agentsdk.NewPacket("Approved.").Set("approved", true)), nil
}
