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
// # Messages
//
// The SDK speaks the hub's own messages, the generated types of package
// hubpb (the schema in hubpb/hub.proto, which every language shares):
// envelopes (*hubpb.Envelope), deliveries, views and session info are read
// with their getters, and a few functions make the common cases short:
// [TextOf] (what an envelope says in words), [IsTurn], [Ends], and [Value]
// and [Decode] between Go values and the hub's context values and knobs.
// A [Session] is the hub's SessionInfo with [Session.ID], [Session.Ended]
// and [Session.Var]; an [Ack] is its SendResponse with the client message
// id the write was sent with.
//
// # Sessions and turns
//
// [Client.Open] creates a session (the caller is its creator); participants
// not marked AutoAccept ([Invited] rather than [AutoAccepted]) must
// [Client.AckInvite] before it opens. A workflow session follows a
// transition [Graph], built with [Sequence], [RoundRobin], [Supervisor] or
// [NewGraph] and the condition and target constructors; the SDK writes the
// hub's graph JSON without depending on the hub.
//
//	s, err := c.OpenWorkflow(ctx, agentsdk.Sequence("researcher", "writer"), "writer")
//
// The hub tells the expected speaker it is its turn through its
// [Client.Subscribe] stream (a delivery with your_turn set, carrying the
// envelope that began the turn). A turn is a text ([Client.SendText]) or a
// [Packet] ([Client.SendPacket]) that can hand off, finish, escalate and
// update the session's context; context can also be set outside turns
// ([Client.SetContext]). Every write is acknowledged with an [Ack] once it
// is durable; a client message id ([WithClientMsgID], generated when not
// given) makes a retry return the original instead of writing again.
// Sends go over the Client's agent stream ([Client.Connect]: one
// bidirectional stream carries the sends and their acknowledgements) or,
// with Options.Transport unary, in a cluster and against a hub without
// the stream, as one Send call each.
//
//	p := agentsdk.NewPacket("Over to billing.").Handoff("transfer_to_billing", "", "a refund").Set("ticket", 4711)
//	ack, err := c.SendPacket(ctx, s.ID(), p)
//
// [Client.Follow] reads a session from a seq until it ends, across
// reconnects, and returns the envelope that ended it:
//
//	end, err := c.Follow(ctx, s.ID(), 1, func(e *hubpb.Envelope) error {
//		if agentsdk.IsTurn(e) {
//			fmt.Printf("%s: %s\n", e.GetFrom(), agentsdk.TextOf(e))
//		}
//		return nil
//	})
//	fmt.Println("closed:", end.GetEnded().GetReason())
//
// # Serving
//
// [Client.Serve] runs an agent: it accepts invites, calls a [Handler] once
// per turn (sequentially per session) with a [Turn]: the triggering
// envelope and the agent's view of the session ([Client.View]), posts the
// reply idempotently, and survives a restarting hub, a dropped connection
// or being cut off as a slow subscriber by resubscribing from its cursors.
//
//	err := c.Serve(ctx, func(ctx context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
//		return agentsdk.ReplyText("Findings on " + t.Text()), nil
//	})
//
// An agent serves every session it is invited to, whoever opened it: the
// hub offers a session to every client connected under the invited name.
// To serve only some, label them when opening them and filter on the label
// with [WithSessionFilter].
//
// # Errors
//
// A refused call returns an [*Error] with the hub's message, its stable
// reason (google.rpc.ErrorInfo, domain "hubd", a hubpb.Reason name) and
// gRPC code. It matches one of the sentinels with errors.Is:
//
//	if errors.Is(err, agentsdk.ErrOutOfTurn) { ... } // workflow expects "bob" to speak, got "carol"
//
// # A cluster
//
// Several hubd nodes may serve one session space (docs/SCALING.md): any
// node runs any call and stream for any session, on the node that serves
// it, so a Client of one node needs nothing more. Give the other nodes in
// Options.Peers for failover: the connection moves to another node when
// its own stops answering.
//
// # Testing
//
// Package hub/hubtest starts a real hub in process, on a free loopback port
// with its log in memory, for an agent's tests:
//
//	h := hubtest.New(t)
//	c, err := agentsdk.Dial(ctx, h.Addr(), agentsdk.Options{Name: "me"})
//
// The package imports only the hub's wire API (packages hubpb and
// hubpb/hubsvc), gRPC and protobuf; it never imports the hub itself.
package agentsdk
