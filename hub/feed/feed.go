package feed

import (
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
	Logger  zerolog.Logger // default: zerolog.Nop()
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

// Tail implements hub.Consumer: a session's view cache.
func (f *Feed) Tail(meta *hubpb.SessionMeta) hub.Tail { return newViewCache(session.Names(meta)) }

// Moved implements hub.Consumer: it ends, with why, the subscriptions of
// agents and the watches of the sessions gone and of their trees.
func (f *Feed) Moved(agents []string, gone []*hub.Session, why error) {
	f.mu.Lock()
	var ended []*Subscription
	for _, a := range agents {
		ended = append(ended, f.subs[a]...)
		delete(f.subs, a)
	}
	for _, s := range gone {
		ended = append(ended, f.watches[s.ID()]...)
		delete(f.watches, s.ID())
		ended = append(ended, f.trees[s.Root()]...)
		delete(f.trees, s.Root())
	}
	f.mu.Unlock()
	for _, sub := range ended {
		sub.fail(why)
	}
}

// Closed implements hub.Consumer: every subscription and watch ends with
// hub.ErrClosed, and none is taken any more.
func (f *Feed) Closed() {
	f.mu.Lock()
	f.closed = true
	var ended []*Subscription
	for _, list := range f.subs { //hubd:orderless each ends alike
		ended = append(ended, list...)
	}
	for _, list := range f.watches { //hubd:orderless each ends alike
		ended = append(ended, list...)
	}
	for _, list := range f.trees { //hubd:orderless each ends alike
		ended = append(ended, list...)
	}
	f.subs, f.watches, f.trees = map[string][]*Subscription{}, map[session.ID][]*Subscription{}, map[session.ID][]*Subscription{}
	f.mu.Unlock()
	for _, sub := range ended {
		sub.fail(hub.ErrClosed)
	}
}

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
