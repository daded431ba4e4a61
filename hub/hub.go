package hub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Hub serves sessions: the write side of hubd. Create it with New; it is
// safe for concurrent use. Its fields are few on purpose, each a room of
// its own with its own lock (see doc.go):
type Hub struct {
	cfg      Config    // with its defaults; Log, Clock and Logger are the hub's
	reg      registry  // the sessions by id, agent and key; the quarantined; the ended cache (registry.go)
	ids      idSource  // new ids above every id held, for the live snapshot (ids.go)
	interned interner  // knob values shared between sessions (intern.go)
	sched    scheduler // every session's next deadline, one clock timer (scheduler.go)
	feed     Consumer  // reads what the hub publishes: its feed (Config.Feed), or none (publish.go)
	gate     gate      // calls in flight and Close (below)
	spans    tracing   // the send path's spans (trace.go)
	retain   retainer  // purges, one at a time, and the retention sweep (purge.go, retention.go)
}

// Config configures a hub. The zero value of every optional field means its
// default.
type Config struct {
	Log      Log                // required
	Adapters *adapters.Registry // required: the session types served
	Clock    Clock              // default: the system clock
	NewID    func() uuid.UUID   // default: uuid.NewV7
	Logger   zerolog.Logger     // default: zerolog.Nop()
	Hooks    Hooks
	// Feed, if set, makes the hub's reader as New begins, before the
	// sessions are loaded: the consumer of what the hub publishes (see
	// publish.go), which delivers and reads (package hub/feed's New). It
	// must not call the hub before New returns.
	Feed func(*Hub) Consumer
	// Tracer starts the spans of the send path (see trace.go), children of
	// the caller's span; default: a no-op (nothing recorded; envelopes
	// still carry the caller's traceparent).
	Tracer trace.Tracer

	InviteTimeout    time.Duration // default 5m: how long invitees have to ack
	MaxDepth         int           // default 8: the deepest a child session may be
	MaxEnvelopeBytes int           // default 1 MiB: an envelope's stored size

	// Limits on fan-out: past one, an open or a delegation is refused with
	// LIMIT_REACHED (a *LimitError naming it) and nothing is written.
	// Zero means the default, a negative value no limit.
	//
	// MaxOpenPerAgent bounds the sessions pending or open that one agent
	// created (children it delegated included); default
	// DefaultMaxOpenPerAgent.
	MaxOpenPerAgent int
	// MaxTreeSessions bounds the sessions pending or open in one tree (its
	// root and every descendant); default DefaultMaxTreeSessions.
	MaxTreeSessions int
	// MaxChildrenPerTurn bounds the children delegations open in one
	// session on one turn (from the envelope that began the turn on),
	// background ones included; default DefaultMaxChildrenPerTurn.
	MaxChildrenPerTurn int
	// Limits on deltas (Hub.SendDelta): past one, a delta is refused with
	// LIMIT_REACHED naming the flag, and the reply goes on with its final
	// envelope. Zero means the default, a negative value no limit.
	//
	// MaxDeltasPerSecond bounds the deltas one session's writer forwards
	// in a second of the hub's clock; default DefaultMaxDeltasPerSecond.
	MaxDeltasPerSecond int
	// MaxDeltaBytesPerTurn bounds the text of the deltas forwarded on one
	// turn of a session; default DefaultMaxDeltaBytesPerTurn.
	MaxDeltaBytesPerTurn int

	// Limits on what an open (or a delegated child) carries; over one the
	// open is refused with TOO_LARGE (a duration: MALFORMED), the message
	// naming the limit and the value sent. docs/OPERATIONS.md lists them.
	MaxMetaBytes    int           // default 512 KiB: a session's stored metadata, all of it
	MaxLabels       int           // default 64: labels per session
	MaxLabelBytes   int           // default 16 KiB: the labels' keys and values together
	MaxKnobBytes    int           // default 64 KiB: the knobs' JSON (the graph aside)
	MaxGraphBytes   int           // default 256 KiB: the workflow graph's JSON
	MaxParticipants int           // default 256: participants per session
	MaxExpectations int           // default 32: expectations per session
	MinExpectation  time.Duration // default 1s: the least expectation threshold
	MaxTTL          time.Duration // default 10 years (session.MaxDuration, also the most): the longest ttl
	// Partitioned makes a cluster node's hub: New hydrates nothing, and
	// the hub serves only the sessions LoadSessions gives it (see
	// partition.go).
	Partitioned bool
	// Route, if set, is asked about a session the hub does not hold: nil
	// means no node serves it (UNKNOWN_SESSION), else the error to answer
	// (a *NotOwnerError naming the owner).
	Route func(ctx context.Context, id session.ID) error
	// NewRootID, if set, makes the id of a new root session (default
	// NewID): a cluster node picks a UUIDv7 whose tree lands in a
	// partition it serves. key is "" for an open with neither an
	// idempotency key nor a thread key; otherwise it is the same for
	// every open whose keys must be looked up together (see routeKey), and
	// all of them must land in one partition, or the owner of that
	// partition be named in the error (a *NotOwnerError), so that a retry
	// or the next session of a thread is deduplicated or linked wherever
	// it is asked. An error refuses the open.
	NewRootID func(key string) (uuid.UUID, error)
	// RequireConsent honours a creator's auto_accept of another agent only
	// when Consent allows it (otherwise that agent is invited and must
	// acknowledge). Off (the zero value), anyone may auto-add anyone: the
	// development mode's default, so examples stay one command; a hub
	// with tokens or certificates turns it on.
	RequireConsent bool
	Consent        Consent
	// FoldAll makes New fold every session of the log, ended ones too,
	// and write nothing (not even the index of a log written before it):
	// for checks that replay a whole log, such as hubd log verify, on a
	// log opened read-only. The ended sessions still leave memory.
	FoldAll bool
	// Archive, if set, writes each session Purge and the retention sweep
	// purge, durably, before its purge (purge.go); unset, sessions are
	// purged without an archive.
	Archive Archiver
	// Retention, when it keeps anything less than for ever, makes the hub
	// sweep its ended sessions and purge those whose retention passed
	// (retention.go).
	Retention Retention
	// EndedCache bounds the ended sessions kept in memory after a read
	// loaded them from the log (least recently used first out); default
	// 256. Open and pending sessions are always in memory; ended ones
	// only in this cache.
	EndedCache int
}

