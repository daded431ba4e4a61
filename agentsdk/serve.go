package agentsdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/hubd/hubd/hubpb"
)

// Handler answers one of the agent's turns. Serve calls it once per turn
// (per envelope that began a turn), one turn at a time per session; turns
// of different sessions may run concurrently. ctx is cancelled when Serve
// stops or the session ends. Return the reply to post, a zero Reply to post
// nothing (the turn stays the agent's; the hub does not move on), or an
// error, which is logged and posts nothing (the turn is offered again only
// by a new Serve). The handler may call the Client itself (SetContext,
// GetSession, ...). ctx carries the trigger's trace (its traceparent, in a
// span "agentsdk.turn" with WithTracerProvider): spans the handler starts
// and calls it makes join the session's trace, and the reply carries it on.
type Handler func(ctx context.Context, t *Turn) (Reply, error)

// Turn is one turn of the agent in a session.
type Turn struct {
	// SessionID is the session.
	SessionID string
	// Trigger is the envelope that began the turn: the previous speaker's
	// text or packet, or the session_opened envelope for the first speaker.
	// Its payload is nil when the agent may not see it.
	Trigger *hubpb.Envelope
	// View is the agent's view of the session (the default view unless
	// WithView chose another); nil with WithView("").
	View *hubpb.View
	// Client is the client serving the turn.
	Client *Client

	ops     int          // operations begun (opID)
	consume func(uint64) // a turn begun at seq was taken by this handler
}

// Resumed reports whether the turn was given back after a wait the
// handler did not see end (the agent process restarted while waiting): its
// trigger is then the delegation result or the answer it waited for.
func (t *Turn) Resumed() bool {
	switch t.Trigger.GetType() {
	case EventDelegationResult, EventAnswer:
		return true
	}
	return false
}

// Text returns what the trigger says in words (see [TextOf]).
func (t *Turn) Text() string { return TextOf(t.Trigger) }

// Reply is what a handler says on its turn: a text, or a packet (with
// routing, context updates, usage). The zero Reply says nothing.
type Reply struct {
	Text   string
	Packet *Packet
}

// ReplyText is a Reply with plain text.
func ReplyText(text string) Reply { return Reply{Text: text} }

// ReplyPacket is a Reply with a packet.
func ReplyPacket(p *Packet) Reply { return Reply{Packet: p} }

// IsZero reports whether r says nothing.
func (r Reply) IsZero() bool { return r.Packet == nil && r.Text == "" }

// Invite is an invitation to a session, as given to an InviteFunc.
type Invite struct {
	SessionID string
	// Invitees are everyone who must acknowledge.
	Invitees []string
	// Envelope is the session_invite envelope.
	Envelope *hubpb.Envelope
}

// InviteFunc decides an invite for Serve: nil accepts it (AckInvite), an
// error rejects it (RejectInvite, with the error's text as the reason).
// Call Client.GetSession to see the session's type, creator and
// participants.
type InviteFunc func(ctx context.Context, inv Invite) error

// ServeOption tunes Serve.
type ServeOption func(*serveConfig)

type serveConfig struct {
	invites        InviteFunc
	view           *ViewOptions
	base, maxDelay time.Duration
	observe        func(*hubpb.Delivery)
	ends           func(*hubpb.Envelope)
	onReconnect    func(error)
	tracer         trace.Tracer // nil: no spans recorded
	filter         func(*Session) bool
}

// WithInvites decides invites with f instead of accepting every one.
func WithInvites(f InviteFunc) ServeOption {
	return func(c *serveConfig) { c.invites = f }
}

// WithView chooses the view given to the handler by name (ViewDefault,
// ViewFull, ViewWindowed with window, ViewLast); "" gives none. Serve asks
// the hub to put the view in each turn notice; it calls View itself only
// for a turn told without one (a pending turn listed at subscription).
func WithView(name string, window int) ServeOption {
	return func(c *serveConfig) {
		if name == "" {
			c.view = nil
			return
		}
		c.view = &ViewOptions{Name: name, Window: window}
	}
}

// WithBackoff sets the reconnect backoff: exponential from base, capped at
// max, jittered. Default 100ms to 5s.
func WithBackoff(base, max time.Duration) ServeOption {
	return func(c *serveConfig) { c.base, c.maxDelay = base, max }
}

