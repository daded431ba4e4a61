package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
	"github.com/rs/zerolog"
)

// DefaultCallPrefix is the subject prefix of the calls between nodes: a
// node serves the calls sent to <prefix>.<node id>.
const DefaultCallPrefix = "hubd.node"

// DefaultCallTimeout bounds a call whose context has no deadline.
const DefaultCallTimeout = 30 * time.Second

// maxCallTimeout bounds the time a node gives a call it serves, whatever
// the caller asked.
const maxCallTimeout = 5 * time.Minute

// maxCallBytes bounds a call's or an answer's size once reassembled.
const maxCallBytes = 64 << 20

// ErrUnreachable reports a call nobody listens for: the node is gone (its
// NATS connection closed) or never was.
var ErrUnreachable = errors.New("cluster: the node does not answer calls (no responders)")

// ErrCallConfig reports an invalid CallsConfig.
var ErrCallConfig = errors.New("cluster: invalid calls config")

// errBadFrame reports a message of the calls' protocol that does not
// parse.
var errBadFrame = errors.New("cluster: malformed call frame")

// The headers of the calls' messages. Every message carries Hubd-Part
// ("i/n": part i of n, from 0); the first part of a call carries the
// rest.
const (
	hdrPart     = "Hubd-Part"
	hdrMethod   = "Hubd-Method"
	hdrAgent    = "Hubd-Agent"
	hdrOperator = "Hubd-Operator"
	hdrTimeout  = "Hubd-Timeout" // milliseconds
	hdrFrom     = "Hubd-From"
	hdrFailed   = "Hubd-Failed"  // the answer's body is a google.rpc.Status
	hdrServed   = "Hubd-Served"  // partitions the answering node served throughout
	hdrRefused  = "Hubd-Refused" // the call was not served: why
	hdrTrace    = "traceparent"
	hdrState    = "tracestate"
	hdrStatus   = "Status" // the NATS server's own: 503 for no responders
)

// CallsConfig configures ServeCalls.
type CallsConfig struct {
	// Conn is the NATS connection (required). Calls do not close it.
	Conn *nats.Conn
	// NodeID is this node's id (required): it serves <Prefix>.<NodeID>.
	NodeID string
	// Prefix of the subjects; default DefaultCallPrefix.
	Prefix string
	// Serve runs a call sent to this node (required). Its context ends at
	// the caller's deadline. It runs in its own goroutine.
	Serve func(ctx context.Context, c Call) Answer
	// Proof, when set, signs every call and answer this node sends, and
	// every call and answer it receives must carry a valid one: a call
	// without is answered refused and not served (logged), an answer
	// without is ErrNoProof. Nil signs and checks nothing (a bus without
	// credentials, where whoever reaches the subjects is a node).
	Proof *NodeProof
	// Logger receives the calls that could not be answered; default none.
	Logger zerolog.Logger
}

// Call is one call a node asks another to run on a client's behalf: a
// method of the hub's gRPC service, the client's identity as the asking
// node authenticated it, and the request message's bytes.
//
// A node believes the identity a call carries once the call proves it
// comes from a node (CallsConfig.Proof); without a proof configured,
// whoever may publish on the cluster's subjects may act as any agent.
type Call struct {
	Method      string // the full gRPC method, "/hubd.v1.Hub/Send"
	Agent       string
	Operator    bool
	Traceparent string // the caller's W3C trace context, if any
	Tracestate  string
	Body        []byte // the request, protobuf-encoded
	From        string // the asking node, for logs
}

// Answer is what a call returned: a reply message, or a failure.
type Answer struct {
	Body   []byte // the reply (protobuf), or the google.rpc.Status when Failed
	Failed bool
	// Served are the partitions the answering node served throughout
	// the call (for a listing: whose sessions it covers), ascending.
	Served []int
}

