package hubtest_test

import (
	"context"
	"fmt"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
)

// A test hub, an agent dialled to it, and a session opened and closed.
func Example() {
	ctx := context.Background()
	h, err := hubtest.Start(ctx, hubtest.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	c, err := agentsdk.Dial(ctx, h.Addr(), agentsdk.Options{Name: "alice"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	s, err := c.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.GetState())
	ack, err := c.CloseSession(ctx, s.ID(), "")
	fmt.Println(ack.GetCloseReason(), err)
	// Output:
	// OPEN
	// explicit_close <nil>
}
