package feed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Feed delivers a hub's commits to subscribers and answers reads of its
// sessions. Make it with Open (or New, as hub.Config.Feed); it is safe for
// concurrent use.
type Feed struct {
	h   *hub.Hub
	cfg Config

	mu      sync.RWMutex
	subs    map[string][]*Subscription     // agent → its subscriptions
	watches map[session.ID][]*Subscription // session → watches of it alone
	trees   map[session.ID][]*Subscription // root → watches of a session of that tree and its descendants
	streams map[string]int                 // agent → streams it holds (AgentStream, Subscribe, Watch)
	bufs    map[string]*agentBuf           // agent → what its streams hold unread
	closed  bool                           // the hub closed: every subscription has ended

	buffered atomic.Int64 // bytes every stream holds unread (TotalBufferBytes)
	dropped  atomic.Int64 // deltas dropped by subscriptions behind (DeltasDropped)
}

// Subscription is a stream of deliveries for one agent (Subscribe) or one
// session (Watch). Senders append to its bounded queue and never wait; a
// subscriber that falls further behind than the feed's SubscriberBuffer
// or SubscriberBufferBytes, or whose delivery would take its agent's
// streams past AgentBufferBytes or the hub's past TotalBufferBytes, is cut
// off with hub.ErrSlowSubscriber (a *hub.LimitError naming the bound) and
// resumes from its cursors.
type Subscription struct {
	f       *Feed
	agent   string     // the subscribing agent; "" for a watch
	watch   session.ID // the watched session
	root    session.ID // the root of its tree, for a tree watch
	tree    bool       // a watch of the session and its descendants
	verbose bool       // a tree watch sees every envelope of the descendants
	over    bool       // a tree watch handed out its root's end
	viewer  string     // whose audience filters what a watch sees; "" sees all (operators)
	// turnView, when set, is the view each your_turn delivery carries.
	turnView *ViewOptions
	terse    bool        // hand out only what asks the agent to act (SubscribeOptions.Terse)
	deltas   bool        // hand out deltas too (SubscribeOptions.Deltas, WatchOptions.Deltas)
	holder   string      // the agent whose stream this is, counted in Feed.streams
	counted  atomic.Bool // counted in Feed.streams (not riding on a StreamPlace)
	buf      *agentBuf   // the holder's unread bytes, shared by its streams
	attached atomic.Bool // counted in buf.streams
	// cursors are the descendant cursors a tree watch honoured
	// (WatchOptions.Cursors naming a descendant it watches); set by Watch.
	cursors map[string]uint64

	// Owned by the reader (Next).
	spans  []span            // catch-up still to read from the log
	batch  []*hubpb.Delivery // catch-up read, not yet returned
	turns  []*hubpb.Delivery // pending turns to re-tell after catch-up
	turnAt map[string]uint64 // session id → seq of its pending turn's trigger, for catch-up
	sent   map[string]uint64 // highest seq handed out per session id (nil until the first)
	told   map[string]uint64 // highest turn trigger handed out per session id (nil until the first)

	mu     sync.Mutex
	queue  []*hubpb.Delivery
	sizes  []int // the encoded size of each queued delivery's envelope
	queued int   // their sum
	// The deltas among queue and the bytes of their text: they count
	// against bounds of their own (delta.go), not against the logged
	// deliveries'.
	ndeltas, deltaBytes int
	wake                chan struct{}
	err                 error
	// ready, when set (OnReady), is called whenever push or an end wakes
	// the subscription, outside sub.mu.
	ready func()
}

// span is a range of one session's log still to catch up on. It keeps
// the session's id and call, not the session: a subscription that catches
// up on many ended sessions does not hold them in memory.
type span struct {
	id       session.ID
	call     *hubpb.Call
	from, to uint64
}

func spanOf(s *hub.Session, from, to uint64) span {
	return span{id: s.ID(), call: s.Call(), from: from, to: to}
}

func newSubscription(f *Feed, agent string, watch session.ID) *Subscription {
	return &Subscription{f: f, agent: agent, watch: watch, wake: make(chan struct{}, 1)}
}

// agentBuf is what one agent's streams hold unread, in bytes, against
// AgentBufferBytes.
type agentBuf struct {
	bytes   atomic.Int64
	streams int // the streams counting in it; guarded by the feed's mu
}

// ViewOptions choose a view.
type ViewOptions struct {
	Name   string // one of the View* names; "" is ViewDefault
	Window int    // for ViewWindowed; default 10
	// History puts earlier sessions' items first: HistoryThread (the
	// thread's previous sessions) or HistoryDelegate (a child's earlier
	// siblings with the same delegator and delegate); "": none.
	History string

	scan bool // read the log even when the view cache could answer (tests)
}

// Config configures a feed. The zero value of every field means its
// default.
type Config struct {
	SubscriberBuffer int // default 4096: deliveries buffered per subscriber before it is cut off
	// SubscriberBufferBytes bounds the bytes (encoded envelopes) buffered
	// per subscriber before it is cut off too; default
	// DefaultSubscriberBufferBytes.
	SubscriberBufferBytes int
	// AgentBufferBytes bounds the bytes buffered unread over all the
	// streams of one agent (every connection); the delivery that would
	// pass it cuts off the stream it is for. Default
	// DefaultAgentBufferBytes; negative: no bound.
	AgentBufferBytes int
	// TotalBufferBytes bounds the bytes buffered unread over every stream
	// of the hub, as AgentBufferBytes does an agent's. Default
	// DefaultTotalBufferBytes; negative: no bound.
	TotalBufferBytes int
	// MaxStreamsPerAgent bounds the streams one agent holds at once over
	// all its connections: agent streams (TakeStream), subscriptions
	// and watches (LIMIT_REACHED past it); default 256.
	MaxStreamsPerAgent int
	// Limited sees every stream refused or cut off at one of these
	// bounds, by the limit's name (hub.LimitError.Limit:
	// "subscriber-buffer").
	Limited func(limit string)
	// DeltaDropped sees each delta a subscription dropped, being too far
	// behind (deltas are best-effort; envelopes are never dropped).
	DeltaDropped func()
	Logger       zerolog.Logger // default: zerolog.Nop()
}