// Calls carries calls between the nodes of a cluster on NATS core
// request/reply: Call sends one to a node and waits for its answer;
// ServeCalls answers those sent to this node. A call or answer larger
// than the server's max_payload travels in parts, reassembled in order
// (NATS keeps one publisher's order).
type Calls struct {
	cfg     CallsConfig
	sub     *nats.Subscription
	part    int                // bytes of data per message
	inbox   string             // this node's answers arrive on <inbox>.<call token>
	answers *nats.Subscription // of <inbox>.*

	wmu     sync.Mutex
	waiting map[string]chan *nats.Msg // the calls this node waits on, by token

	pending map[string]*assembly // by reply subject; the subscription's goroutine only
	swept   time.Time

	mu      sync.Mutex
	closed  bool
	serving sync.WaitGroup
}

// assembly is a call arriving in parts.
type assembly struct {
	hdr   nats.Header
	parts [][]byte
	n     int
	size  int
	at    time.Time
}

// ServeCalls subscribes to this node's subject and serves the calls sent
// there until Close.
func ServeCalls(cfg CallsConfig) (*Calls, error) {
	if cfg.Conn == nil || cfg.Serve == nil || !nodeIDRE.MatchString(cfg.NodeID) {
		return nil, fmt.Errorf("%w: Conn, Serve and a valid NodeID are required", ErrCallConfig)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultCallPrefix
	}
	c := &Calls{cfg: cfg, pending: map[string]*assembly{}, swept: time.Now(), inbox: nats.NewInbox(),
		waiting: map[string]chan *nats.Msg{}}
	c.part = partBytes(cfg.Conn)
	// One subscription for every answer (a subscription per call costs a
	// round of the connection's lock and the server's interest each time).
	answers, err := cfg.Conn.Subscribe(c.inbox+".*", c.answer)
	if err != nil {
		return nil, fmt.Errorf("cluster: calls: %w", err)
	}
	sub, err := cfg.Conn.Subscribe(c.subject(cfg.NodeID), c.receive)
	if err != nil {
		answers.Unsubscribe()
		return nil, fmt.Errorf("cluster: serving calls: %w", err)
	}
	// Calls may be many and large (forwarded sends): no limit but memory.
	for _, s := range []*nats.Subscription{sub, answers} {
		if err := s.SetPendingLimits(-1, -1); err != nil {
			sub.Unsubscribe()
			answers.Unsubscribe()
			return nil, fmt.Errorf("cluster: serving calls: %w", err)
		}
	}
	c.sub, c.answers = sub, answers
	// The subscription is known to the server before peers may call.
	if err := cfg.Conn.FlushTimeout(5 * time.Second); err != nil {
		cfg.Logger.Warn().Err(err).Msg("cluster: calls subscription not flushed")
	}
	return c, nil
}

// partBytes is how much data one message carries: the server's
// max_payload less room for the headers.
func partBytes(nc *nats.Conn) int {
	mp := int(nc.MaxPayload())
	if mp <= 0 {
		mp = 1 << 20
	}
	return max(mp-8<<10, 4<<10)
}

func (c *Calls) subject(node string) string { return c.cfg.Prefix + "." + node }

// Close stops serving calls and waits for those running.
func (c *Calls) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	c.answers.Unsubscribe()
	if err := c.sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		c.cfg.Logger.Debug().Err(err).Msg("cluster: calls unsubscribe")
	} else if err == nil {
		// Once the server knows, a peer's call gets "no responders" at
		// once instead of waiting out its deadline.
		c.cfg.Conn.FlushTimeout(time.Second)
	}
	c.serving.Wait()
}

