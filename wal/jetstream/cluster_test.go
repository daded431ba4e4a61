package jetstream

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubd/hubd/internal/natstest"
)

// TestLeaderShutdown writes from several goroutines into a three-server
// cluster (R3 streams), shuts down the leader of a partition stream in the
// middle, and checks that appends paused and resumed and that every
// acknowledged record is in the log, dense.
func TestLeaderShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-server cluster: skipped with -short")
	}
	start := time.Now()
	c := natstest.RunCluster(t, 3)
	nc := c.Connect(t)
	l := openLog(t, nc, Options{Partitions: 2, Replicas: 3, OwnAll: true, AppendTimeout: 20 * time.Second})
	t.Logf("cluster and streams ready in %v", time.Since(start).Round(time.Millisecond))

	const writers = 8
	var (
		acked    [writers]atomic.Uint64 // last acknowledged seq per writer's session
		total    atomic.Int64
		failures atomic.Int64
		pauses   [writers]time.Duration // longest wait for an acknowledgement
	)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := idIn(t, byte(w+1), w%2, 2)
			next := uint64(1)
			for ctx.Err() == nil {
				var err error
				if next == 1 {
					err = l.Append(context.Background(), open(s, 1))
				} else {
					began := time.Now()
					err = l.Append(context.Background(), more(s, next, 1+next%2)) // one message or a batch
					pauses[w] = max(pauses[w], time.Since(began))
				}
				if err != nil {
					// What the hub does: reload the session from the log.
					failures.Add(1)
					t.Logf("writer %d: %v", w, err)
					n, err := count(l, s)
					if err != nil {
						t.Errorf("writer %d: reloading: %v", w, err)
						return
					}
					next = n + 1
					continue
				}
				if next == 1 {
					next = 2
				} else {
					next += 1 + next%2
				}
				acked[w].Store(next - 1)
				total.Add(1)
			}
		}()
	}
	waitFor(t, func() bool { return total.Load() >= 200 }, 20*time.Second)
	info, err := l.streams[0].Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	leader := c.Index(info.Cluster.Leader)
	before := total.Load()
	var atKill [writers]uint64
	for w := range writers {
		atKill[w] = acked[w].Load()
	}
	killed := time.Now()
	c.Shutdown(leader)
	t.Logf("shut down %s, leader of %s, after %d appends", info.Cluster.Leader, l.Stream(0), before)
	waitFor(t, func() bool {
		for w := range writers {
			if acked[w].Load() < atKill[w]+20 {
				return false
			}
		}
		return true
	}, 30*time.Second)
	stop()
	wg.Wait()
	var pause [2]time.Duration
	for w := range writers {
		pause[w%2] = max(pause[w%2], pauses[w])
	}
	t.Logf("%d appends acknowledged (%d before the shutdown), %d failed; every writer 20 further within %v; longest append: %v in %s, %v in %s",
		total.Load(), before, failures.Load(), time.Since(killed).Round(time.Millisecond),
		pause[0].Round(time.Millisecond), l.Stream(0), pause[1].Round(time.Millisecond), l.Stream(1))

	// Every acknowledged record is there, read from a fresh log.
	fresh := openLog(t, nc, Options{Partitions: 2, Replicas: 3})
	for w := range writers {
		s := idIn(t, byte(w+1), w%2, 2)
		got := scanAll(t, fresh, s, 1)
		if n := acked[w].Load(); uint64(len(got)) < n {
			t.Errorf("writer %d: %d records in the log, %d acknowledged", w, len(got), n)
		}
		for i, g := range got {
			if want := fmt.Sprintf("%d:r-%d", i+1, i+1); g != want {
				t.Fatalf("writer %d: record %q, want %q", w, g, want)
			}
		}
	}
	c.Restart(leader)
	t.Logf("test took %v", time.Since(start).Round(time.Millisecond))
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, cond func() bool, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", d)
		}
		<-tick.C
	}
}

// count returns how many records a session has (Scan checks density).
func count(l *Log, s [16]byte) (uint64, error) {
	var n uint64
	err := l.Scan(context.Background(), s, 1, func(uint64, []byte) error { n++; return nil })
	return n, err
}
