package hub_test

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal"
)

// benchEnded is how many ended sessions the memory and start-up benchmarks
// write: HUBD_BENCH_ENDED, default 50,000 (memory) or 20,000 (start-up).
func benchEnded(def int) int {
	if n, err := strconv.Atoi(os.Getenv("HUBD_BENCH_ENDED")); err == nil && n > 0 {
		return n
	}
	return def
}

// benchHub is a hub on a real badger log in dir.
type benchHub struct {
	l *wal.Log
	h *served
}

func openBenchHub(tb testing.TB, dir string) benchHub {
	tb.Helper()
	l, err := wal.Open(wal.Options{Dir: dir, NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	h, err := openServed(context.Background(), hub.Config{Log: server.WALLog(l), Adapters: server.Adapters(nil)})
	if err != nil {
		tb.Fatal(err)
	}
	return benchHub{l, h}
}

func (x benchHub) close() {
	x.h.Close()
	x.l.Close()
}

// fillEnded opens, talks in and closes n conversations, and leaves live
// more open.
func fillEnded(tb testing.TB, h *served, n, live int) {
	tb.Helper()
	ctx := context.Background()
	req := &hubpb.OpenRequest{Type: "conversation@1", Participants: []*hubpb.Participant{{Name: "b", AutoAccept: true}}}
	for i := range n + live {
		o, err := h.Open(ctx, "a", req)
		if err != nil {
			tb.Fatal(err)
		}
		id := session.MustParseID(o.GetSession().GetMeta().GetSessionId())
		if _, err := h.Send(ctx, "a", id, textEnv("a turn of about sixty bytes of text, as agents write them")); err != nil {
			tb.Fatal(err)
		}
		if i < n {
			if _, err := h.CloseSession(ctx, "a", false, id, ""); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// memUsage is the heap in use after a full collection and the process's
// resident set, in MiB.
func memUsage() (heap, rss float64) {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse) / (1 << 20), float64(rssKiB()) / 1024
}

// rssKiB reads VmRSS from /proc/self/status (0 where there is none).
func rssKiB() int {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return n
		}
	}
	return 0
}

// BenchmarkEndedMemory measures the heap and RSS of a hub on a real badger
// log, empty, after half of 50,000 sessions (HUBD_BENCH_ENDED) were
// opened, talked in and closed, after all of them, and after a restart on
// that log, and reports the ratios to the empty hub and of the full to
// the half: ended sessions leave memory, so the second half adds nothing
// (what the first half adds is badger's memtables, which are bounded:
// see the restart, after which they are flushed).
//
//	go test ./hub -run '^$' -bench BenchmarkEndedMemory -benchtime 1x
func BenchmarkEndedMemory(b *testing.B) {
	n := benchEnded(50_000)
	for range b.N {
		dir := b.TempDir()
		x := openBenchHub(b, dir)
		heap0, rss0 := memUsage()
		fillEnded(b, x.h, n/2, 0)
		heapH, rssH := memUsage()
		fillEnded(b, x.h, n-n/2, 0)
		heap1, rss1 := memUsage()
		if live, cached := x.h.Resident(); live != 0 || cached > 256 {
			b.Fatalf("resident: %d live, %d cached", live, cached)
		}
		x.close()
		x = openBenchHub(b, dir)
		heap2, rss2 := memUsage()
		x.close()
		b.ReportMetric(heap0, "heap-empty-MiB")
		b.ReportMetric(heap1, "heap-ended-MiB")
		b.ReportMetric(heap1/heap0, "heap-ratio")
		b.ReportMetric(heap2/heap0, "heap-restart-ratio")
		b.ReportMetric(heap1/heapH, "heap-full/half")
		b.ReportMetric(rss1/rssH, "rss-full/half")
		b.ReportMetric(rss0, "rss-empty-MiB")
		b.ReportMetric(rss1, "rss-ended-MiB")
		b.ReportMetric(rss1/rss0, "rss-ratio")
		b.ReportMetric(rss2/rss0, "rss-restart-ratio")
	}
}

// BenchmarkStartupEnded measures a hub's start (log open and hydrate) on
// a log of 100 open sessions, and on one with 20,000 ended sessions
// (HUBD_BENCH_ENDED) besides the same 100 open, and reports the ratio:
// start-up grows with the live sessions, not with the ended ones.
//
//	go test ./hub -run '^$' -bench BenchmarkStartupEnded -benchtime 5x
func BenchmarkStartupEnded(b *testing.B) {
	const live = 100
	n := benchEnded(20_000)
	none, many := b.TempDir(), b.TempDir()
	for _, c := range []struct {
		dir   string
		ended int
	}{{none, 0}, {many, n}} {
		x := openBenchHub(b, c.dir)
		fillEnded(b, x.h, c.ended, live)
		x.close()
	}
	// start returns how long the log took to open and the hub to hydrate.
	start := func(dir string) (time.Duration, time.Duration) {
		t0 := time.Now()
		l, err := wal.Open(wal.Options{Dir: dir, NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		h, err := openServed(context.Background(), hub.Config{Log: server.WALLog(l), Adapters: server.Adapters(nil)})
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if n, _ := h.Resident(); n != live {
			b.Fatalf("%d live sessions, want %d", n, live)
		}
		benchHub{l, h}.close()
		return t1.Sub(t0), t2.Sub(t1)
	}
	var logNone, hubNone, logMany, hubMany time.Duration
	b.ResetTimer()
	for range b.N {
		l, h := start(none)
		logNone, hubNone = logNone+l, hubNone+h
		l, h = start(many)
		logMany, hubMany = logMany+l, hubMany+h
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(b.N) / 1e6 }
	b.ReportMetric(ms(logNone+hubNone), "ms-start-0-ended")
	b.ReportMetric(ms(logMany+hubMany), "ms-start-with-ended")
	b.ReportMetric(float64(logMany+hubMany)/float64(logNone+hubNone), "ratio")
	b.ReportMetric(ms(hubNone), "ms-hydrate-0-ended")
	b.ReportMetric(ms(hubMany), "ms-hydrate-with-ended")
	b.ReportMetric(float64(hubMany)/float64(hubNone), "hydrate-ratio")
}

// BenchmarkSubscribeCatchUp measures a subscription's catch-up for an
// agent in 500 and in 2,000 open sessions, each with its turn pending and
// one envelope to catch up on, and reports the time per session of each
// and their ratio: a catch-up costs O(sessions), so the ratio stays near 1.
//
//	go test ./hub -run '^$' -bench BenchmarkSubscribeCatchUp -benchtime 5x
func BenchmarkSubscribeCatchUp(b *testing.B) {
	ctx := context.Background()
	setup := func(n int) (*served, map[session.ID]uint64) {
		x := openBenchHub(b, b.TempDir())
		b.Cleanup(x.close)
		cursors := map[session.ID]uint64{}
		req := &hubpb.OpenRequest{Type: "conversation@1", Participants: []*hubpb.Participant{{Name: "b", AutoAccept: true}}}
		for range n {
			o, err := x.h.Open(ctx, "a", req)
			if err != nil {
				b.Fatal(err)
			}
			id := session.MustParseID(o.GetSession().GetMeta().GetSessionId())
			ack, err := x.h.Send(ctx, "a", id, textEnv("your turn"))
			if err != nil {
				b.Fatal(err)
			}
			cursors[id] = ack.GetSeq() - 1
		}
		return x.h, cursors
	}
	catchUp := func(h *served, cursors map[session.ID]uint64) time.Duration {
		t0 := time.Now()
		sub, err := h.Subscribe(ctx, "b", feed.SubscribeOptions{Cursors: cursors})
		if err != nil {
			b.Fatal(err)
		}
		for range cursors {
			if d, err := sub.Next(ctx); err != nil || !d.GetYourTurn() {
				b.Fatalf("%v %v", d, err)
			}
		}
		d := time.Since(t0)
		sub.Close()
		return d
	}
	const small, large = 500, 2000
	hs, cs := setup(small)
	hl, cl := setup(large)
	var ts, tl time.Duration
	b.ResetTimer()
	for range b.N {
		ts += catchUp(hs, cs)
		tl += catchUp(hl, cl)
	}
	per := func(d time.Duration, n int) float64 { return float64(d) / float64(b.N) / float64(n) / 1e3 }
	b.ReportMetric(per(ts, small), "µs/session-500")
	b.ReportMetric(per(tl, large), "µs/session-2000")
	b.ReportMetric(per(tl, large)/per(ts, small), "ratio")
}
