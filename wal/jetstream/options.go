package jetstream

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// Defaults of Options.
const (
	DefaultPartitions     = 32
	DefaultReplicas       = 3
	DefaultStreamPrefix   = "HUB_P"
	DefaultSubjectPrefix  = "hub"
	DefaultMaxMsgSize     = 1 << 20
	DefaultDuplicates     = 2 * time.Minute
	DefaultAppendTimeout  = 30 * time.Second
	DefaultAttemptTimeout = 2 * time.Second
	DefaultRequestTimeout = 5 * time.Second
	DefaultSetupTimeout   = 30 * time.Second
	// DefaultMaxBatchMessages is nats-server's default limit of messages in
	// one atomic batch (JetStreamLimits.MaxBatchSize).
	DefaultMaxBatchMessages = 1000
	// DefaultMaxBatchBytes bounds the bytes of one Append call.
	DefaultMaxBatchBytes = 8 << 20
	// DefaultMaxBatchesInFlight stays under nats-server's default
	// max_batch_inflight_per_stream of 50.
	DefaultMaxBatchesInFlight = 32

	// MaxPartitions is the largest partition count (stream names and
	// subjects have room for more, but a cluster of thousands of streams
	// is not what this log is for).
	MaxPartitions = 1024
	// headerReserve is what a message's headers may take of MaxMsgSize:
	// Nats-Msg-Id, the expected sequence and the batch headers, with room.
	headerReserve = 512
)

// Options configures Open.
type Options struct {
	// Conn is the NATS connection (required), best with the reconnect
	// buffer disabled (see the package doc). The log does not close it.
	Conn *nats.Conn
	// Partitions is P, the number of partition streams (default 32). It
	// cannot change once streams exist: Open fails with ErrConfig.
	Partitions int
	// Replicas is each stream's replication (default 3; 1 for a single
	// server).
	Replicas int
	// StreamPrefix names the streams: StreamPrefix + two or more digits
	// (default "HUB_P": HUB_P00 … HUB_P31).
	StreamPrefix string
	// SubjectPrefix starts every subject (default "hub":
	// hub.p<k>.s.<session>).
	SubjectPrefix string
	// Root returns the root of a session's tree from its metadata (the
	// hub's root_session_id, the session itself for a root). Sessions are
	// placed in partitions by root, so one tree shares one stream and a
	// write spanning a tree is one atomic batch. Nil: every session is its
	// own root.
	Root func(session [16]byte, meta []byte) ([16]byte, error)
	// OwnAll makes every partition writable from Open, for a single hub
	// over JetStream without leases. Otherwise Append needs Own(k).
	OwnAll bool
	// Holds, if set, reports whether this node's lease on partition k is
	// still valid by its own clock. An append acknowledged when it is not
	// fails with ErrLapsed: a lease lapses before any other node may take
	// the partition and read it, so an append acknowledged while it holds
	// is in every later owner's read.
	Holds func(k int) bool
	// MaxMsgSize is the streams' largest message, headers included
	// (default 1 MiB, at most the server's max_payload). Records and
	// metadata may hold MaxRecordBytes of it.
	MaxMsgSize int
	// Duplicates is the streams' dedupe window for Nats-Msg-Id (default
	// 2m).
	Duplicates time.Duration
	// MaxBatchMessages bounds the messages of one Append (metadata and
	// records; default 1000, the server's MaxBatchSize).
	MaxBatchMessages int
	// MaxBatchBytes bounds the bytes of one Append (default 8 MiB).
	MaxBatchBytes int
	// MaxBatchesInFlight bounds the atomic batches this log publishes to
	// one stream at once (default 32): nats-server refuses more than
	// max_batch_inflight_per_stream (50 by default) open on a stream.
	MaxBatchesInFlight int
	// AppendTimeout bounds an Append once it has started publishing,
	// retries included (default 30s); past it Append returns
	// ErrUnavailable, outcome unknown.
	AppendTimeout time.Duration
	// AttemptTimeout bounds the first publish attempt (default 2s),
	// doubling for each retry up to four times it: a stream without a
	// leader does not answer, and a new leader needs a new request.
	AttemptTimeout time.Duration
	// RequestTimeout bounds one read request, and the wait for the next
	// message of a read (default 5s).
	RequestTimeout time.Duration
	// SetupTimeout bounds Open's creation of the streams (default 30s),
	// retried in attempts of at most 2s: a cluster answers only once it
	// has a meta leader.
	SetupTimeout time.Duration
	// Logger receives retries and failures; default none.
	Logger zerolog.Logger
}

var prefixRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Validate reports a missing or out-of-range option.
func (o Options) Validate() error {
	var errs []error
	bad := func(f string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+f, append([]any{ErrInvalid}, a...)...))
	}
	if o.Conn == nil {
		bad("Options.Conn is required")
	}
	if o.Partitions < 0 || o.Partitions > MaxPartitions {
		bad("Partitions %d out of [1, %d]", o.Partitions, MaxPartitions)
	}
	if o.Replicas < 0 || o.Replicas > 5 {
		bad("Replicas %d out of [1, 5]", o.Replicas)
	}
	if o.StreamPrefix != "" && !prefixRE.MatchString(o.StreamPrefix) {
		bad("StreamPrefix %q: letters, digits, - and _ only", o.StreamPrefix)
	}
	if o.SubjectPrefix != "" && !prefixRE.MatchString(o.SubjectPrefix) {
		bad("SubjectPrefix %q: one token of letters, digits, - and _", o.SubjectPrefix)
	}
	if o.MaxMsgSize < 0 || (o.MaxMsgSize > 0 && o.MaxMsgSize < 4*headerReserve) {
		bad("MaxMsgSize %d too small", o.MaxMsgSize)
	}
	if o.Duplicates < 0 || o.AppendTimeout < 0 || o.AttemptTimeout < 0 || o.RequestTimeout < 0 || o.SetupTimeout < 0 ||
		o.MaxBatchMessages < 0 || o.MaxBatchBytes < 0 || o.MaxBatchesInFlight < 0 {
		bad("negative limit")
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Partitions, DefaultPartitions)
	def(&o.Replicas, DefaultReplicas)
	def(&o.MaxMsgSize, DefaultMaxMsgSize)
	def(&o.MaxBatchMessages, DefaultMaxBatchMessages)
	def(&o.MaxBatchBytes, DefaultMaxBatchBytes)
	def(&o.MaxBatchesInFlight, DefaultMaxBatchesInFlight)
	defD(&o.Duplicates, DefaultDuplicates)
	defD(&o.AppendTimeout, DefaultAppendTimeout)
	defD(&o.AttemptTimeout, DefaultAttemptTimeout)
	defD(&o.RequestTimeout, DefaultRequestTimeout)
	defD(&o.SetupTimeout, DefaultSetupTimeout)
	if o.StreamPrefix == "" {
		o.StreamPrefix = DefaultStreamPrefix
	}
	if o.SubjectPrefix == "" {
		o.SubjectPrefix = DefaultSubjectPrefix
	}
	if o.Root == nil {
		o.Root = func(s [16]byte, _ []byte) ([16]byte, error) { return s, nil }
	}
	if mp := o.Conn.MaxPayload(); mp > 0 && int64(o.MaxMsgSize) > mp {
		o.MaxMsgSize = int(mp)
	}
	return o
}

// maxRecordBytes is the largest record or metadata a message may carry.
func (o Options) maxRecordBytes() int { return o.MaxMsgSize - headerReserve - frameHeaderLen }
