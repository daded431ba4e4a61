package wal

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConcurrentAppend runs many appenders, each owning a few sessions,
// with multi-session and multi-record appends and contexts that expire at
// random, next to readers. A cancelled append must never land: its seqs are
// retried and must succeed. Afterwards every read agrees and seqs are dense.
func TestConcurrentAppend(t *testing.T) {
	const appenders, perAppender, rounds = 24, 3, 120
	l, err := Open(Options{InMemory: true, MaxBatchBytes: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	var cancelled atomic.Int64
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() { readLoop(t, l, stop) })
	var wg sync.WaitGroup
	for g := range appenders {
		wg.Go(func() {
			if err := appendRounds(l, g, perAppender, rounds, &cancelled); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	lasts := verifyLog(t, l)
	if len(lasts) != appenders*perAppender {
		t.Fatalf("%d sessions, want %d", len(lasts), appenders*perAppender)
	}
	t.Logf("%d appends cancelled before commit and retried", cancelled.Load())
}

// appendRounds appends rounds times to some of appender g's sessions, then
// checks that LastSeq knows every acknowledged record.
func appendRounds(l *Log, g, sessions, rounds int, cancelled *atomic.Int64) error {
	r := rand.New(rand.NewPCG(uint64(g), 1))
	next := make([]uint64, sessions)
	for i := range next {
		next[i] = 1
	}
	for range rounds {
		var writes []Write
		var idx []int
		for i := range sessions {
			if r.IntN(2) == 0 || (i == sessions-1 && len(writes) == 0) {
				writes = append(writes, mkWrite(sid(g*sessions+i), next[i], 1+r.IntN(3)))
				idx = append(idx, i)
			}
		}
		if err := appendMaybeCancelled(l, r, writes, cancelled); err != nil {
			return fmt.Errorf("appender %d: %w", g, err)
		}
		for j, w := range writes {
			next[idx[j]] += uint64(len(w.Records))
		}
	}
	for i := range next {
		last, err := l.LastSeq(context.Background(), sid(g*sessions+i))
		if err != nil || last != next[i]-1 {
			return fmt.Errorf("appender %d session %d: LastSeq = %d, %v; want %d", g, i, last, err, next[i]-1)
		}
	}
	return nil
}

// appendMaybeCancelled appends writes, sometimes first with a context that
// expires at once or within microseconds; a context error means nothing
// was written, so it retries with a live context.
func appendMaybeCancelled(l *Log, r *rand.Rand, writes []Write, cancelled *atomic.Int64) error {
	if r.IntN(4) == 0 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.IntN(300))*time.Microsecond)
		err := l.Append(ctx, writes...)
		cancel()
		if err == nil || !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		cancelled.Add(1)
	}
	return l.Append(context.Background(), writes...)
}

// readLoop scans while appends run, checking density of what it sees.
func readLoop(t *testing.T, l *Log, stop chan struct{}) {
	ctx := context.Background()
	for {
		select {
		case <-stop:
			return
		default:
		}
		err := l.ScanAll(ctx, func([16]byte, uint64, []byte) error { return nil })
		if err == nil {
			err = l.Sessions(ctx, func([16]byte, []byte, uint64) error { return nil })
		}
		if err != nil {
			t.Error(err)
			return
		}
		time.Sleep(time.Millisecond)
	}
}
