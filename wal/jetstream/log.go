package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// Stream metadata keys Open writes and checks.
const (
	metaPartitions = "hubd.partitions"
	metaPartition  = "hubd.partition"
	metaFormat     = "hubd.format"
	formatVersion  = "1"
)

// setupAttempt bounds one attempt of a setup request: a cluster without a
// meta leader does not answer, so one long wait would waste its deadline.
const setupAttempt = 2 * time.Second

// Log is an append-only log of opaque records per session on JetStream
// partition streams. See the package doc for what it promises.
type Log struct {
	opts    Options
	y       layout
	nc      *nats.Conn
	js      jetstream.JetStream
	streams []jetstream.Stream
	owned   []atomic.Bool
	tenure  []atomic.Uint64 // per partition: bumped by every Disown
	sending []sync.RWMutex  // per partition: read-held by each append from its ownership check on (Settle)
	batches []chan struct{} // per partition: this log's atomic batches being published
	cache   sessions
	logger  zerolog.Logger
	hooks   testHooks

	mu     sync.Mutex
	closed bool
	ops    sync.WaitGroup
}

// testHooks let tests make the network misbehave.
type testHooks struct {
	// lostAck, if set, is asked after every acknowledgement whether to
	// drop it and fail the attempt with the error returned instead.
	lostAck func(attempt int) error
	// unsent, if set, is asked before every attempt whether to fail it
	// unsent (a stream with no leader drops it) with the error returned.
	unsent func(attempt int) error
}

// Open binds the partition streams, creating those that do not exist and
// updating those whose settings differ (replicas, limits), and fails with
// ErrConfig for a stream made for another partition count. Requests are
// retried in short attempts until Options.SetupTimeout or ctx ends, so
// Open may be called as soon as the servers accept connections.
func Open(ctx context.Context, opts Options) (*Log, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	js, err := jetstream.New(o.Conn)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	l := &Log{
		opts:    o,
		y:       layout{streamPrefix: o.StreamPrefix, subjectPrefix: o.SubjectPrefix, partitions: o.Partitions},
		nc:      o.Conn,
		js:      js,
		streams: make([]jetstream.Stream, o.Partitions),
		owned:   make([]atomic.Bool, o.Partitions),
		tenure:  make([]atomic.Uint64, o.Partitions),
		sending: make([]sync.RWMutex, o.Partitions),
		batches: make([]chan struct{}, o.Partitions),
		logger:  o.Logger,
	}
	for k := range l.batches {
		l.batches[k] = make(chan struct{}, o.MaxBatchesInFlight)
	}
	l.cache.init()
	ctx, cancel := context.WithTimeout(ctx, o.SetupTimeout)
	defer cancel()
	if err := l.setup(ctx); err != nil {
		return nil, err
	}
	if o.OwnAll {
		for k := range l.owned {
			l.owned[k].Store(true)
		}
	}
	return l, nil
}

