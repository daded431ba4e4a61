package load

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
)

// sessRun is one session of a load run.
type sessRun struct {
	id      string
	creator *agent
	corr    correlator
	done    chan struct{} // closed once the session has ended
	once    sync.Once
	onEnd   func()
	pace    *pacer // nil: turns as fast as the hub answers
}

// pacer spaces a session's turns every interval: each turn waits for its
// slot; a turn late for its slot takes the next from now (no burst to
// catch up).
type pacer struct {
	mu       sync.Mutex
	interval time.Duration
	next     time.Time
}

// wait blocks until the next slot, or stop; it reports whether to go on.
func (p *pacer) wait(stop <-chan struct{}) bool {
	if p == nil {
		return true
	}
	p.mu.Lock()
	now := time.Now()
	at := p.next
	if at.Before(now) {
		at = now
	}
	p.next = at.Add(p.interval)
	p.mu.Unlock()
	d := time.Until(at)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
		return false
	}
}

// end marks the session ended (idempotent).
func (s *sessRun) end() {
	s.once.Do(func() {
		close(s.done)
		s.onEnd()
	})
}

// ended reports whether the session has ended.
func (s *sessRun) ended() bool { return closed(s.done) }

// agent is one simulated agent: a Subscribe stream, and a worker per
// session it takes part in.
type agent struct {
	name   string
	index  int
	client *agentsdk.Client
	// calls names the agent for its unary calls (see as), built once; it
	// is cancelled when the run gives up on calls in flight.
	calls   context.Context
	workers map[string]*worker // by session id; fixed before the stream opens
	cursors map[string]uint64  // last seq received per session; the stream's own
	terse   bool               // subscribe terse (--terse)
	// overStream: the agent's sends and deliveries go over its own
	// agent stream (--transport stream), kept in live while it runs.
	overStream bool
	live       atomic.Pointer[agentsdk.AgentStream]
}

// listen keeps the agent's Subscribe stream open until ctx is done,
// reopening it with cursors after a failure, and hands turns to workers.
func (a *agent) listen(ctx context.Context, st *Stats) {
	var b backoff
	for {
		err := a.stream(as(ctx, a.name), st, &b)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, io.EOF) {
			st.reject("stream/EOF")
		} else {
			st.reject("stream/" + reasonOf(err))
		}
		if !b.wait(ctx.Done()) {
			return
		}
	}
}

// stream runs one Subscribe (or AgentStream) stream until it fails.
func (a *agent) stream(ctx context.Context, st *Stats, b *backoff) error {
	if a.overStream {
		return a.connect(ctx, st, b)
	}
	s, err := a.client.Subscribe(ctx, agentsdk.SubscribeOptions{Cursors: a.cursors, Terse: a.terse})
	if err != nil {
		return err
	}
	defer s.Close()
	for {
		d, err := s.Recv()
		if err != nil {
			return err
		}
		a.handle(d, time.Now(), st)
		b.reset()
	}
}