// Validate reports a missing required field or a negative limit (the
// fan-out limits aside, where negative means none).
func (c *Config) Validate() error {
	var errs []error
	if c.Log == nil {
		errs = append(errs, errors.New("hub: Config.Log is required"))
	}
	if c.Adapters == nil {
		errs = append(errs, errors.New("hub: Config.Adapters is required"))
	}
	if c.InviteTimeout < 0 || c.MaxDepth < 0 || c.MaxEnvelopeBytes < 0 ||
		c.MaxLabels < 0 || c.MaxMetaBytes < 0 || c.MaxLabelBytes < 0 || c.MaxKnobBytes < 0 || c.MaxGraphBytes < 0 || c.MaxParticipants < 0 ||
		c.MaxExpectations < 0 || c.MinExpectation < 0 || c.MaxTTL < 0 || c.EndedCache < 0 {
		errs = append(errs, fmt.Errorf("hub: negative limit in config"))
	}
	if c.MaxTTL > session.MaxDuration {
		errs = append(errs, fmt.Errorf("hub: Config.MaxTTL %v is over the most, %v", c.MaxTTL, session.MaxDuration))
	}
	return errors.Join(errs...)
}

// WithDefaults returns c with the default of every zero optional field
// filled in: the limits the hub applies.
func (c Config) WithDefaults() Config { return c.withDefaults() }

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = systemClock{}
	}
	if c.Tracer == nil {
		c.Tracer = noop.NewTracerProvider().Tracer("")
	}
	if c.NewID == nil {
		c.NewID = func() uuid.UUID { return uuid.Must(uuid.NewV7()) }
	}
	if c.InviteTimeout == 0 {
		c.InviteTimeout = 5 * time.Minute
	}
	if c.MaxDepth == 0 {
		c.MaxDepth = 8
	}
	if c.MaxEnvelopeBytes == 0 {
		c.MaxEnvelopeBytes = 1 << 20
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxMetaBytes, DefaultMaxMetaBytes)
	def(&c.MaxOpenPerAgent, DefaultMaxOpenPerAgent)
	def(&c.MaxTreeSessions, DefaultMaxTreeSessions)
	def(&c.MaxChildrenPerTurn, DefaultMaxChildrenPerTurn)
	def(&c.MaxDeltasPerSecond, DefaultMaxDeltasPerSecond)
	def(&c.MaxDeltaBytesPerTurn, DefaultMaxDeltaBytesPerTurn)
	def(&c.MaxLabels, DefaultMaxLabels)
	def(&c.MaxLabelBytes, DefaultMaxLabelBytes)
	def(&c.MaxKnobBytes, DefaultMaxKnobBytes)
	def(&c.MaxGraphBytes, DefaultMaxGraphBytes)
	def(&c.MaxParticipants, DefaultMaxParticipants)
	def(&c.MaxExpectations, DefaultMaxExpectations)
	if c.MinExpectation == 0 {
		c.MinExpectation = DefaultMinExpectation
	}
	if c.MaxTTL == 0 {
		c.MaxTTL = DefaultMaxTTL
	}
	if c.EndedCache == 0 {
		c.EndedCache = 256
	}
	return c
}