// setup binds every partition stream, four at a time.
func (l *Log) setup(ctx context.Context) error {
	errs := make([]error, l.opts.Partitions)
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for k := range l.opts.Partitions {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			l.streams[k], errs[k] = l.bindStream(ctx, k)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// streamConfig is partition k's stream as this log wants it.
func (l *Log) streamConfig(k int) jetstream.StreamConfig {
	o := l.opts
	return jetstream.StreamConfig{
		Name:               l.y.stream(k),
		Description:        "hubd session log, partition " + strconv.Itoa(k),
		Subjects:           []string{l.y.streamSubjects(k)},
		Retention:          jetstream.LimitsPolicy,
		MaxConsumers:       -1,
		MaxMsgs:            -1,
		MaxBytes:           -1,
		MaxMsgsPerSubject:  -1,
		MaxAge:             0,
		MaxMsgSize:         int32(o.MaxMsgSize),
		Storage:            jetstream.FileStorage,
		Replicas:           o.Replicas,
		Duplicates:         o.Duplicates,
		DenyDelete:         false,
		DenyPurge:          false,
		AllowAtomicPublish: true,
		Metadata: map[string]string{
			metaPartitions: strconv.Itoa(o.Partitions),
			metaPartition:  strconv.Itoa(k),
			metaFormat:     formatVersion,
		},
	}
}

// bindStream creates or updates partition k's stream, retrying.
func (l *Log) bindStream(ctx context.Context, k int) (jetstream.Stream, error) {
	want := l.streamConfig(k)
	var last error
	for {
		s, err := l.tryBind(ctx, want)
		if err == nil || errors.Is(err, ErrConfig) {
			return s, err
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("jetstream: stream %s: %w (last error: %v)", want.Name, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (l *Log) tryBind(ctx context.Context, want jetstream.StreamConfig) (jetstream.Stream, error) {
	actx, cancel := context.WithTimeout(ctx, setupAttempt)
	defer cancel()
	s, err := l.js.Stream(actx, want.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return l.js.CreateStream(actx, want)
	case err != nil:
		return nil, err
	}
	have := s.CachedInfo().Config
	if err := compatible(have, want); err != nil {
		return nil, err
	}
	if have.DenyPurge || have.DenyDelete {
		// Created before sessions were deleted: JetStream never lifts
		// these, and Delete refuses the partition's sessions (ErrDenied).
		want.DenyPurge, want.DenyDelete = have.DenyPurge, have.DenyDelete
		l.logger.Warn().Str("stream", want.Name).
			Msg("jetstream: the partition stream denies purges and deletes: its sessions are never purged nor erased")
	}
	if !sameSettings(have, want) {
		l.logger.Warn().Str("stream", want.Name).Msg("jetstream: updating the partition stream's settings")
		return l.js.UpdateStream(actx, want)
	}
	return s, nil
}

// compatible reports ErrConfig for an existing stream made for another
// layout.
func compatible(have, want jetstream.StreamConfig) error {
	for _, key := range []string{metaPartitions, metaPartition, metaFormat} {
		if have.Metadata[key] != want.Metadata[key] {
			return fmt.Errorf("%w: stream %s has %s=%q, this log wants %q", ErrConfig, want.Name, key, have.Metadata[key], want.Metadata[key])
		}
	}
	if len(have.Subjects) != 1 || have.Subjects[0] != want.Subjects[0] {
		return fmt.Errorf("%w: stream %s has subjects %v, this log wants %v", ErrConfig, want.Name, have.Subjects, want.Subjects)
	}
	if have.Storage != jetstream.FileStorage || have.Retention != jetstream.LimitsPolicy {
		return fmt.Errorf("%w: stream %s is not a file stream with limits retention", ErrConfig, want.Name)
	}
	return nil
}

// sameSettings reports whether the settings Open may update match.
func sameSettings(have, want jetstream.StreamConfig) bool {
	return have.Replicas == want.Replicas && have.MaxMsgSize == want.MaxMsgSize && have.Duplicates == want.Duplicates &&
		have.AllowAtomicPublish && have.MaxAge == 0 &&
		have.MaxMsgs == -1 && have.MaxBytes == -1 && have.MaxMsgsPerSubject == -1
}

// Partitions returns P.
func (l *Log) Partitions() int { return l.opts.Partitions }

// Stream returns the name of partition k's stream.
func (l *Log) Stream(k int) string { return l.y.stream(k) }

// PartitionOf returns the partition of a tree given its root session.
func (l *Log) PartitionOf(root [16]byte) int { return Partition(root, l.opts.Partitions) }

// Locate returns the partition of a session from any node: from what the
// log has seen, or else by looking for its metadata in every partition (P
// requests), then for its tombstone (a deleted session's partition: P
// more). found is false for a session that does not exist. Routing a
// call for a session this node does not own starts here.
func (l *Log) Locate(ctx context.Context, session [16]byte) (partition int, found bool, err error) {
	if err := l.enter(); err != nil {
		return 0, false, err
	}
	defer l.exit()
	e, found, err := l.locate(ctx, session)
	if err != nil || !found {
		return 0, false, err
	}
	return e.part, true, nil
}

// MaxRecordBytes is the largest record or metadata Append accepts: the
// streams' MaxMsgSize less the room for headers and the frame. The hub's
// MaxEnvelopeBytes must not exceed it.
func (l *Log) MaxRecordBytes() int { return l.opts.maxRecordBytes() }

// Own makes partition k writable by this log: the caller holds its lease.
// It may hydrate the partition (Hydrate) before or after.
func (l *Log) Own(k int) { l.owned[k].Store(true) }

// Disown stops every later Append to partition k (ErrNotOwner) and forgets
// what the log knew of its sessions' tails. An append already publishing
// sends no further attempt, even once k is owned again (and so loaded
// again): it ends with what the stream holds of its earlier ones (landed,
// or ErrNotOwner when none has). A retry sent after the partition's new
// owner has read a session would land behind that owner's back: the
// fence refuses a write only once another was appended after its
// expected tail, not after a read.
func (l *Log) Disown(k int) {
	l.owned[k].Store(false)
	l.tenure[k].Add(1)
	l.cache.drop(k)
}

// Settle waits until no append to partition k is in progress: call it
// after Disown, before handing k's lease to another node, so that no
// attempt sent under this node's ownership lands after the new owner's
// read. Appends in progress send nothing more once k is disowned and
// settle within Options.AppendTimeout; later ones wait for Settle, then
// fail with ErrNotOwner.
func (l *Log) Settle(k int) {
	l.sending[k].Lock()
	//lint:ignore SA2001 the lock is taken only to wait for the appends holding it
	l.sending[k].Unlock()
}

// Owns reports whether partition k is writable by this log.
func (l *Log) Owns(k int) bool { return l.owned[k].Load() }

// ownedSince reports whether partition k has been owned throughout since
// tenure t (its tenure when an append took its sessions): neither
// disowned since nor disowned and owned again (a partition lost and
// taken back is loaded again, and an older append must not land behind
// that load either).
func (l *Log) ownedSince(k int, t uint64) bool {
	return l.owned[k].Load() && l.tenure[k].Load() == t
}

// Close stops accepting calls (ErrClosed) and waits for those in progress
// (a read's callback must not call it). It does not close the connection.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	l.mu.Unlock()
	l.ops.Wait()
	return nil
}

// enter registers a call in progress unless the log is closed.
func (l *Log) enter() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.ops.Add(1)
	return nil
}

func (l *Log) exit() { l.ops.Done() }

// locate finds the partition of a session the log has not seen: its
// metadata subject in each partition (P requests, eight at a time). found
// is false for a session with no metadata anywhere.
func (l *Log) locate(ctx context.Context, id [16]byte) (*entry, bool, error) {
	if e := l.cache.get(id); e != nil {
		return e, true, nil
	}
	k, _, found, err := l.lastInAny(ctx, kindMeta, id)
	if err != nil || found {
		if err != nil {
			return nil, false, fmt.Errorf("jetstream: locating session %s: %w", formatUUID(id), err)
		}
		return l.cache.place(id, k), true, nil
	}
	if k, _, gone, err := l.lastInAny(ctx, kindGone, id); err != nil || gone {
		if err != nil {
			return nil, false, fmt.Errorf("jetstream: locating session %s: %w", formatUUID(id), err)
		}
		return &entry{part: k, lock: make(chan struct{}, 1)}, true, nil // deleted: its tombstone's partition, not cached
	}
	return nil, false, nil
}

// lastInAny looks in every partition (8 requests at a time) for the last
// message of kind of session id: the partition and the message, found
// false when no partition has one.
func (l *Log) lastInAny(ctx context.Context, kind byte, id [16]byte) (int, *jetstream.RawStreamMsg, bool, error) {
	var (
		mu    sync.Mutex
		where = -1
		msg   *jetstream.RawStreamMsg
		errs  []error
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 8)
	)
	for k := range l.opts.Partitions {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			m, ok, err := l.lastFor(ctx, k, l.y.subject(k, kind, id))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, err)
			case ok:
				where, msg = k, m
			}
		}()
	}
	wg.Wait()
	if where >= 0 {
		return where, msg, true, nil
	}
	if len(errs) > 0 {
		return 0, nil, false, errors.Join(errs...)
	}
	return 0, nil, false, nil
}

// lastFor returns the last message on subj in partition k, ok false if
// there is none.
func (l *Log) lastFor(ctx context.Context, k int, subj string) (*jetstream.RawStreamMsg, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, l.opts.RequestTimeout)
	defer cancel()
	m, err := l.streams[k].GetLastMsgForSubject(ctx, subj)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return nil, false, nil
	case errors.Is(err, context.DeadlineExceeded):
		return nil, false, fmt.Errorf("%w: last message of %s: %v", ErrUnavailable, subj, err)
	case err != nil:
		return nil, false, fmt.Errorf("jetstream: last message of %s: %w", subj, err)
	}
	return m, true, nil
}

// fetchTail reads a session's last record from its stream.
func (l *Log) fetchTail(ctx context.Context, k int, id [16]byte) (pos, error) {
	m, ok, err := l.lastFor(ctx, k, l.y.subject(k, kindRecord, id))
	if err != nil || !ok {
		return pos{}, err
	}
	st, err := l.y.decode(k, m.Subject, m.Header.Get(hdrMsgID), m.Data, m.Sequence)
	if err != nil {
		return pos{}, err
	}
	return pos{st.seq, st.sseq}, nil
}
