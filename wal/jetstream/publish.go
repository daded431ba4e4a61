package jetstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// JetStream error codes the publish path tells apart.
const (
	codeWrongLastSeq      = 10071 // a fence refused: the subject's last is another
	codeWrongLastSeqConst = 10164 // a subject with a message in flight, or fenced twice in a batch
	codeDuplicateInBatch  = 10201 // an atomic batch holds a Nats-Msg-Id already stored
	codeDuplicateInFlight = 10158 // a Nats-Msg-Id being proposed right now
	codeClusterNotAvail   = 10008 // no meta leader yet
	codeClusterNotLeader  = 10009 // the stream lost its leader under the request
	codeBatchIncomplete   = 10176 // the batch's staging was lost (e.g. a new leader)
	codeBatchInflight     = 10210 // too many atomic batches open on the stream
)

// pubAck is JetStream's answer to a publish or a batch commit.
type pubAck struct {
	Error     *jetstream.APIError `json:"error,omitempty"`
	Stream    string              `json:"stream"`
	Seq       uint64              `json:"seq"`
	Duplicate bool                `json:"duplicate,omitempty"`
	Batch     string              `json:"batch,omitempty"`
	Count     uint64              `json:"count,omitempty"`
}

// Answers that need a look at the stream: a duplicate may be this
// append's own earlier attempt, or another writer's message.
var (
	// errDuplicateAck: a single message's Nats-Msg-Id is stored already.
	errDuplicateAck = errors.New("duplicate acknowledgement")
	// errDuplicateBatch: an atomic batch holds a Nats-Msg-Id stored
	// already, and JetStream refused the whole batch.
	errDuplicateBatch = errors.New("atomic batch refused as a duplicate")
)

