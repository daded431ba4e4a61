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
	"github.com/hubd/hubd/internal/a2aconf"
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
	return &Bridge{o: o, lg: lg, r: &remote{cardURL: o.Remote.Card, headers: o.Remote.Headers, http: o.HTTP, retry: o.Retry}}
}

// Run serves the remote's turns until ctx ends: it connects to the hub
// as the remote's name and serves, and connects again (with backoff)
// when serving fails.
func (b *Bridge) Run(ctx context.Context) {
	delay := b.o.Retry.Base
	for ctx.Err() == nil {
		err := b.serve(ctx)
		if ctx.Err() != nil {
			return
		}
		b.lg.Error().Err(err).Dur("retry_in", delay).Msg("a2a bridge: serving the remote agent's turns failed")
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
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
	return c.Serve(ctx, b.turn)
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
