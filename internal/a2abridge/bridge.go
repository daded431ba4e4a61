// Package a2abridge lets an outside A2A agent take part in hubd sessions
// under a hubd agent name: a bridge is an ordinary hubd agent (agentsdk's
// Serve, connected to the hub's own gRPC listener as that name) whose
// turns are A2A tasks of the remote agent, spoken in A2A 1.0's JSON-RPC
// binding.
//
// On a turn the bridge sends the turn's view as an A2A message (its id
// derived from the turn, its contextId the session's thread or the
// session) and records the remote task's id in the session, as a
// tool_call envelope named "a2a", before it waits: a bridge that starts
// again (after a hub restart) with the turn still its own finds the
// record and follows the task by its id (GetTask, SubscribeToTask)
// instead of sending the message again. The task's status updates become
// task_progress envelopes; TASK_STATE_INPUT_REQUIRED becomes a question
// in the session (answered by the root session's creator, with hubd
// questions answer, the web view or an SDK), whose answer goes back to the
// task as the next message; the artifacts of a completed task become the
// bridge's reply. docs/INTEROP.md states the whole mapping.
package a2abridge

import (
	"context"
	"crypto/tls"
	"net/http"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/a2aconf"
	"github.com/hubd/hubd/internal/a2apb"
)

// Options configure a bridge.
type Options struct {
	// Remote is the outside agent and the hubd name it takes part as.
	Remote a2aconf.Remote
	// Hub is the hub's gRPC address.
	Hub string
	// Token is the hubd bearer token of Remote.Agent; "": development
	// mode (the name is sent as x-hubd-agent).
	Token string
	// TLS secures the connection to the hub; nil: plaintext.
	TLS *tls.Config
	// HTTP is the client of the remote's requests; nil: one of its own.
	HTTP *http.Client
	// Retry bounds the retries of a transient failure of the remote (a
	// refused connection, 408, 429, 5xx); zero: DefaultBackoff.
	Retry Backoff
	// Poll is the longest wait between two GetTask calls of a remote
	// without streaming; zero: one second.
	Poll time.Duration
	// Logger receives the bridge's diagnostics.
	Logger zerolog.Logger
}

// Bridge is one remote agent in hubd sessions.
type Bridge struct {
	o  Options
	lg zerolog.Logger

	mu     sync.Mutex // guards the card's fields of r
	r      *remote
	hasURL bool

	tmu     sync.Mutex
	running map[string]string // the remote task of each session's turn under way
	cancels sync.WaitGroup    // CancelTask calls in flight
}

// New returns the bridge of o; Run runs it.
func New(o Options) *Bridge {
	if o.Retry == (Backoff{}) {
		o.Retry = DefaultBackoff()
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	lg := o.Logger.With().Str("a2a_remote", o.Remote.Agent).Logger()
	return &Bridge{o: o, lg: lg, running: map[string]string{}, r: &remote{cardURL: o.Remote.Card, headers: o.Remote.Headers, http: o.HTTP, retry: o.Retry}}
}

// Run serves the remote's turns until ctx ends: it connects to the hub
// as the remote's name and serves, and connects again (with backoff)
// when serving fails.
func (b *Bridge) Run(ctx context.Context) {
	defer b.cancels.Wait()
	delay := b.o.Retry.Base
	for ctx.Err() == nil {
		err := b.serve(ctx)
		if ctx.Err() != nil {
			return
		}
		b.lg.Error().Err(err).Dur("retry_in", delay).Msg("a2a bridge: serving the remote agent's turns failed")
		if !sleep(ctx, delay) {
			return
		}
		delay = min(2*delay, b.o.Retry.Max)
	}
}

// serve connects once and serves until the connection fails for good.
func (b *Bridge) serve(ctx context.Context) error {
	c, err := agentsdk.Dial(ctx, b.o.Hub, agentsdk.Options{Name: b.o.Remote.Agent, Token: b.o.Token, TLS: b.o.TLS,
		Logf: func(format string, args ...any) { b.lg.Debug().Msgf(format, args...) }})
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Serve(ctx, b.turn, agentsdk.WithSessionEnd(b.ended))
}

// track notes the remote task of the turn under way in a session; ""
// forgets it.
func (b *Bridge) track(session, taskID string) {
	b.tmu.Lock()
	defer b.tmu.Unlock()
	if taskID == "" {
		delete(b.running, session)
		return
	}
	b.running[session] = taskID
}

// cancelTimeout bounds the CancelTask of a task whose session ended.
const cancelTimeout = 5 * time.Second

// ended cancels the remote task of a session that ended (closed by its
// creator or an operator, expired, closed by a timer) while the task ran:
// nobody waits for its result any more.
func (b *Bridge) ended(end *hubpb.Envelope) {
	id := end.GetSessionId()
	b.tmu.Lock()
	taskID, ok := b.running[id]
	delete(b.running, id)
	b.tmu.Unlock()
	if !ok {
		return
	}
	b.cancels.Add(1)
	go func() {
		defer b.cancels.Done()
		ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
		defer cancel()
		var tk a2apb.Task
		if err := b.r.call(ctx, "CancelTask", &a2apb.CancelTaskRequest{Id: taskID}, &tk); err != nil {
			b.lg.Warn().Err(err).Str("session", id).Str("task", taskID).Msg("a2a bridge: cancelling the task of an ended session")
			return
		}
		b.lg.Info().Str("session", id).Str("task", taskID).Str("state", tk.GetStatus().GetState().String()).
			Msg("a2a bridge: the session ended: task cancelled")
	}()
}

// remote returns the remote, its card read (once; again after a failure).
func (b *Bridge) remote(ctx context.Context) (*remote, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.hasURL {
		if err := b.r.fetchCard(ctx); err != nil {
			return nil, err
		}
		b.hasURL = true
	}
	return b.r, nil
}
