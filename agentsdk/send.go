package agentsdk

import (
	"context"
	"crypto/rand"

	"github.com/hubd/hubd/hubpb"
)

// Ack acknowledges a durable write: the hub's SendResponse (its seq, id,
// time, duplicate and close fields and getters are promoted), with the
// idempotency key the envelope was sent with.
type Ack struct {
	*hubpb.SendResponse
	// ClientMsgID is the idempotency key the envelope was sent with (given
	// with WithClientMsgID, or generated).
	ClientMsgID string
}

// SendOption tunes one send.
type SendOption func(*hubpb.Envelope)

// WithClientMsgID sets the envelope's idempotency key: a send repeated with
// the same key is answered with the original's seq (Ack.Duplicate) and
// writes nothing. Without it the SDK generates a random key per call.
func WithClientMsgID(id string) SendOption {
	return func(e *hubpb.Envelope) { e.ClientMsgId = id }
}

// WithCausation names the envelope this one answers.
func WithCausation(envelopeID string) SendOption {
	return func(e *hubpb.Envelope) { e.CausationId = envelopeID }
}

// WithAudience delivers the envelope to the named participants only (none:
// log only). Without it every participant but the sender receives it.
func WithAudience(names ...string) SendOption {
	return func(e *hubpb.Envelope) { e.Audience = &hubpb.Audience{Names: append([]string{}, names...)} }
}

// WithTraceParent carries a W3C traceparent with the envelope.
func WithTraceParent(tp string) SendOption {
	return func(e *hubpb.Envelope) { e.Traceparent = tp }
}

// SendText takes a turn with plain text.
func (c *Client) SendText(ctx context.Context, sessionID, text string, opts ...SendOption) (Ack, error) {
	return c.sendOwned(ctx, sessionID, &hubpb.Envelope{Type: EventText, Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: text}}}, opts...)
}

// SendPacket takes a turn with a packet: its body, its routing (handoff,
// finish, escalate), its context updates (applied before routing) and its
// usage.
func (c *Client) SendPacket(ctx context.Context, sessionID string, p *Packet, opts ...SendOption) (Ack, error) {
	pb, err := p.Proto()
	if err != nil {
		return Ack{}, err
	}
	return c.sendOwned(ctx, sessionID, &hubpb.Envelope{Type: EventPacket, Payload: &hubpb.Envelope_Packet{Packet: pb}}, opts...)
}

// SetContext sets session context variables (values encoded as JSON). Any
// participant may do so at any time; it is not a turn.
func (c *Client) SetContext(ctx context.Context, sessionID string, set map[string]any, opts ...SendOption) (Ack, error) {
	return c.UpdateContext(ctx, sessionID, ContextUpdate{Set: set}, opts...)
}

// UpdateContext deletes, then sets, session context variables; it is not a
// turn.
func (c *Client) UpdateContext(ctx context.Context, sessionID string, u ContextUpdate, opts ...SendOption) (Ack, error) {
	pb, err := u.Proto()
	if err != nil {
		return Ack{}, err
	}
	return c.sendOwned(ctx, sessionID, &hubpb.Envelope{Type: EventContextSet, Payload: &hubpb.Envelope_ContextSet{ContextSet: pb}}, opts...)
}

// SendEvent sends a custom event: an application type with opaque data,
// logged and delivered, never a turn.
func (c *Client) SendEvent(ctx context.Context, sessionID, eventType string, data []byte, opts ...SendOption) (Ack, error) {
	if data == nil {
		data = []byte{}
	}
	return c.sendOwned(ctx, sessionID, &hubpb.Envelope{Type: eventType, Payload: &hubpb.Envelope_Custom{Custom: data}}, opts...)
}

// Send sends any envelope (questions, answers, task progress, ...); the
// hub sets its session, seq, id, sender and time. env is not modified. A
// send the hub cannot take now ([ErrUnavailable]) is retried within
// Options.RetryBudget, each time once the connection is ready, with the
// same client message id, so it is written at most once.
func (c *Client) Send(ctx context.Context, sessionID string, env *hubpb.Envelope, opts ...SendOption) (Ack, error) {
	return c.sendOwned(ctx, sessionID, cloneEnvelope(env), opts...)
}

// sendOwned is Send of an envelope the SDK made (and may change).
func (c *Client) sendOwned(ctx context.Context, sessionID string, e *hubpb.Envelope, opts ...SendOption) (Ack, error) {
	for _, o := range opts {
		o(e)
	}
	if e.ClientMsgId == "" {
		e.ClientMsgId = newMsgID()
	}
	return c.send(ctx, sessionID, e, c.attempts)
}

// send sends e, retrying while the hub is unavailable within the
// client's retry budget, up to attempts tries (0: no cap).
func (c *Client) send(ctx context.Context, sessionID string, e *hubpb.Envelope, attempts int) (Ack, error) {
	req := &hubpb.SendRequest{SessionId: sessionID, Envelope: e}
	var ack Ack
	err := c.retry(ctx, "send to "+sessionID, attempts, func() error {
		st, err := c.mainStream(ctx)
		if err != nil {
			return err
		}
		if st != nil {
			ack, err = st.send(ctx, sessionID, e)
			return err
		}
		resp, err := c.rpc.Send(ctx, req)
		if err == nil {
			ack = Ack{SendResponse: resp, ClientMsgID: e.GetClientMsgId()}
		}
		return wrapErr("send", err)
	})
	return ack, err
}

func cloneEnvelope(env *hubpb.Envelope) *hubpb.Envelope {
	if env == nil {
		return &hubpb.Envelope{}
	}
	return protoClone(env)
}

// newMsgID returns a random client message id.
func newMsgID() string { return "m-" + rand.Text() }
