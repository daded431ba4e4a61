package jetstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// smallRead is how many messages a read fetches one by one (one request
// each, served by the stream leader) before it creates a consumer: most
// reads of a session (a retry's lookup, a catch-up near the tail) are
// short, and a consumer costs a round through the meta leader in a
// cluster.
const smallRead = 32

// raw is one message as read, not yet decoded.
type raw struct {
	subj, id string
	data     []byte
	sseq     uint64
}

// readSubject calls fn for the messages of partition k on subject subj
// with stream seqs from start through until, in order.
func (l *Log) readSubject(ctx context.Context, k int, subj string, start, until uint64, fn func(raw) error) error {
	seq := start
	for range smallRead {
		if seq > until {
			return nil
		}
		m, err := l.nextFor(ctx, k, subj, seq)
		if err != nil {
			return err
		}
		if m.Sequence > until {
			return nil
		}
		if err := fn(raw{subj: m.Subject, id: m.Header.Get(hdrMsgID), data: m.Data, sseq: m.Sequence}); err != nil {
			return err
		}
		seq = m.Sequence + 1
	}
	if seq > until {
		return nil
	}
	return l.consume(ctx, k, subj, seq, until, fn)
}

// nextFor returns the first message on subj at or after stream seq seq.
func (l *Log) nextFor(ctx context.Context, k int, subj string, seq uint64) (*jetstream.RawStreamMsg, error) {
	rctx, cancel := context.WithTimeout(ctx, l.opts.RequestTimeout)
	defer cancel()
	m, err := l.streams[k].GetMsg(rctx, seq, jetstream.WithGetMsgSubject(subj))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return nil, fmt.Errorf("%w: %s has no message at or after stream seq %d, though its last is later", ErrGap, subj, seq)
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return nil, fmt.Errorf("%w: reading %s at stream seq %d: %v", ErrUnavailable, subj, seq, err)
	case err != nil:
		return nil, fmt.Errorf("jetstream: reading %s at stream seq %d: %w", subj, seq, err)
	}
	return m, nil
}

// consumeAll calls fn for every message of partition k matching filter,
// up to the last one as the stream leader has it now.
func (l *Log) consumeAll(ctx context.Context, k int, filter string, fn func(raw) error) error {
	m, ok, err := l.lastFor(ctx, k, filter)
	if err != nil || !ok {
		return err
	}
	return l.consume(ctx, k, filter, 1, m.Sequence, fn)
}

// consumeTries is how many consumers a read creates before it gives up:
// a consumer that stops delivering (its stream's leader moved) is replaced
// by one that starts after the last message delivered.
const consumeTries = 3

// errStalled marks a consumer that delivered nothing in time.
var errStalled = errors.New("stalled")

// consume calls fn for the messages of partition k matching filter from
// stream seq start (1: the beginning) through stream seq until, with one
// ordered consumer. until must come from the stream leader (lastFor): a
// consumer may run on a follower that lags it, so its own count of
// pending messages is no proof of having read everything.
func (l *Log) consume(ctx context.Context, k int, filter string, start, until uint64, fn func(raw) error) error {
	if start > until {
		return nil
	}
	next := start
	var err error
	for try := 1; try <= consumeTries; try++ {
		err = l.consumeFrom(ctx, k, filter, &next, until, fn)
		if !errors.Is(err, errStalled) || ctx.Err() != nil || next > until {
			return err
		}
		l.logger.Warn().Err(err).Int("partition", k).Uint64("stream_seq", next).Int("try", try).Msg("jetstream: a read's consumer stalled; replacing it")
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}

// consumeFrom is one consumer of consume, from *next, which it advances
// past every message handed to fn.
func (l *Log) consumeFrom(ctx context.Context, k int, filter string, next *uint64, until uint64, fn func(raw) error) error {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}, InactiveThreshold: time.Minute}
	if *next > 1 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, *next
	}
	cctx, cancel := context.WithTimeout(ctx, l.opts.RequestTimeout)
	c, err := l.js.OrderedConsumer(cctx, l.y.stream(k), cfg)
	cancel()
	if err != nil {
		return fmt.Errorf("%w: creating a consumer on %s: %v", errStalled, l.y.stream(k), err)
	}
	defer l.deleteConsumer(k, c)
	it, err := c.Messages(jetstream.PullMaxMessages(512), jetstream.PullExpiry(5*time.Second), jetstream.PullHeartbeat(time.Second))
	if err != nil {
		return fmt.Errorf("%w: reading %s: %v", errStalled, l.y.stream(k), err)
	}
	defer it.Stop()
	for {
		nctx, cancel := context.WithTimeout(ctx, l.opts.RequestTimeout)
		m, err := it.Next(jetstream.NextContext(nctx))
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%w: reading %s from stream seq %d: %v", errStalled, l.y.stream(k), *next, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("jetstream: reading %s: %w", l.y.stream(k), err)
		}
		if md.Sequence.Stream > until {
			return nil
		}
		if err := fn(raw{subj: m.Subject(), id: m.Headers().Get(hdrMsgID), data: m.Data(), sseq: md.Sequence.Stream}); err != nil {
			return err
		}
		*next = md.Sequence.Stream + 1
		if md.Sequence.Stream >= until {
			return nil
		}
	}
}

// deleteConsumer removes a read's consumer at once rather than leave it to
// its inactivity threshold.
func (l *Log) deleteConsumer(k int, c jetstream.Consumer) {
	info := c.CachedInfo()
	if info == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.RequestTimeout)
	defer cancel()
	if err := l.js.DeleteConsumer(ctx, l.y.stream(k), info.Name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		l.logger.Debug().Err(err).Str("consumer", info.Name).Msg("jetstream: deleting a read's consumer")
	}
}