// publish sends p to partition k's stream, retrying transient failures
// with the same Nats-Msg-Ids until the append's deadline, and returns the
// stream seq of its first message. An ambiguous answer (a duplicate, a
// refused fence after a retry, the deadline) is settled by reading the
// stream (resolve).
func (l *Log) publish(ctx context.Context, k int, p plan) (uint64, error) {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		if !l.ownedSince(k, p.tenure) {
			// Disowned (the lease is lost): the new owner may have read
			// the partition already, and an attempt that lands after
			// that read, onto the tail it expected, is one that owner
			// never learns of. Send nothing more: settle what was sent.
			if attempt == 1 {
				return 0, fmt.Errorf("%w: partition %d (stream %s) was disowned before the append was sent", ErrNotOwner, k, l.y.stream(k))
			}
			return l.resolve(ctx, k, p, fmt.Errorf("%w: partition %d (stream %s) was disowned while the append was retried; not sent again after %d attempts",
				ErrNotOwner, k, l.y.stream(k), attempt-1))
		}
		first, err := l.attempt(ctx, k, p, attempt)
		if f := l.hooks.lostAck; f != nil && err == nil {
			err = f(attempt)
		}
		if err == nil {
			return first, nil
		}
		var api *jetstream.APIError
		switch {
		case errors.Is(err, errDuplicateBatch) && attempt == 1:
			return 0, fmt.Errorf("%w: %s: %v", ErrFenced, l.describe(k, p), err)
		case errors.Is(err, errDuplicateBatch) || errors.Is(err, errDuplicateAck):
			return l.resolve(ctx, k, p, err)
		case errors.As(err, &api) && api.ErrorCode == codeWrongLastSeq && attempt == 1:
			return 0, fmt.Errorf("%w: %s: %v", ErrFenced, l.describe(k, p), api)
		case errors.As(err, &api) && !transientAPI(api):
			if attempt > 1 {
				return l.resolve(ctx, k, p, err)
			}
			return 0, fmt.Errorf("jetstream: %s: %w", l.describe(k, p), err)
		case !errors.As(err, &api) && !transient(err):
			return l.resolve(ctx, k, p, err)
		}
		l.logger.Debug().Err(err).Int("partition", k).Int("attempt", attempt).Msg("jetstream: append retried")
		select {
		case <-ctx.Done():
			return l.resolve(context.WithoutCancel(ctx), k, p, fmt.Errorf("%w after %d attempts: %v", ErrUnavailable, attempt, err))
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// attemptTimeout is the wait for attempt try's answer: AttemptTimeout,
// doubling with each retry up to four times it, so that a lost request
// is sent again soon but a slow server is not flooded with copies.
func (l *Log) attemptTimeout(try int) time.Duration {
	return l.opts.AttemptTimeout << min(try-1, 2)
}

// transient reports a failure a retry may cure: no answer in time, no
// stream leader to answer, a connection reconnecting.
func transient(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrConnectionReconnecting) ||
		errors.Is(err, nats.ErrDisconnected) || errors.Is(err, nats.ErrReconnectBufExceeded)
}

// transientAPI reports JetStream refusals a retry may cure.
func transientAPI(api *jetstream.APIError) bool {
	switch api.ErrorCode {
	case codeClusterNotAvail, codeClusterNotLeader, codeBatchIncomplete, codeBatchInflight,
		codeWrongLastSeqConst, codeDuplicateInFlight:
		return true
	}
	return api.Code == 503
}

// attempt publishes p once: a single message as a request, a batch as
// its messages then a commit request, under a fresh batch id.
func (l *Log) attempt(ctx context.Context, k int, p plan, try int) (uint64, error) {
	if f := l.hooks.unsent; f != nil {
		if err := f(try); err != nil {
			return 0, err
		}
	}
	actx, cancel := context.WithTimeout(ctx, l.attemptTimeout(try))
	defer cancel()
	n := len(p.msgs)
	batch := ""
	if n > 1 {
		select {
		case l.batches[k] <- struct{}{}:
		case <-actx.Done():
			return 0, actx.Err()
		}
		defer func() { <-l.batches[k] }()
		batch = nuid.Next()
		for i, m := range p.msgs {
			m.msg.Header.Set(hdrBatchID, batch)
			m.msg.Header.Set(hdrBatchSeq, strconv.Itoa(i+1))
			if i == n-1 {
				m.msg.Header.Set(hdrBatchCommit, "1")
				break
			}
			if err := l.nc.PublishMsg(m.msg); err != nil {
				return 0, err
			}
		}
	}
	resp, err := l.nc.RequestMsgWithContext(actx, p.msgs[n-1].msg)
	if err != nil {
		return 0, err
	}
	var ack pubAck
	if err := json.Unmarshal(resp.Data, &ack); err != nil {
		return 0, fmt.Errorf("jetstream: unreadable answer %q: %w", resp.Data, err)
	}
	switch {
	case ack.Error != nil:
		if ack.Error.ErrorCode == codeDuplicateInBatch {
			return 0, fmt.Errorf("%w: %v", errDuplicateBatch, ack.Error)
		}
		return 0, ack.Error
	case ack.Duplicate:
		return 0, fmt.Errorf("%w: of stream seq %d", errDuplicateAck, ack.Seq)
	case ack.Stream != l.y.stream(k) || ack.Seq < uint64(n) || (n > 1 && (ack.Batch != batch || ack.Count != uint64(n))):
		return 0, fmt.Errorf("jetstream: unexpected acknowledgement %q for %d messages of batch %q", resp.Data, n, batch)
	}
	return ack.Seq - uint64(n) + 1, nil
}

// resolve settles an append whose outcome an answer left open by reading
// the first message on its first subject after the fence's expected
// sequence: this append's own message (by Nats-Msg-Id and payload) means
// it landed, the batch entire; another writer's means it never can
// (ErrFenced). None means it has not landed: after a batch refused as a
// duplicate, the duplicate is another writer's and the batch can never
// land either (ErrFenced); otherwise an attempt may still be in flight and
// the outcome stays unknown (cause is returned).
func (l *Log) resolve(ctx context.Context, k int, p plan, cause error) (uint64, error) {
	rctx, cancel := context.WithTimeout(ctx, l.opts.RequestTimeout)
	defer cancel()
	m0 := p.msgs[0].msg
	got, err := l.streams[k].GetMsg(rctx, p.expected+1, jetstream.WithGetMsgSubject(m0.Subject))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound) && errors.Is(cause, errDuplicateBatch):
		return 0, fmt.Errorf("%w: %s: %v", ErrFenced, l.describe(k, p), cause)
	case errors.Is(err, jetstream.ErrMsgNotFound):
		if errors.Is(cause, ErrUnavailable) || errors.Is(cause, ErrNotOwner) {
			return 0, fmt.Errorf("jetstream: %s: %w", l.describe(k, p), cause)
		}
		return 0, fmt.Errorf("jetstream: %s: outcome unknown: %w", l.describe(k, p), cause)
	case err != nil:
		return 0, fmt.Errorf("%w: %s: reading back after %v: %v", ErrUnavailable, l.describe(k, p), cause, err)
	case got.Header.Get(hdrMsgID) == m0.Header.Get(hdrMsgID) && bytes.Equal(got.Data, m0.Data):
		l.logger.Info().Int("partition", k).Uint64("stream_seq", got.Sequence).AnErr("answer", cause).
			Msg("jetstream: an append's earlier attempt had landed")
		return got.Sequence, nil
	}
	return 0, fmt.Errorf("%w: %s: stream seq %d after the expected %d holds %s (answer: %v)",
		ErrFenced, l.describe(k, p), got.Sequence, p.expected, got.Header.Get(hdrMsgID), cause)
}

// describe names an append for errors: its first message and size.
func (l *Log) describe(k int, p plan) string {
	m := p.msgs[0].msg
	return fmt.Sprintf("append of %d messages to %s from %s (expected last subject seq %d)",
		len(p.msgs), l.y.stream(k), m.Header.Get(hdrMsgID), p.expected)
}
