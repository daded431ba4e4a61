// Command minimal is the smallest complete hubd program, written to be
// copied into your own module: two agents serve their turns, one opens a
// workflow session with the other, and the transcript prints until the hub
// closes the session. Run `go run ./cmd/hubd` in another terminal first.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"time"

	"github.com/hubd/hubd/agentsdk"
)

func main() {
	hub := flag.String("hub", "127.0.0.1:7420", "the hub's host:port")
	flag.Parse()
	if err := run(*hub, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(hub string, out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel() // stops both agents
	agents := map[string]agentsdk.Handler{
		"asker": func(context.Context, *agentsdk.Turn) (agentsdk.Reply, error) {
			return agentsdk.ReplyText("What is a write-ahead log?"), nil
		},
		"answerer": func(context.Context, *agentsdk.Turn) (agentsdk.Reply, error) {
			return agentsdk.ReplyText("The record written before the answer."), nil
		},
	}
	// An agent serves every session its name is invited to, whoever opened
	// it: this run's agents serve only the session it opens, by its label.
	run := fmt.Sprintf("minimal-%08x", rand.Uint32())
	ours := agentsdk.WithSessionFilter(func(s *agentsdk.Session) bool { return s.GetMeta().GetLabels()["example"] == run })
	var asker *agentsdk.Client
	for name, handler := range agents {
		c, err := agentsdk.Dial(ctx, hub, agentsdk.Options{Name: name})
		if err != nil {
			return err
		}
		defer c.Close()
		go c.Serve(ctx, handler, ours) // accepts the agent's invites, answers its turns
		if name == "asker" {
			asker = c
		}
	}
	s, err := asker.Open(ctx, agentsdk.OpenOptions{Graph: agentsdk.Sequence("asker", "answerer"),
		Participants: agentsdk.Invited("answerer"), Labels: map[string]string{"example": run}})
	if err != nil {
		return err
	}
	end, err := asker.Follow(ctx, s.ID(), 1, func(e *agentsdk.Envelope) error {
		if agentsdk.IsTurn(e) {
			fmt.Fprintf(out, "%s: %s\n", e.GetFrom(), agentsdk.TextOf(e))
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "closed:", agentsdk.CloseReason(end))
	return nil
}