// Defaults of the bounds on deliveries buffered unread (see Config).
const (
	DefaultSubscriberBuffer      = 4096
	DefaultSubscriberBufferBytes = 4 << 20
	DefaultAgentBufferBytes      = 64 << 20
	DefaultTotalBufferBytes      = 512 << 20
	DefaultMaxStreamsPerAgent    = 256
)

// Validate reports a negative bound where one may not be.
func (c *Config) Validate() error {
	if c.SubscriberBuffer < 0 || c.SubscriberBufferBytes < 0 || c.MaxStreamsPerAgent < 0 {
		return errors.New("feed: negative limit in config")
	}
	return nil
}

// WithDefaults returns c with the default of every zero field filled in:
// the bounds the feed applies.
func (c Config) WithDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.SubscriberBuffer, DefaultSubscriberBuffer)
	def(&c.SubscriberBufferBytes, DefaultSubscriberBufferBytes)
	def(&c.AgentBufferBytes, DefaultAgentBufferBytes)
	def(&c.TotalBufferBytes, DefaultTotalBufferBytes)
	def(&c.MaxStreamsPerAgent, DefaultMaxStreamsPerAgent)
	return c
}

// The caps of one read: a ReadLog answers at most MaxReadItems envelopes
// and, past its first, no more than MaxReadBytes of them (their stored
// size), after reading at most maxReadScan records (those the caller may
// not see count too); it says where the next page begins. A view holds at
// most MaxReadItems items and MaxReadBytes of text: older ones are counted,
// as a window's are.
const (
	MaxReadItems = 1000
	MaxReadBytes = 2 << 20
	maxReadScan  = 16 * MaxReadItems
)

// Open builds a hub (hub.New with hc) and its feed, which reads every
// commit of it from the first.
func Open(ctx context.Context, hc hub.Config, cfg Config) (*hub.Hub, *Feed, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	var f *Feed
	hc.Feed = func(h *hub.Hub) hub.Consumer {
		f = New(h, cfg)
		return f
	}
	h, err := hub.New(ctx, hc)
	if err != nil {
		return nil, nil, err
	}
	return h, f, nil
}

// New makes the feed of hub h: call it from hub.Config.Feed, which hands
// it h as New begins (Open does). It does not call h.
func New(h *hub.Hub, cfg Config) *Feed {
	return &Feed{h: h, cfg: cfg.WithDefaults(),
		subs: map[string][]*Subscription{}, watches: map[session.ID][]*Subscription{}, trees: map[session.ID][]*Subscription{},
		streams: map[string]int{}, bufs: map[string]*agentBuf{}}
}

// Hub returns the hub the feed reads.
func (f *Feed) Hub() *hub.Hub { return f.h }

// add registers a subscription or a watch for deliveries: from now on
// every commit published for it is queued. After Close it refuses with
// hub.ErrClosed.
func (f *Feed) add(sub *Subscription) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || f.h.Lifetime().Err() != nil {
		return hub.ErrClosed
	}
	switch {
	case sub.agent != "":
		f.subs[sub.agent] = append(f.subs[sub.agent], sub)
	case sub.tree:
		f.trees[sub.root] = append(f.trees[sub.root], sub)
	default:
		f.watches[sub.watch] = append(f.watches[sub.watch], sub)
	}
	return nil
}

// remove unregisters a subscription or a watch.
func (f *Feed) remove(sub *Subscription) {
	f.mu.Lock()
	defer f.mu.Unlock()
	drop := func(list []*Subscription) []*Subscription {
		return slices.DeleteFunc(list, func(x *Subscription) bool { return x == sub })
	}
	switch {
	case sub.agent != "":
		if f.subs[sub.agent] = drop(f.subs[sub.agent]); len(f.subs[sub.agent]) == 0 {
			delete(f.subs, sub.agent)
		}
	case sub.tree:
		if f.trees[sub.root] = drop(f.trees[sub.root]); len(f.trees[sub.root]) == 0 {
			delete(f.trees, sub.root)
		}
	default:
		if f.watches[sub.watch] = drop(f.watches[sub.watch]); len(f.watches[sub.watch]) == 0 {
			delete(f.watches, sub.watch)
		}
	}
}

// limitErr returns a refusal at the bound of flag, value v, and tells the
// Limited hook of it.
func (f *Feed) limitErr(flag string, v int, err error, format string, args ...any) *hub.LimitError {
	e := &hub.LimitError{What: fmt.Sprintf(format, args...), Flag: flag, Value: int64(v), Err: err}
	if l := f.cfg.Limited; l != nil {
		l(e.Limit())
	}
	return e
}

// readable returns session id if agent may read it: it takes part in it,
// or is an operator.
func (f *Feed) readable(ctx context.Context, agent string, operator bool, id session.ID) (*hub.Session, error) {
	s, err := f.h.LookupFor(ctx, id, agent, operator)
	if err != nil {
		return nil, err
	}
	if !operator && !session.IsParticipant(s.Meta(), agent) {
		return nil, fmt.Errorf("%q is not a participant of session %v and may not read it: %w", agent, id, hub.ErrPermissionDenied)
	}
	return s, nil
}

// errStop ends a walk or a log scan early.
var errStop = errors.New("stop")

func compareIDs(a, b session.ID) int { return bytes.Compare(a[:], b[:]) }