// WithObserver calls f with every delivery of the agent's stream, in order,
// before Serve acts on it (for transcripts and metrics). With it, the
// stream carries every envelope addressed to the agent; without it, only
// what Serve acts on (SubscribeOptions.Terse). f runs on the stream's
// reader: while it blocks, nothing is read (over the agent stream, the
// acknowledgements of the replies neither).
func WithObserver(f func(*hubpb.Delivery)) ServeOption {
	return func(c *serveConfig) { c.observe = f }
}

// WithSessionEnd calls f with the envelope that ended each of the agent's
// sessions (session_closed or session_expired) when the stream delivers
// it, before Serve cancels the session's running handler. It runs on the
// stream's reader, as WithObserver's function does, and keeps the stream
// terse: an agent that opens sessions and waits for their ends needs no
// observer.
func WithSessionEnd(f func(end *hubpb.Envelope)) ServeOption {
	return func(c *serveConfig) { c.ends = f }
}

// WithSessionFilter serves only the sessions keep accepts. Serve asks the
// hub for a session the first time it sees it (an invite, a turn; one
// GetSession, retried while the hub is unavailable) and calls keep with
// it, from the goroutine of the invite or turn, not the stream's reader;
// the answer holds until the session ends. Of a session keep refuses,
// Serve answers no invite (it stays pending for another client of the
// agent's name, or until it times out) and takes no turn; WithObserver's
// and WithSessionEnd's functions still see what the stream carries of it.
// A session Serve cannot read is not served (the error is logged).
//
// Every client of an agent's name is offered the sessions that name is
// invited to: an agent that should serve only some of them (an example's
// run, a tenant, a deployment) keeps those by their labels
// (s.GetMeta().GetLabels()), set by whoever opens them.
func WithSessionFilter(keep func(s *Session) bool) ServeOption {
	return func(c *serveConfig) { c.filter = keep }
}

// WithReconnectHook calls f with the error that broke the stream each time
// Serve resubscribes.
func WithReconnectHook(f func(err error)) ServeOption {
	return func(c *serveConfig) { c.onReconnect = f }
}

