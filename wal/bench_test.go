package wal

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkAppend measures group commit: appenders goroutines, each with
// its own session, append 1 KiB records one per call with consecutive seqs;
// b.N appends in total. Run with e.g. -benchtime=20000x.
func BenchmarkAppend(b *testing.B) {
	for _, sync := range []string{"on", "off"} {
		for _, n := range []int{1, 16, 128} {
			b.Run(fmt.Sprintf("sync=%s/appenders=%d", sync, n), func(b *testing.B) {
				benchAppend(b, sync == "off", n)
			})
		}
	}
}

func benchAppend(b *testing.B, noSync bool, appenders int) {
	l, err := Open(Options{Dir: b.TempDir(), NoSync: noSync})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	data := benchData(1024)
	lat := make([][]time.Duration, appenders)
	for g := range lat {
		lat[g] = make([]time.Duration, 0, b.N/appenders+1)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for g := range appenders {
		n := b.N / appenders
		if g < b.N%appenders {
			n++
		}
		wg.Go(func() { lat[g] = appendLoop(b, l, sid(g), data, n, lat[g]) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "appends/s")
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50_us")
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99_us")
	}
}

// benchData is n pseudo-random (incompressible) bytes.
func benchData(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// appendLoop appends n records to session s and records each latency.
func appendLoop(b *testing.B, l *Log, s [16]byte, data []byte, n int, lat []time.Duration) []time.Duration {
	ctx := context.Background()
	w := []Write{{Session: s, Records: []Record{{Data: data}}}}
	for seq := uint64(1); seq <= uint64(n); seq++ {
		w[0].Meta = nil
		if seq == 1 {
			w[0].Meta = []byte("bench")
		}
		w[0].Records[0].Seq = seq
		t := time.Now()
		if err := l.Append(ctx, w...); err != nil {
			b.Error(err)
			return lat
		}
		lat = append(lat, time.Since(t))
	}
	return lat
}

// BenchmarkScanAll measures hydration: ScanAll over 64 sessions × 1000
// records of 1 KiB.
func BenchmarkScanAll(b *testing.B) {
	l, err := Open(Options{Dir: b.TempDir(), NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	const sessions, perSession = 64, 1000
	data := benchData(1024)
	for i := range sessions {
		for first := uint64(1); first <= perSession; first += 100 {
			w := Write{Session: sid(i)}
			if first == 1 {
				w.Meta = []byte("bench")
			}
			for seq := first; seq < first+100; seq++ {
				w.Records = append(w.Records, Record{Seq: seq, Data: data})
			}
			mustAppend(b, l, w)
		}
	}
	ctx := context.Background()
	records := 0
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		err := l.ScanAll(ctx, func(_ [16]byte, _ uint64, d []byte) error {
			records++
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(records)/time.Since(start).Seconds(), "records/s")
}

// BenchmarkRawFsync is the disk's floor for comparison: write 1 KiB to a
// file and fsync it, one at a time.
func BenchmarkRawFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "f"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	data := benchData(1024)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t := time.Now()
		if _, err := f.Write(data); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50_us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99_us")
}

// BenchmarkFreeBytes measures the free-space check the committer makes
// before each commit (statfs of the data directory).
func BenchmarkFreeBytes(b *testing.B) {
	d, err := os.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := freeBytesOf(d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStorageCheck measures what a commit spends checking its
// storage, twice a commit (before and after): a stat of the data
// directory and an fstat of the journal's active segment.
func BenchmarkStorageCheck(b *testing.B) {
	l, err := Open(Options{Dir: b.TempDir(), NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	seg := l.c.journal.f
	for b.Loop() {
		if err := l.storage.check(seg); err != nil {
			b.Fatal(err)
		}
	}
}
