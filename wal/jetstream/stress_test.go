package jetstream

import (
	"context"
	"sync"
	"testing"
)

// TestManyBatches opens more sessions at once than a stream accepts open
// atomic batches (50 by default), each then written in batches of 33
// records of 1 KiB: the log keeps its own batches under the limit and
// every record lands.
func TestManyBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 records: skipped with -short")
	}
	c := natstestServer(t)
	l := openLog(t, c.Connect(t), Options{Partitions: 1, OwnAll: true})
	data := make([]byte, 1024)
	var wg sync.WaitGroup
	const writers = 100
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := id(byte(w))
			s[1] = 0xee
			if err := l.Append(context.Background(), Write{Session: s, Meta: testMeta(s), Records: []Record{{1, data}}}); err != nil {
				t.Errorf("open: %v", err)
				return
			}
			for seq := uint64(2); seq <= 100; seq += 33 {
				rs := make([]Record, 33)
				for i := range rs {
					rs[i] = Record{seq + uint64(i), data}
				}
				if err := l.Append(context.Background(), Write{Session: s, Records: rs}); err != nil {
					t.Errorf("w%d seq %d: %v", w, seq, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	st, err := l.Hydrate(context.Background(), 0, Visitor{})
	if err != nil || st.Sessions != writers || st.Records != writers*100 {
		t.Fatalf("Hydrate = %+v, %v; want %d sessions of 100 records", st, err, writers)
	}
}
