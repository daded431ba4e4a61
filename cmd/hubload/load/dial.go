package load

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/hubd/hubd/agentsdk"
)

// maxRecvBytes bounds one response (a page of ReadLog is the largest).
const maxRecvBytes = 256 << 20

// readyTimeout is how long hubload waits for the hub to accept
// connections (it may have just been started or restarted).
const readyTimeout = 10 * time.Second

// pool is the agents' clients: one agentsdk.Client per connection. With
// one connection per agent (the default) each client is its agent's own.
// Agents sharing a connection (--conns) name themselves per call: see
// callerCreds.
type pool struct {
	clients []*agentsdk.Client
}

// dial connects the agents names over conns connections to addr (agent i
// uses connection i mod conns), each named after its first agent, and
// waits up to readyTimeout for each connection to be ready. Sends are
// tried once: hubload retries them itself. addr may list the nodes of a
// cluster, comma-separated: connection i goes to node i mod N (which runs
// every call where its session is served) and fails over to the others
// (agentsdk.Options.Peers).
func dial(ctx context.Context, addr string, names []string, conns int) (*pool, error) {
	return dialWith(ctx, addr, names, conns, agentsdk.TransportStream, nil)
}

// dialWith is dial with the clients' transport (agentsdk.Options.Transport)
// and their diagnostics sent to logf (nil: dropped). Clients several
// agents share send unary calls, each naming its agent: a client's own
// agent stream is one agent's (the agents' own streams, Client.Connect
// named with as, are theirs).
func dialWith(ctx context.Context, addr string, names []string, conns int, transport string, logf func(string, ...any)) (*pool, error) {
	nodes := strings.Split(addr, ",")
	var peers []string
	if len(nodes) > 1 {
		peers = nodes
	}
	p := &pool{clients: make([]*agentsdk.Client, conns)}
	opts := []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecvBytes))}
	if conns < len(names) { // agents share connections
		opts = append(opts, grpc.WithPerRPCCredentials(callerCreds{}))
		transport = agentsdk.TransportUnary
	}
	ctx, giveUp := context.WithCancel(ctx) // after the first failure
	defer giveUp()
	err := forEach(conns, func(i int) error {
		ctx, cancel := context.WithTimeout(ctx, readyTimeout)
		defer cancel()
		c, err := agentsdk.Dial(ctx, nodes[i%len(nodes)], agentsdk.Options{Name: names[i], SendAttempts: 1, DialOptions: opts, Peers: peers, Logf: logf,
			Transport: transport})
		if err != nil {
			giveUp()
		}
		p.clients[i] = c
		return err
	})
	if err != nil {
		p.close()
		return nil, fmt.Errorf("the hub at %s is not reachable (waited at most %v): %w", addr, readyTimeout, err)
	}
	return p, nil
}

// client returns the client agent i uses.
func (p *pool) client(i int) *agentsdk.Client { return p.clients[i%len(p.clients)] }

// close closes every connection.
func (p *pool) close() {
	for _, c := range p.clients {
		if c != nil {
			c.Close()
		}
	}
}

// callerKey is the context key of the agent a call is made as.
type callerKey struct{}

// as returns ctx naming agent as the caller, built once per agent. It
// matters only on a shared connection, where callerCreds reads it.
func as(ctx context.Context, agent string) context.Context {
	return context.WithValue(ctx, callerKey{}, agent)
}

// callerCreds names the agent of each call on a connection several agents
// share (development mode). agentsdk names the agent per connection;
// per-call credentials given in Options.DialOptions come after its own and
// so override its x-hubd-agent value with the agent in the call's context.
type callerCreds struct{}

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (callerCreds) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	name, ok := ctx.Value(callerKey{}).(string)
	if !ok {
		return nil, nil // the connection's own agent
	}
	return map[string]string{agentsdk.AgentHeader: name}, nil
}

// RequireTransportSecurity is false: hubload only drives a loopback hub.
func (callerCreds) RequireTransportSecurity() bool { return false }

// reasonOf names a failure for the rejected counts: the hub's stable
// reason (a hubpb.Reason name), or the gRPC code in upper snake case when
// it carries none ("UNAVAILABLE" while the hub is down).
func reasonOf(err error) string {
	if r, ok := agentsdk.Reason(err); ok {
		return r
	}
	var e *agentsdk.Error
	switch {
	case errors.As(err, &e):
		return codeName(e.Code.String())
	case errors.Is(err, context.Canceled):
		return "CANCELED"
	}
	return "ERROR"
}

// codeName spells a gRPC code's name ("FailedPrecondition") the way
// reasons are spelled ("FAILED_PRECONDITION").
func codeName(code string) string {
	var b strings.Builder
	lower := false
	for _, r := range code {
		upper := r >= 'A' && r <= 'Z'
		if upper && lower {
			b.WriteByte('_')
		}
		lower = !upper
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

// retryable reports whether a failed send may be retried with the same
// client_msg_id: the hub was unreachable, draining or reloading the
// session.
func retryable(err error) bool {
	return errors.Is(err, agentsdk.ErrUnavailable) || errors.Is(err, agentsdk.ErrNotOwner)
}

// backoff is a retry delay doubling from 20ms to 1s.
type backoff struct{ d time.Duration }

// wait sleeps for the next delay or until done is closed; it reports
// whether the delay elapsed.
func (b *backoff) wait(done <-chan struct{}) bool {
	b.d = min(max(2*b.d, 20*time.Millisecond), time.Second)
	t := time.NewTimer(b.d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// reset starts the delays over after a success.
func (b *backoff) reset() { b.d = 0 }
