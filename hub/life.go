package hub

import (
	"context"
	"time"
)

// New builds a hub and hydrates it: every live (open or pending) session
// in the log is re-folded and its timers re-armed before New returns;
// ended sessions stay in the log until a read loads them (see memory.go).
func New(ctx context.Context, cfg Config) (*Hub, error) {
	return newHub(ctx, cfg, cfg.NewID == nil)
}

// newHub is New; v7IDs says the ids are UUIDv7s made from the wall clock.
func newHub(ctx context.Context, cfg Config, v7IDs bool) (*Hub, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	h := &Hub{cfg: cfg, reg: newRegistry(cfg.EndedCache), ids: idSource{v7: v7IDs}, feed: noConsumer{}, spans: newTracing(cfg.Tracer)}
	if cfg.Feed != nil {
		if c := cfg.Feed(h); c != nil {
			h.feed = c
		}
	}
	h.gate.open()
	h.sched.init(cfg.Clock, h.runTimers)
	if !cfg.Partitioned {
		if err := h.hydrate(ctx); err != nil {
			h.gate.end()
			return nil, err
		}
	}
	if !cfg.FoldAll { // a check of the log: nothing may be written, no timer fires
		h.sched.start()
		h.startSweep()
	}
	return h, nil
}

// Done is closed when Close begins: a stream that holds no subscription
// ends then too.
func (h *Hub) Done() <-chan struct{} { return h.gate.life.Done() }

// Lifetime returns a context cancelled when Close begins, for
// context.AfterFunc: a stream can end with the hub without a goroutine
// waiting on Done.
func (h *Hub) Lifetime() context.Context { return h.gate.life }

// Close stops the hub: new calls fail with ErrClosed, in-flight changes
// finish, timers stop and every subscription ends with ErrClosed. It does
// not close the log; its owner closes it after the hub.
func (h *Hub) Close() error {
	if !h.gate.close() {
		return nil // closed already
	}
	h.sched.stop()
	if stop := h.retain.stop.Load(); stop != nil {
		(*stop)()
	}
	if h.snapshotEligible() {
		// Nothing writes any more: the live set is final.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := h.writeSnapshot(ctx); err != nil {
			h.cfg.Logger.Warn().Err(err).Msg("live snapshot not written: the next start scans the index")
		}
		cancel()
	}
	h.feed.Closed()
	return nil
}
