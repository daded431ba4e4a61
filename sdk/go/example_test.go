package sdkgo_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
	"github.com/hubd/hubd/hubpb"
)

// Three agents run a pipeline: each serves its turns with a scripted
// handler, the researcher opens the session, and the transcript is read by
// following the session until it closes.
func Example() {
	ctx := context.Background()
	h, err := hubtest.Start(ctx, hubtest.Options{})
	if err != nil {
		panic(err)
	}
	defer h.Close()

	lines := map[string]string{
		"researcher": "Badger syncs every transaction.",
		"writer":     "Draft: group commit makes durable writes fast.",
		"editor":     "Approved.",
	}
	serving, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var researcher *agentsdk.Client
	for _, name := range []string{"researcher", "writer", "editor"} {
		c, err := agentsdk.Dial(ctx, h.Addr(), agentsdk.Options{Name: name})
		if err != nil {
			panic(err)
		}
		defer c.Close()
		if name == "researcher" {
			researcher = c
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Serve(serving, func(ctx context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
				return agentsdk.ReplyText(lines[name]), nil
			})
		}()
	}

	// The writer and the editor are invited; their Serve accepts.
	s, err := researcher.OpenWorkflow(ctx, agentsdk.Sequence("researcher", "writer", "editor"), "writer", "editor")
	if err != nil {
		panic(err)
	}
	end, err := researcher.Follow(ctx, s.ID(), 1, func(e *hubpb.Envelope) error {
		if agentsdk.IsTurn(e) {
			fmt.Printf("[%d] %s: %s\n", e.GetSeq(), e.GetFrom(), agentsdk.TextOf(e))
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("closed:", end.GetEnded().GetReason())
	stop()
	wg.Wait()
	// Output:
	// [5] researcher: Badger syncs every transaction.
	// [6] writer: Draft: group commit makes durable writes fast.
	// [7] editor: Approved.
	// closed: sequence_complete
}

// A router hands the turn to a specialist with a packet naming a transfer
// tool; the graph's tool_called rule picks the specialist.
func Example_handoff() {
	ctx := context.Background()
	h, err := hubtest.Start(ctx, hubtest.Options{})
	if err != nil {
		panic(err)
	}
	defer h.Close()
	router, err := agentsdk.Dial(ctx, h.Addr(), agentsdk.Options{Name: "router"})
	if err != nil {
		panic(err)
	}
	defer router.Close()

	g := agentsdk.Supervisor(agentsdk.SupervisorSpec{Router: "router", Specialists: []string{"billing", "tech"}})
	s, err := router.Open(ctx, agentsdk.OpenOptions{Graph: g, Participants: agentsdk.AutoAccepted("billing", "tech")})
	if err != nil {
		panic(err)
	}
	p := agentsdk.NewPacket("The customer was charged twice.").
		Handoff("transfer_to_billing", "", "double charge").
		Set("ticket", 4711)
	if _, err := router.SendPacket(ctx, s.ID(), p); err != nil {
		panic(err)
	}
	s, err = router.GetSession(ctx, s.ID())
	if err != nil {
		panic(err)
	}
	var ticket int
	if _, err := s.Var("ticket", &ticket); err != nil {
		panic(err)
	}
	fmt.Println("next:", s.GetExpected())
	fmt.Println("ticket:", ticket)
	// Output:
	// next: [billing]
	// ticket: 4711
}

// Speaking out of turn is refused with a precise error that errors.Is
// matches; the hub's message says who was expected.
func Example_errors() {
	ctx := context.Background()
	h, err := hubtest.Start(ctx, hubtest.Options{})
	if err != nil {
		panic(err)
	}
	defer h.Close()
	alice, err := agentsdk.Dial(ctx, h.Addr(), agentsdk.Options{Name: "alice"})
	if err != nil {
		panic(err)
	}
	defer alice.Close()
	carol, err := agentsdk.Dial(ctx, h.Addr(), agentsdk.Options{Name: "carol"})
	if err != nil {
		panic(err)
	}
	defer carol.Close()

	s, err := alice.Open(ctx, agentsdk.OpenOptions{
		Graph:        agentsdk.Sequence("alice", "bob", "carol"),
		Participants: agentsdk.AutoAccepted("bob", "carol"),
	})
	if err != nil {
		panic(err)
	}
	_, err = carol.SendText(ctx, s.ID(), "Me first!")
	if errors.Is(err, agentsdk.ErrOutOfTurn) {
		var e *agentsdk.Error
		errors.As(err, &e)
		fmt.Println(e.Reason, e.Code)
		fmt.Println(e.Message)
	}
	// Output:
	// OUT_OF_TURN FailedPrecondition
	// workflow expects "alice" to speak, got "carol"
}
