// Package agentsdk is the Go client of hubd, the session hub for
// multi-agent systems: an agent dials the hub, opens sessions with other
// agents, takes its turns, and reads what the others said.
//
// # Connecting
//
// [Dial] connects as one agent. With Options.Token the client sends
// "authorization: Bearer <token>" on every call (over TLS, or plaintext to
// a loopback address); without one it names the agent in the x-hubd-agent
// metadata, which a hub accepts only in development mode (no tokens,
// loopback only).
//
//	c, err := agentsdk.Dial(ctx, "127.0.0.1:7420", agentsdk.Options{Name: "researcher"})
//
// # Sessions and turns
//
// [Client.Open] creates a session (the caller is its creator); participants
// not marked AutoAccept must [Client.AckInvite] before it opens. A workflow
// session follows a transition [Graph], built with [Sequence],
// [RoundRobin], [Supervisor] or [NewGraph] and the condition and target
// constructors; the SDK writes the hub's graph JSON without depending on the
// hub. The hub tells the expected speaker it is its turn through its
// [Client.Subscribe] stream (Delivery.YourTurn, with the envelope that began
// the turn). A turn is a text ([Client.SendText]) or a [Packet]
// ([Client.SendPacket]) that can hand off, finish, escalate and update the
// session's context; context can also be set outside turns
// ([Client.SetContext]). Every write is acknowledged with an [Ack] once it
// is durable; a client message id ([WithClientMsgID], generated when not
// given) makes a retry return the original instead of writing again.
//
// # Serving
//
// [Client.Serve] runs an agent: it accepts invites, calls a [Handler] once
// per turn (sequentially per session) with the triggering envelope and the
// agent's [View] of the session, posts the reply idempotently, and survives
// a restarting hub, a dropped connection or being cut off as a slow
// subscriber by resubscribing from its cursors.
//
//	err := c.Serve(ctx, func(ctx context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
//		return agentsdk.ReplyText("Findings: ..."), nil
//	})
//
// # Errors
//
// A refused call returns an [*Error] with the hub's message, its stable
// reason (google.rpc.ErrorInfo, domain "hubd") and gRPC code. It matches
// one of the sentinels with errors.Is:
//
//	if errors.Is(err, agentsdk.ErrOutOfTurn) { ... } // workflow expects "bob" to speak, got "carol"
//
// The package imports only the hub's wire API (package hubpb), gRPC and
// protobuf; it never imports the hub itself.
package agentsdk