// Call sends call to node and returns its answer. ctx bounds it (without
// a deadline, DefaultCallTimeout does); the node gives the call the same
// time. It returns ErrUnreachable when no node listens on the subject,
// and ctx's error when no answer came in time (the call may have run).
func (c *Calls) Call(ctx context.Context, node string, call Call) (Answer, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCallTimeout)
		defer cancel()
	}
	deadline, _ := ctx.Deadline()
	token := nuid.Next()
	ch := make(chan *nats.Msg, maxCallBytes/c.part+2)
	c.wmu.Lock()
	c.waiting[token] = ch
	c.wmu.Unlock()
	defer func() {
		c.wmu.Lock()
		delete(c.waiting, token)
		c.wmu.Unlock()
	}()
	first := nats.Header{}
	first.Set(hdrMethod, call.Method)
	first.Set(hdrAgent, call.Agent)
	if call.Operator {
		first.Set(hdrOperator, "1")
	}
	first.Set(hdrTimeout, strconv.FormatInt(max(time.Until(deadline).Milliseconds(), 1), 10))
	first.Set(hdrFrom, c.cfg.NodeID)
	if call.Traceparent != "" {
		first.Set(hdrTrace, call.Traceparent)
		if call.Tracestate != "" {
			first.Set(hdrState, call.Tracestate)
		}
	}
	reply := c.inbox + "." + token
	c.cfg.Proof.sign(c.subject(node), reply, first, call.Body)
	if err := c.publish(c.subject(node), reply, first, call.Body); err != nil {
		return Answer{}, fmt.Errorf("cluster: calling node %s: %w", node, err)
	}
	var (
		hdr   nats.Header
		parts [][]byte
		n     = -1
		size  int
	)
	for {
		var m *nats.Msg
		select {
		case m = <-ch:
		case <-ctx.Done():
			return Answer{}, fmt.Errorf("cluster: node %s did not answer %s in time: %w", node, call.Method, ctx.Err())
		}
		if len(m.Data) == 0 && m.Header.Get(hdrStatus) == "503" {
			return Answer{}, fmt.Errorf("node %s: %w", node, ErrUnreachable)
		}
		i, of, ok := parsePart(m.Header.Get(hdrPart))
		if !ok || i != len(parts) || (n >= 0 && of != n) {
			return Answer{}, fmt.Errorf("node %s's answer: %w", node, errBadFrame)
		}
		if i == 0 {
			hdr, n = m.Header, of
		}
		if size += len(m.Data); size > maxCallBytes {
			return Answer{}, fmt.Errorf("node %s's answer is over %d bytes: %w", node, maxCallBytes, errBadFrame)
		}
		parts = append(parts, m.Data)
		if len(parts) == n {
			break
		}
	}
	a := Answer{Body: join(parts), Failed: hdr.Get(hdrFailed) == "1"}
	if err := c.cfg.Proof.check(reply, "", hdr, a.Body); err != nil {
		return Answer{}, fmt.Errorf("node %s's answer to %s: %w", node, call.Method, err)
	}
	if why := hdr.Get(hdrRefused); why != "" {
		return Answer{}, fmt.Errorf("node %s refused %s: %s: %w", node, call.Method, why, ErrNoProof)
	}
	if s := hdr.Get(hdrServed); s != "" {
		for _, f := range strings.Split(s, ",") {
			k, err := strconv.Atoi(f)
			if err != nil {
				return Answer{}, fmt.Errorf("node %s's served partitions %q: %w", node, s, errBadFrame)
			}
			a.Served = append(a.Served, k)
		}
	}
	return a, nil
}

// publish sends body to subj in parts, the first with hdr.
func (c *Calls) publish(subj, reply string, hdr nats.Header, body []byte) error {
	n := max(1, (len(body)+c.part-1)/c.part)
	for i := range n {
		h := nats.Header{}
		if i == 0 {
			h = hdr
		}
		h.Set(hdrPart, strconv.Itoa(i)+"/"+strconv.Itoa(n))
		lo, hi := i*c.part, min((i+1)*c.part, len(body))
		m := &nats.Msg{Subject: subj, Reply: reply, Header: h, Data: body[lo:hi]}
		if err := c.cfg.Conn.PublishMsg(m); err != nil {
			return err
		}
	}
	return nil
}

// parsePart parses "i/n".
func parsePart(s string) (i, n int, ok bool) {
	a, b, found := strings.Cut(s, "/")
	if !found {
		return 0, 0, false
	}
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n || n > maxCallBytes/(4<<10)+1 {
		return 0, 0, false
	}
	return i, n, true
}

func join(parts [][]byte) []byte {
	if len(parts) == 1 {
		return parts[0]
	}
	return slices.Concat(parts...)
}

// answer hands a message of an answer to the call waiting for it (the
// answers' subscription's handler).
func (c *Calls) answer(m *nats.Msg) {
	token := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	c.wmu.Lock()
	ch := c.waiting[token]
	c.wmu.Unlock()
	if ch == nil {
		return // the call gave up
	}
	select {
	case ch <- m:
	default: // more parts than an answer has: the call fails on its deadline
	}
}