// connect runs one agent stream until it fails: its reader handles the
// deliveries, the workers send over it.
func (a *agent) connect(ctx context.Context, st *Stats, b *backoff) error {
	s, err := a.client.Connect(ctx, agentsdk.ConnectOptions{Subscribe: &agentsdk.SubscribeOptions{Cursors: a.cursors, Terse: a.terse},
		OnDelivery: func(d *hubpb.Delivery) {
			a.handle(d, time.Now(), st)
			b.reset()
		}})
	if err != nil {
		return err
	}
	a.live.Store(s)
	defer func() {
		a.live.CompareAndSwap(s, nil)
		s.Close()
	}()
	select {
	case <-s.Done():
		return s.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sendText sends over the agent's stream when it has one, else
// with its client (a unary call, or the client's own stream).
func (a *agent) sendText(sessionID, text, msgID string) (agentsdk.Ack, error) {
	if s := a.live.Load(); s != nil {
		return s.SendText(a.calls, sessionID, text, agentsdk.WithClientMsgID(msgID))
	}
	return a.client.SendText(a.calls, sessionID, text, agentsdk.WithClientMsgID(msgID))
}

// handle processes one delivery received at now.
func (a *agent) handle(d *hubpb.Delivery, now time.Time, st *Stats) {
	env := d.GetEnvelope()
	sid, seq := env.GetSessionId(), env.GetSeq()
	if seq > a.cursors[sid] {
		a.cursors[sid] = seq
	}
	w := a.workers[sid]
	if w == nil {
		return
	}
	if agentsdk.Ends(env) {
		w.sess.end()
		return
	}
	if !d.GetYourTurn() {
		return
	}
	if env.GetFrom() != "" { // a turn begun by a send, not by the hub
		if start, lat, ok := w.sess.corr.toldAt(seq, now); ok {
			st.ToldAfter(start, lat)
		}
	}
	w.notify(seq)
}

// worker takes one agent's turns in one session.
type worker struct {
	agent *agent
	sess  *sessRun
	turns chan uint64 // the seq that began each turn told; the newest only
	last  uint64      // the highest seq acted on or acknowledged
	n     int         // sends begun
	idPre string      // client_msg_id prefix, unique to the run and agent
	msgID string      // the client_msg_id of the send being taken
	text  string      // the payload
}

// newWorker builds agent a's worker in session s with a payload text.
func newWorker(a *agent, s *sessRun, run, text string) *worker {
	return &worker{agent: a, sess: s, turns: make(chan uint64, 1), idPre: run + "-" + strconv.Itoa(a.index) + "-", text: text}
}

// notify tells the worker a turn began at seq. The stream goroutine is the
// only sender, so replacing a waiting notice cannot block.
func (w *worker) notify(seq uint64) {
	select {
	case w.turns <- seq:
	default:
		select {
		case <-w.turns:
		default:
		}
		w.turns <- seq
	}
}

// run takes turns until stop is closed or the session ends.
func (w *worker) run(stop <-chan struct{}, st *Stats, vl *verifyLog) {
	for {
		select {
		case <-stop:
			return
		case <-w.sess.done:
			return
		case seq := <-w.turns:
			if seq <= w.last {
				continue // told again after a reopened stream
			}
			w.last = seq
			if !w.sess.pace.wait(stop) || closed(stop) || !w.take(stop, st, vl) {
				return
			}
		}
	}
}

// take sends one envelope, retrying it (same client_msg_id) while the hub
// is unavailable. It reports whether to go on taking turns.
func (w *worker) take(stop <-chan struct{}, st *Stats, vl *verifyLog) bool {
	w.n++
	w.msgID = w.idPre + strconv.Itoa(w.n)
	var b backoff
	for {
		start := time.Now()
		ack, err := w.agent.sendText(w.sess.id, w.text, w.msgID)
		if err == nil {
			w.acked(ack.SendResponse, start, time.Now(), st, vl)
			return !ack.GetClosed()
		}
		if w.agent.calls.Err() != nil {
			return false // the run gave up waiting
		}
		st.reject(reasonOf(err))
		switch {
		case sessionGone(err):
			w.sess.end()
			return false
		case !retryable(err):
			return true // the turn is lost; wait to be told again
		case !b.wait(stop):
			return false
		}
	}
}

// sessionGone reports whether a send failed because its session has ended
// (or is unknown to the hub): no later turn can succeed.
func sessionGone(err error) bool {
	return errors.Is(err, agentsdk.ErrSessionClosed) || errors.Is(err, agentsdk.ErrUnknownSession)
}

// acked records an acknowledged send begun at start.
func (w *worker) acked(resp *hubpb.SendResponse, start, done time.Time, st *Stats, vl *verifyLog) {
	seq := resp.GetSeq()
	w.last = max(w.last, seq)
	st.Acked(start, done)
	if lat, ok := w.sess.corr.sent(seq, start); ok {
		st.ToldAfter(start, lat)
	}
	if vl != nil {
		vl.add(ackRecord{session: w.sess.id, seq: seq, msgID: w.msgID})
	}
	if resp.GetClosed() {
		w.sess.end()
	}
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