// Defaults of the limits on what an open may carry (see Config; each is
// documented in docs/OPERATIONS.md).
const (
	DefaultMaxMetaBytes    = 512 << 10
	DefaultMaxLabels       = 64
	DefaultMaxLabelBytes   = 16 << 10
	DefaultMaxKnobBytes    = 64 << 10
	DefaultMaxGraphBytes   = 256 << 10
	DefaultMaxParticipants = 256
	DefaultMaxExpectations = 32
	DefaultMinExpectation  = session.MinThreshold
	DefaultMaxTTL          = session.MaxDuration
)

// Defaults of the fan-out limits (see Config; docs/OPERATIONS.md says why
// each).
const (
	DefaultMaxOpenPerAgent    = 10_000
	DefaultMaxTreeSessions    = 1_000
	DefaultMaxChildrenPerTurn = 256
)

// Hooks let observers (metrics, tracing, audit logs) attach to the hub
// without the hub importing them. Each is optional; they are called after
// the fact, outside any session's critical path where possible, and must
// not block.
type Hooks struct {
	// Accepted sees every envelope written, follow-ups included, after
	// the commit. It must not change env.
	Accepted func(env *hubpb.Envelope)
	// Rejected sees every refused change: the session, the sender, the
	// event type and why.
	Rejected func(id session.ID, from, eventType string, err error)
	// Opened sees every session created (pending until its invitees ack).
	Opened func(meta *hubpb.SessionMeta)
	// Closed sees every session that ends, with its final state and reason.
	Closed func(id session.ID, state session.State, reason string)
	// TimerFired sees every envelope a timer wrote (violations and ends).
	TimerFired func(id session.ID, env *hubpb.Envelope)
	// SessionFailed sees a session whose log could not be written or read.
	SessionFailed func(id session.ID, err error)
	// Limited sees every refusal at one of the hub's limits, by the
	// limit's name (LimitError.Limit: "max-open-per-agent"). A stream
	// refused or cut off at one of its feed's bounds goes to the feed's
	// Config.Limited (the server sends both to the same metrics).
	Limited func(limit string)
}