// receive is the subscription's handler (one at a time): it reassembles a
// call and starts serving it.
func (c *Calls) receive(m *nats.Msg) {
	now := time.Now()
	if now.Sub(c.swept) > 10*time.Second {
		for k, a := range c.pending { //hubd:orderless dropping stale assemblies
			if now.Sub(a.at) > time.Minute {
				delete(c.pending, k)
			}
		}
		c.swept = now
	}
	if !strings.HasPrefix(m.Reply, nats.InboxPrefix) {
		// No answer but to an inbox: a node's answer on a subject the
		// caller chose (a partition's, the JetStream API's) would be a
		// write with the node's rights.
		return
	}
	i, n, ok := parsePart(m.Header.Get(hdrPart))
	if !ok {
		c.cfg.Logger.Warn().Str("part", m.Header.Get(hdrPart)).Msg("cluster: a call with no valid part header; dropped")
		return
	}
	a := c.pending[m.Reply]
	if a == nil {
		if i != 0 {
			return // the rest of a call already dropped
		}
		a = &assembly{hdr: m.Header, n: n, at: now}
	}
	if i != len(a.parts) || n != a.n || a.size+len(m.Data) > maxCallBytes {
		delete(c.pending, m.Reply)
		c.cfg.Logger.Warn().Str("from", a.hdr.Get(hdrFrom)).Msg("cluster: a call's parts arrived out of order or too large; dropped")
		return
	}
	a.parts, a.size = append(a.parts, m.Data), a.size+len(m.Data)
	if len(a.parts) < n {
		c.pending[m.Reply] = a
		return
	}
	delete(c.pending, m.Reply)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.serving.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.serving.Done()
		body := join(a.parts)
		if err := c.cfg.Proof.check(m.Subject, m.Reply, a.hdr, body); err != nil {
			c.refuse(m.Reply, a.hdr, err)
			return
		}
		c.serve(m.Reply, a.hdr, body)
	}()
}

// refuse answers a call that does not prove it comes from a node, without
// running it.
func (c *Calls) refuse(reply string, hdr nats.Header, why error) {
	c.cfg.Logger.Warn().Err(why).Str("method", hdr.Get(hdrMethod)).Str("from", hdr.Get(hdrFrom)).
		Str("agent", hdr.Get(hdrAgent)).Bool("operator", hdr.Get(hdrOperator) == "1").
		Msg("cluster: a call not proven to come from a node; refused")
	h := nats.Header{}
	h.Set(hdrRefused, why.Error())
	c.cfg.Proof.sign(reply, "", h, nil)
	if err := c.publish(reply, "", h, nil); err != nil {
		c.cfg.Logger.Debug().Err(err).Msg("cluster: a refusal not sent")
	}
}

// serve runs one call and publishes its answer.
func (c *Calls) serve(reply string, hdr nats.Header, body []byte) {
	timeout := DefaultCallTimeout
	if ms, err := strconv.ParseInt(hdr.Get(hdrTimeout), 10, 64); err == nil && ms > 0 {
		timeout = min(time.Duration(ms)*time.Millisecond, maxCallTimeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	call := Call{Method: hdr.Get(hdrMethod), Agent: hdr.Get(hdrAgent), Operator: hdr.Get(hdrOperator) == "1",
		Traceparent: hdr.Get(hdrTrace), Tracestate: hdr.Get(hdrState), Body: body, From: hdr.Get(hdrFrom)}
	a := c.cfg.Serve(ctx, call)
	h := nats.Header{}
	if a.Failed {
		h.Set(hdrFailed, "1")
	}
	if len(a.Served) > 0 {
		s := make([]string, len(a.Served))
		for i, k := range a.Served {
			s[i] = strconv.Itoa(k)
		}
		h.Set(hdrServed, strings.Join(s, ","))
	}
	c.cfg.Proof.sign(reply, "", h, a.Body)
	if err := c.publish(reply, "", h, a.Body); err != nil {
		c.cfg.Logger.Warn().Err(err).Str("method", call.Method).Str("from", call.From).Msg("cluster: a call's answer not sent")
	}
}
