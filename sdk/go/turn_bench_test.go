package sdkgo_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
)

// BenchmarkTurn is one turn through the whole product in one process: an
// agent's reply sent by agentsdk's Serve on its agent stream, accepted,
// folded and committed by the hub, delivered to the next speaker, whose
// Serve replies in turn. Two agents take turns in round-robin sessions; the hub's log is in memory. bench/walk.sh profiles it
// to list the files and packages a turn passes through.
func BenchmarkTurn(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := hubtest.Start(ctx, hubtest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	var turns atomic.Int64
	done := make(chan struct{})
	target := int64(b.N)
	reply := func(context.Context, *agentsdk.Turn) (agentsdk.Reply, error) {
		if turns.Add(1) == target {
			close(done)
		}
		return agentsdk.ReplyText("ok"), nil
	}
	var alice *agentsdk.Client
	for _, name := range []string{"alice", "bob"} {
		c, err := agentsdk.Dial(ctx, h.Addr(), agentsdk.Options{Name: name})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		go c.Serve(ctx, reply)
		if name == "alice" {
			alice = c
		}
	}
	b.ResetTimer()
	// A workflow session ends at its turn cap (at most
	// workflow.DefaultMaxTurns): the next one opens when it has.
	opened := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			s, err := alice.Open(ctx, agentsdk.OpenOptions{Graph: agentsdk.RoundRobin([]string{"alice", "bob"}, 500),
				Participants: agentsdk.AutoAccepted("bob")})
			if err == nil {
				_, err = alice.Follow(ctx, s.ID(), 1, func(*agentsdk.Envelope) error { return nil })
			}
			if err != nil && ctx.Err() == nil {
				opened <- err
				return
			}
		}
	}()
	select {
	case <-done:
	case err := <-opened:
		b.Fatal(err)
	}
	b.StopTimer()
}
