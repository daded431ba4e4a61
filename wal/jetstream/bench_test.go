package jetstream

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hubd/hubd/internal/natstest"
)

// benchAppend runs b.N one-record appends of 1 KiB from conc writers, each
// on its own session, and reports appends per second.
func benchAppend(b *testing.B, l *Log, conc int, run *int) {
	*run++
	r := *run
	data := make([]byte, 1024)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := id(byte(w))
			s[1], s[2], s[3] = byte(w), byte(r), byte(r>>8)
			seq := uint64(1)
			for next.Add(1) <= int64(b.N) {
				wr := Write{Session: s, Records: []Record{{seq, data}}}
				if seq == 1 {
					wr.Meta = testMeta(s)
				}
				if err := l.Append(context.Background(), wr); err != nil {
					b.Error(err)
					return
				}
				seq++
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}

func BenchmarkAppend(b *testing.B) {
	c := natstest.RunServer(b)
	l := openLog(b, c.Connect(b), Options{Partitions: 4, OwnAll: true})
	run := 0
	for _, conc := range []int{1, 64} {
		b.Run(fmt.Sprintf("R1/writers=%d", conc), func(b *testing.B) { benchAppend(b, l, conc, &run) })
	}
}

func BenchmarkAppendCluster(b *testing.B) {
	c := natstest.RunCluster(b, 3)
	l := openLog(b, c.Connect(b), Options{Partitions: 4, Replicas: 3, OwnAll: true})
	run := 0
	for _, conc := range []int{1, 64} {
		b.Run(fmt.Sprintf("R3/writers=%d", conc), func(b *testing.B) { benchAppend(b, l, conc, &run) })
	}
}

// BenchmarkHydrate reads a partition of 200 sessions and 20,000 records
// of 1 KiB with one consumer.
func BenchmarkHydrate(b *testing.B) {
	c := natstest.RunServer(b)
	l := openLog(b, c.Connect(b), Options{Partitions: 1, OwnAll: true})
	data := make([]byte, 1024)
	var wg sync.WaitGroup
	for w := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := id(byte(w))
			s[1] = byte(w >> 8)
			if err := l.Append(context.Background(), Write{Session: s, Meta: testMeta(s), Records: []Record{{1, data}}}); err != nil {
				b.Error(err)
			}
			for seq := uint64(2); seq <= 100; seq += 33 {
				rs := make([]Record, 33)
				for i := range rs {
					rs[i] = Record{seq + uint64(i), data}
				}
				if err := l.Append(context.Background(), Write{Session: s, Records: rs}); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	b.ResetTimer()
	for range b.N {
		st, err := l.Hydrate(context.Background(), 0, Visitor{})
		if err != nil || st.Records != 20000 || st.Sessions != 200 {
			b.Fatalf("Hydrate = %+v, %v", st, err)
		}
	}
	b.ReportMetric(float64(b.N)*20200/b.Elapsed().Seconds(), "msgs/s")
}