// Serve runs the agent: it subscribes to the agent's deliveries, acts on
// invites (accepting them unless WithInvites decides otherwise) and calls h
// for each of the agent's turns with the triggering envelope and the
// agent's view of the session, then posts h's reply. h is called once per
// turn, one turn at a time per session (see [Handler]); a turn superseded
// by a newer one of the same session before h started on it is skipped.
//
// A reply is posted with a client message id derived from the session and
// the trigger's seq, so a post retried after a broken connection is written
// once. When the stream breaks (the hub restarts or drains, the connection
// drops, or the hub cuts the agent off as a slow subscriber), Serve
// resubscribes with exponential backoff from the cursors it keeps (the last
// seq seen per session), so nothing is missed or seen twice; the new stream
// tells its pending turns again. Each turn notice carries the agent's view
// (SubscribeOptions.TurnView), so a turn costs no call before the handler.
// Without WithObserver the stream is terse (SubscribeOptions.Terse): the
// hub sends the agent its turns, invites, questions and session ends, not
// every envelope of its sessions.
// Serve reads its deliveries from its own agent stream and posts the
// replies on it ([ConnectOptions]: one stream, no call per reply), or,
// with Options.Transport unary, in a cluster or against a hub without
// the stream, from a Subscribe stream with a Send call per reply. A reply
// that the hub refuses because the turn has
// passed (a stale turn notice: OUT_OF_TURN, SESSION_CLOSED) is logged and
// dropped.
//
// Serve returns nil once ctx is done, after every running handler has
// returned, or an error that reconnecting cannot cure (ErrUnauthenticated,
// ...).
func (c *Client) Serve(ctx context.Context, h Handler, opts ...ServeOption) error {
	if h == nil {
		return errors.New("agentsdk: Serve needs a handler")
	}
	cfg := serveConfig{view: &ViewOptions{Name: ViewDefault}, base: 100 * time.Millisecond, maxDelay: 5 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithCancel(ctx)
	sv := &serving{c: c, h: h, cfg: cfg, cursors: map[string]uint64{}, sessions: map[string]*worker{}, verdicts: map[string]*verdict{},
		spare: make(chan func())}
	defer func() {
		cancel()
		sv.wg.Wait()
	}()
	for attempt := 0; ; {
		got, err := sv.subscription(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if !errors.Is(err, io.EOF) && !retryable(err) {
			return err
		}
		if got {
			attempt = 0
		}
		attempt++
		if f := cfg.onReconnect; f != nil {
			f(err)
		}
		c.logf("agentsdk: serve: stream ended: %v; resubscribing (attempt %d)", err, attempt)
		if !sleep(ctx, backoffDelay(attempt, cfg.base, cfg.maxDelay)) {
			return nil
		}
	}
}

// serving is one run of Serve.
type serving struct {
	c   *Client
	h   Handler
	cfg serveConfig
	// cursors is the last seq seen per session; only the reader touches it.
	cursors map[string]uint64

	stream atomic.Pointer[AgentStream] // the agent stream being read, if any

	mu       sync.Mutex
	sessions map[string]*worker
	verdicts map[string]*verdict // WithSessionFilter's answers, per session
	wg       sync.WaitGroup
	// spare hands a session's work to a goroutine that finished its own
	// within the last idleLinger, whose stack has grown to what a turn
	// needs (a goroutine per turn spent a tenth of a busy agent's CPU
	// growing stacks).
	spare chan func()
}

// idleLinger is how long a goroutine of Serve's, its session's turns
// done, waits to take another session's before it exits.
const idleLinger = 50 * time.Millisecond

// spawn runs f on a spare goroutine, or a new one.
func (sv *serving) spawn(ctx context.Context, f func()) {
	select {
	case sv.spare <- f:
		return
	default:
	}
	sv.wg.Add(1)
	go func() {
		defer sv.wg.Done()
		t := time.NewTimer(idleLinger)
		defer t.Stop()
		for {
			f()
			t.Reset(idleLinger)
			select {
			case f = <-sv.spare:
			case <-t.C:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
}

// worker is the turn state of one session.
type worker struct {
	last    uint64          // the latest trigger seq taken
	pending *hubpb.Delivery // the newest turn not yet started
	running bool
	ended   bool
	cancel  context.CancelFunc // of the running turn
}

// subscription reads one subscription until it breaks, and reports
// whether it delivered anything.
func (sv *serving) subscription(ctx context.Context) (bool, error) {
	if got, err, ok := sv.agentStream(ctx); ok {
		return got, err
	}
	s, err := sv.c.subscribe(ctx, sv.subscribeOptions(), grpc.WaitForReady(true))
	if err != nil {
		return false, err
	}
	defer s.Close()
	// The stream itself tells the pending turns (after what the cursors
	// missed), each with its view: no PendingTurns call is needed.
	got := false
	for {
		d, err := s.Recv()
		if err != nil {
			return got, err
		}
		got = true
		sv.deliver(ctx, d)
	}
}

// agentStream serves one agent stream until it breaks: its deliveries
// are acted on by its reader, and the handlers' replies go over it. It
// reports whether it delivered anything, why it ended, and false when the
// Client sends unary (then subscription reads a Subscribe stream).
func (sv *serving) agentStream(ctx context.Context) (bool, error, bool) {
	sv.c.smu.Lock()
	unary := sv.c.unary
	sv.c.smu.Unlock()
	if unary {
		return false, nil, false
	}
	var got atomic.Bool
	sub := sv.subscribeOptions()
	st, err := sv.c.connect(ctx, ctx, ConnectOptions{
		Subscribe: &sub,
		OnDelivery: func(d *hubpb.Delivery) {
			got.Store(true)
			sv.deliver(ctx, d)
		},
	}, grpc.WaitForReady(true))
	if errors.Is(err, errNoStream) {
		sv.c.smu.Lock()
		sv.c.unary = true
		sv.c.smu.Unlock()
		sv.c.logf("agentsdk: serve: the hub has no agent stream: subscribing instead")
		return false, nil, false
	}
	if err != nil {
		return false, err, true
	}
	sv.stream.Store(st)
	defer func() {
		sv.stream.CompareAndSwap(st, nil)
		st.Close()
	}()
	select {
	case <-st.Done():
	case <-ctx.Done():
	}
	return got.Load(), st.Err(), true
}

// subscribeOptions is what Serve's stream delivers: from its cursors, each
// turn with its view, and only what Serve acts on unless an observer
// wants everything.
func (sv *serving) subscribeOptions() SubscribeOptions {
	return SubscribeOptions{Cursors: sv.cursors, TurnView: sv.cfg.view, Terse: sv.cfg.observe == nil}
}

// send posts a reply: over Serve's stream while it has one, else as the
// Client sends.
func (sv *serving) send(ctx context.Context, id string, env *hubpb.Envelope) error {
	if st := sv.stream.Load(); st != nil {
		_, err := st.send(ctx, id, env)
		return err
	}
	_, err := sv.c.send(ctx, id, env, 1)
	return err
}

// deliver acts on one delivery of the stream.
func (sv *serving) deliver(ctx context.Context, d *hubpb.Delivery) {
	if f := sv.cfg.observe; f != nil {
		f(d)
	}
	e := d.GetEnvelope()
	id := e.GetSessionId()
	if e.GetSeq() > sv.cursors[id] {
		sv.cursors[id] = e.GetSeq()
	}
	switch {
	case Ends(e):
		if f := sv.cfg.ends; f != nil {
			f(e)
		}
		delete(sv.cursors, id)
		sv.end(id)
		return
	case e.GetType() == EventInvite:
		sv.invite(ctx, e)
	}
	if d.GetYourTurn() {
		sv.dispatch(ctx, d)
	}
}

// invite answers an invite in the background.
func (sv *serving) invite(ctx context.Context, e *hubpb.Envelope) {
	invitees := e.GetInvite().GetInvitees()
	if me := sv.c.name; me != "" && !slices.Contains(invitees, me) {
		return
	}
	id := e.GetSessionId()
	sv.wg.Add(1)
	go func() {
		defer sv.wg.Done()
		inv := Invite{SessionID: id, Invitees: invitees, Envelope: e}
		if !sv.serves(ctx, id) {
			return // another client's to answer
		}
		var decision error
		if f := sv.cfg.invites; f != nil {
			decision = f(ctx, inv)
		}
		err := sv.retry(ctx, func() error {
			var err error
			if decision == nil {
				_, err = sv.c.AckInvite(ctx, id)
			} else {
				_, err = sv.c.RejectInvite(ctx, id, decision.Error())
			}
			return err
		})
		switch {
		case err == nil, ctx.Err() != nil:
		case errors.Is(err, ErrBadTransition), errors.Is(err, ErrSessionClosed):
			// An invite seen again after a restart, already answered.
		default:
			sv.c.logf("agentsdk: serve: answering the invite to %s: %v", id, err)
		}
	}()
}

// dispatch hands a turn to its session's worker, unless that turn (or a
// later one) was already taken.
func (sv *serving) dispatch(ctx context.Context, d *hubpb.Delivery) {
	id, seq := d.GetEnvelope().GetSessionId(), d.GetEnvelope().GetSeq()
	sv.mu.Lock()
	defer sv.mu.Unlock()
	w := sv.sessions[id]
	if w == nil {
		w = &worker{}
		sv.sessions[id] = w
	}
	if w.ended || seq <= w.last {
		return
	}
	w.last, w.pending = seq, d
	if !w.running {
		w.running = true
		sv.wg.Add(1)
		sv.spawn(ctx, func() { sv.work(ctx, id, w) })
	}
}

// consume records that a handler waiting in session id (Turn.Delegate,
// Turn.Ask, Task.Wait) took the turn begun at seq itself: that turn, told
// by the stream or by PendingTurns, does not start the handler again.
func (sv *serving) consume(id string, seq uint64) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	w := sv.sessions[id]
	if w == nil {
		return
	}
	w.last = max(w.last, seq)
	if w.pending != nil && w.pending.GetEnvelope().GetSeq() <= w.last {
		w.pending = nil
	}
}

// end forgets an ended session: its pending turn is dropped and its
// running handler cancelled.
func (sv *serving) end(id string) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	delete(sv.verdicts, id)
	w := sv.sessions[id]
	if w == nil {
		return
	}
	w.ended, w.pending = true, nil
	if w.cancel != nil {
		w.cancel()
	}
	if !w.running {
		delete(sv.sessions, id)
	}
}

// work runs a session's turns one at a time until none is pending.
func (sv *serving) work(ctx context.Context, id string, w *worker) {
	defer sv.wg.Done()
	for {
		sv.mu.Lock()
		d := w.pending
		w.pending = nil
		if d == nil || ctx.Err() != nil {
			w.running, w.cancel = false, nil
			if w.ended {
				delete(sv.sessions, id)
			}
			sv.mu.Unlock()
			return
		}
		tctx, cancel := context.WithCancel(ctx)
		w.cancel = cancel
		sv.mu.Unlock()
		sv.turn(tctx, d)
		cancel()
	}
}

// turn runs the handler on one turn and posts its reply.
func (sv *serving) turn(ctx context.Context, d *hubpb.Delivery) {
	e := d.GetEnvelope()
	id := e.GetSessionId()
	if !sv.serves(ctx, id) {
		return
	}
	ctx, span := sv.startTurn(ctx, e)
	defer span.End()
	t := &Turn{SessionID: id, Trigger: e, Client: sv.c, consume: func(seq uint64) { sv.consume(id, seq) }}
	if v := sv.cfg.view; v != nil && d.GetView() != nil {
		t.View = d.GetView() // the turn notice carried it
	} else if v != nil {
		err := sv.retry(ctx, func() error {
			var err error
			t.View, err = sv.c.View(ctx, id, *v)
			return err
		})
		if err != nil {
			sv.stale(e, "view", err)
			return
		}
	}
	reply, err := sv.h(ctx, t)
	if err != nil {
		sv.c.logf("agentsdk: serve: handler for session %s (turn begun by seq %d): %v", id, e.GetSeq(), err)
		return
	}
	if reply.IsZero() {
		return
	}
	env, err := reply.envelope()
	if err != nil {
		sv.c.logf("agentsdk: serve: reply in session %s: %v", id, err)
		return
	}
	env.ClientMsgId = TurnMsgID(id, e.GetSeq())
	env.CausationId = e.GetId()
	if env.GetTraceparent() == "" {
		env.Traceparent = traceparentOf(ctx) // the turn's span: the next agent continues from it
	}
	err = sv.retry(ctx, func() error { return sv.send(ctx, id, env) })
	if err != nil {
		sv.stale(e, "reply", err)
	}
}

// verdict is WithSessionFilter's answer about one session, once done is
// closed.
type verdict struct {
	done chan struct{}
	keep bool
}

// serves reports whether Serve serves session id: always without a
// filter; with one, as it answers, asked once per session (a second
// caller waits for the first's answer).
func (sv *serving) serves(ctx context.Context, id string) bool {
	keep := sv.cfg.filter
	if keep == nil {
		return true
	}
	sv.mu.Lock()
	v, asked := sv.verdicts[id]
	if !asked {
		v = &verdict{done: make(chan struct{})}
		sv.verdicts[id] = v
	}
	sv.mu.Unlock()
	if asked {
		select {
		case <-v.done:
			return v.keep
		case <-ctx.Done():
			return false
		}
	}
	defer close(v.done)
	var s *Session
	err := sv.retry(ctx, func() error {
		var err error
		s, err = sv.c.GetSession(ctx, id)
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			sv.forget(id, v) // undecided: ask again next time
		} else {
			sv.c.logf("agentsdk: serve: session %s not served: reading it for the session filter: %v", id, err)
		}
		return false
	}
	v.keep = keep(s)
	return v.keep
}

// forget drops verdict v about session id, unless another has replaced it.
func (sv *serving) forget(id string, v *verdict) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.verdicts[id] == v {
		delete(sv.verdicts, id)
	}
}

// stale logs a failed step of a turn: quietly for a turn that had passed.
func (sv *serving) stale(e *hubpb.Envelope, step string, err error) {
	switch {
	case errors.Is(err, context.Canceled):
	case errors.Is(err, ErrOutOfTurn), errors.Is(err, ErrSessionClosed), errors.Is(err, ErrSessionNotOpen):
		sv.c.logf("agentsdk: serve: stale turn in session %s (begun by seq %d) ignored: %v", e.GetSessionId(), e.GetSeq(), err)
	default:
		sv.c.logf("agentsdk: serve: %s in session %s (turn begun by seq %d): %v", step, e.GetSessionId(), e.GetSeq(), err)
	}
}

// retry calls f until it succeeds, fails for good, or ctx is done.
func (sv *serving) retry(ctx context.Context, f func() error) error {
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil || !retryable(err) {
			return err
		}
		if !sleep(ctx, backoffDelay(attempt, sv.cfg.base, sv.cfg.maxDelay)) {
			return err
		}
	}
}

// TurnMsgID is the client message id Serve gives the reply to the turn
// begun by seq in a session: the same for every retry, so the reply is
// written once.
func TurnMsgID(sessionID string, seq uint64) string {
	return fmt.Sprintf("turn/%s/%d", sessionID, seq)
}

func (r Reply) envelope() (*hubpb.Envelope, error) {
	if r.Packet == nil {
		return &hubpb.Envelope{Type: EventText, Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: r.Text}}}, nil
	}
	p, err := r.Packet.Proto()
	if err != nil {
		return nil, err
	}
	return &hubpb.Envelope{Type: EventPacket, Payload: &hubpb.Envelope_Packet{Packet: p}}, nil
}