// Log is the write-ahead log the hub needs. The badger log of package wal
// implements it through a thin adapter in the binary; tests inject logs that
// fail. Records are opaque to the log; the hub encodes them.
type Log interface {
	// Append writes all writes atomically and returns once they are durable
	// (the commit point). An error means nothing of the call may be trusted
	// to be written.
	Append(ctx context.Context, writes ...LogWrite) error
	// Scan calls fn for one session's records with seq >= from, in order.
	Scan(ctx context.Context, session [16]byte, from uint64, fn func(seq uint64, data []byte) error) error
	// Metas calls fn for every session's metadata.
	Metas(ctx context.Context, fn func(session [16]byte, meta []byte) error) error
	// ScanRange calls fn for every record of the sessions whose ids (raw
	// bytes) lie between first and last included, session by session in
	// that order, seq ascending. Hydrate calls it on several ranges at
	// once.
	ScanRange(ctx context.Context, first, last [16]byte, fn func(session [16]byte, seq uint64, data []byte) error) error
	// Meta returns one session's metadata; nil (and no error) when the
	// log has no such session.
	Meta(ctx context.Context, session [16]byte) ([]byte, error)
	// MetasFrom calls fn for the metadata of every session whose id (raw
	// bytes) is greater than after, in id order, until fn returns an
	// error (returned as is).
	MetasFrom(ctx context.Context, after [16]byte, fn func(session [16]byte, meta []byte) error) error
	// IndexGet returns the value of the hub's index key, and whether it
	// is there. The index is written with the records (LogWrite.Index).
	IndexGet(ctx context.Context, key []byte) ([]byte, bool, error)
	// IndexScan calls fn for every index key with prefix that is greater
	// than after (nil: all), in key order.
	IndexScan(ctx context.Context, prefix, after []byte, fn func(key, value []byte) error) error
	// PutIndex writes index entries outside an append (building the index
	// of a log written before the hub kept one).
	PutIndex(ctx context.Context, entries []IndexEntry) error
}

// BackScanner is a Log that also reads one session's records newest
// first (the badger log does): with it a view reads only the records it
// keeps, and counts the older ones from what the fold kept, rather than
// reading the session from its start.
type BackScanner interface {
	// ScanBack calls fn for one session's records with seq <= to (0: all),
	// newest first, until fn returns an error (returned as is).
	ScanBack(ctx context.Context, session [16]byte, to uint64, fn func(seq uint64, data []byte) error) error
}

// IndexEntry is one key of the hub's index in the log (see index.go).
type IndexEntry struct {
	Key    []byte
	Value  []byte
	Delete bool
}

// LogWrite is one session's part of an append.
type LogWrite struct {
	Session [16]byte
	Meta    []byte // with the session's first record only
	Records []LogRecord
	Index   []IndexEntry // the hub's index entries, written with the records
}

// LogRecord is one encoded envelope.
type LogRecord struct {
	Seq  uint64
	Data []byte
}

func (h *Hub) newID() uuid.UUID {
	if h.ids.v7 {
		return h.ids.next(h.cfg.NewID())
	}
	return h.cfg.NewID()
}

// gate is a hub's life: the calls in flight, and whether Close has
// begun. Every change enters it and leaves it; Close waits for those in
// flight, and no change enters after.
type gate struct {
	mu       sync.RWMutex // enter's read side, close's write side
	closed   atomic.Bool
	inflight sync.WaitGroup
	life     context.Context    // cancelled when Close begins
	end      context.CancelFunc // cancels life
}

// open starts the hub's life.
func (g *gate) open() { g.life, g.end = context.WithCancel(context.Background()) }

// enter registers an in-flight call, or fails once the hub is closing.
// The lock orders every Add before close's Wait (a WaitGroup's Add at
// zero must not race its Wait).
func (g *gate) enter() error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed.Load() {
		return ErrClosed
	}
	g.inflight.Add(1)
	return nil
}

func (g *gate) leave() { g.inflight.Done() }

// close ends the hub's life and waits for the calls in flight; it
// reports false when Close had begun already.
func (g *gate) close() bool {
	g.mu.Lock()
	already := g.closed.Swap(true)
	g.mu.Unlock()
	if already {
		return false
	}
	g.end()
	g.inflight.Wait()
	return true
}
