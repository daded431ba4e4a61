package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		ok   bool
	}{
		{"in memory", Options{InMemory: true}, true},
		{"dir", Options{Dir: "/tmp/x"}, true},
		{"max batch", Options{Dir: "d", MaxBatchBytes: MaxMaxBatchBytes}, true},
		{"nothing", Options{}, false},
		{"both", Options{Dir: "d", InMemory: true}, false},
		{"negative batch", Options{Dir: "d", MaxBatchBytes: -1}, false},
		{"huge batch", Options{Dir: "d", MaxBatchBytes: MaxMaxBatchBytes + 1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalid)) {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
			if !tc.ok {
				if _, err := Open(tc.opts); !errors.Is(err, ErrInvalid) {
					t.Fatalf("Open() = %v, want ErrInvalid", err)
				}
			}
		})
	}
}

func TestAppendErrors(t *testing.T) {
	s, other := sid(1), sid(2)
	tests := []struct {
		name   string
		writes []Write
		want   error
	}{
		{"gap after last", []Write{mkWrite(s, 5, 1)}, ErrGap},
		{"replay of stored seq", []Write{mkWrite(s, 3, 1)}, ErrGap},
		{"not consecutive", []Write{{Session: s, Records: []Record{{Seq: 4}, {Seq: 6}}}}, ErrGap},
		{"descending", []Write{{Session: s, Records: []Record{{Seq: 4}, {Seq: 3}}}}, ErrGap},
		{"new session without meta", []Write{{Session: other, Records: []Record{{Seq: 1}}}}, ErrNoMeta},
		{"new session empty meta", []Write{{Session: other, Meta: []byte{}, Records: []Record{{Seq: 1}}}}, ErrNoMeta},
		{"new session not at 1", []Write{mkWrite(other, 2, 1)}, ErrGap},
		{"meta on existing session", []Write{{Session: s, Meta: []byte("m"), Records: []Record{{Seq: 4}}}}, ErrInvalid},
		{"seq 0", []Write{{Session: s, Records: []Record{{Seq: 0}}}}, ErrInvalid},
		{"no records", []Write{{Session: s}}, ErrInvalid},
		{"too large", []Write{{Session: s, Records: []Record{{Seq: 4, Data: make([]byte, 5000)}}}}, ErrTooLarge},
		{"too large in sum", []Write{mkWrite(s, 4, 1), {Session: other, Meta: make([]byte, 2000), Records: []Record{{Seq: 1, Data: make([]byte, 2000)}}}}, ErrTooLarge},
		{"second write bad", []Write{mkWrite(s, 4, 2), mkWrite(other, 1, 1), mkWrite(sid(3), 2, 1)}, ErrGap},
		{"same session twice, gap", []Write{mkWrite(s, 4, 2), mkWrite(s, 7, 1)}, ErrGap},
	}
	l, err := Open(Options{InMemory: true, MaxBatchBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	mustAppend(t, l, mkWrite(s, 1, 3))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := l.Append(context.Background(), tc.writes...); !errors.Is(err, tc.want) {
				t.Fatalf("Append = %v, want %v", err, tc.want)
			}
			lasts := verifyLog(t, l)
			if len(lasts) != 1 || lasts[s] != 3 {
				t.Fatalf("log changed by a rejected append: %v", lasts)
			}
		})
	}
	// The log still takes the right next append, several writes at once.
	mustAppend(t, l, mkWrite(s, 4, 2), mkWrite(s, 6, 1), mkWrite(other, 1, 2))
	if lasts := verifyLog(t, l); lasts[s] != 6 || lasts[other] != 2 {
		t.Fatalf("lasts = %v", lasts)
	}
	if err := l.Append(context.Background()); err != nil {
		t.Fatalf("empty Append = %v", err)
	}
}

func TestClosed(t *testing.T) {
	l, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	s := sid(1)
	mustAppend(t, l, mkWrite(s, 1, 1))
	if err := l.Close(); err != nil {
		t.Fatalf("first Close = %v", err)
	}
	ctx := context.Background()
	calls := map[string]error{
		"Close":        l.Close(),
		"Append":       l.Append(ctx, mkWrite(s, 2, 1)),
		"Append empty": l.Append(ctx),
		"Scan":         l.Scan(ctx, s, 0, func(uint64, []byte) error { return nil }),
		"ScanAll":      l.ScanAll(ctx, func([16]byte, uint64, []byte) error { return nil }),
		"Sessions":     l.Sessions(ctx, func([16]byte, []byte, uint64) error { return nil }),
	}
	_, calls["Meta"] = l.Meta(ctx, s)
	_, calls["LastSeq"] = l.LastSeq(ctx, s)
	for name, err := range calls {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
}

// queued is the number of requests waiting for the committer.
func queued(l *Log) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue)
}

// waitFor polls cond until it holds or the test times out.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func openHooked(t *testing.T, h testHooks) *Log {
	t.Helper()
	l, err := open(Options{InMemory: true}, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func TestAppendContextBeforeTaken(t *testing.T) {
	gate := make(chan struct{})
	l := openHooked(t, testHooks{beforeTake: func() { <-gate }})
	s := sid(1)
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	w := mkWrite(s, 1, 1)
	w.Records[0].Data = []byte("cancelled")
	go func() { res <- l.Append(ctx, w) }()
	waitFor(t, "request queued", func() bool { return queued(l) == 1 })
	cancel()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Fatalf("Append = %v, want context.Canceled", err)
	}
	close(gate)
	mustAppend(t, l, mkWrite(s, 1, 1)) // seq 1 again: the cancelled one never landed
	verifyLog(t, l)
	if err := l.Append(ctx, mkWrite(s, 2, 1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with done ctx = %v", err)
	}
}

func TestAppendContextAfterTaken(t *testing.T) {
	taken, gate := make(chan struct{}), make(chan struct{})
	l := openHooked(t, testHooks{afterTake: func() {
		select {
		case taken <- struct{}{}:
			<-gate
		default:
		}
	}})
	s := sid(1)
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { res <- l.Append(ctx, mkWrite(s, 1, 2)) }()
	<-taken
	cancel()
	select {
	case err := <-res:
		t.Fatalf("Append returned %v before its commit", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(gate)
	if err := <-res; err != nil {
		t.Fatalf("Append = %v, want its real outcome nil", err)
	}
	verifySession(t, l, s, 2)
}

// TestGroupCommitMixed puts valid and invalid requests in one transaction:
// each gets its own outcome, and later requests see earlier ones.
func TestGroupCommitMixed(t *testing.T) {
	gate := make(chan struct{})
	l := openHooked(t, testHooks{beforeTake: func() { <-gate }})
	gate <- struct{}{} // let the first, empty take pass
	s, s2 := sid(1), sid(2)
	reqs := []struct {
		writes []Write
		want   error
	}{
		{[]Write{mkWrite(s, 1, 2)}, nil},
		{[]Write{mkWrite(s, 3, 1), mkWrite(s2, 1, 1)}, nil},
		{[]Write{mkWrite(s, 3, 1)}, ErrGap},
		{[]Write{{Session: sid(3), Records: []Record{{Seq: 1}}}}, ErrNoMeta},
		{[]Write{mkWrite(s2, 2, 3)}, nil},
	}
	res := make([]chan error, len(reqs))
	for i, r := range reqs {
		res[i] = make(chan error, 1)
		go func() { res[i] <- l.Append(context.Background(), r.writes...) }()
		waitFor(t, "request queued", func() bool { return queued(l) == i+1 })
	}
	close(gate)
	for i, r := range reqs {
		if err := <-res[i]; !errors.Is(err, r.want) || (r.want == nil && err != nil) {
			t.Errorf("request %d: %v, want %v", i, err, r.want)
		}
	}
	if lasts := verifyLog(t, l); len(lasts) != 2 || lasts[s] != 3 || lasts[s2] != 4 {
		t.Fatalf("lasts = %v", lasts)
	}
}

// TestCommitFailure closes badger between staging and commit: the commit
// fails and every request in the transaction gets the wrapped error.
func TestCommitFailure(t *testing.T) {
	var l *Log
	var closeDB atomic.Bool
	gate := make(chan struct{})
	l = openHooked(t, testHooks{beforeTake: func() { <-gate }, beforeCommit: func() {
		if closeDB.Load() {
			_ = l.db.Close()
		}
	}})
	gate <- struct{}{} // the first, empty take
	go func() { gate <- struct{}{} }()
	mustAppend(t, l, mkWrite(sid(1), 1, 1), mkWrite(sid(2), 1, 1))
	closeDB.Store(true)
	ctx := context.Background()
	errs := make(chan error, 2)
	go func() { errs <- l.Append(ctx, mkWrite(sid(1), 2, 1)) }()
	waitFor(t, "request queued", func() bool { return queued(l) == 1 })
	go func() { errs <- l.Append(ctx, mkWrite(sid(2), 2, 1)) }()
	waitFor(t, "request queued", func() bool { return queued(l) == 2 })
	close(gate) // both in one transaction
	for range 2 {
		if err := <-errs; err == nil || !errors.Is(err, badger.ErrBlockedWrites) {
			t.Fatalf("Append = %v, want a wrapped badger.ErrBlockedWrites", err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
}

// rawSet writes a raw key and value, bypassing the committer.
func rawSet(t *testing.T, l *Log, k, v []byte) {
	t.Helper()
	if err := l.db.Update(func(txn *badger.Txn) error { return txn.Set(k, v) }); err != nil {
		t.Fatal(err)
	}
}

func TestReadErrors(t *testing.T) {
	s := sid(7)
	ctx := context.Background()
	scan := func(l *Log) error {
		return l.Scan(ctx, s, 0, func(uint64, []byte) error { return nil })
	}
	scanAll := func(l *Log) error {
		return l.ScanAll(ctx, func([16]byte, uint64, []byte) error { return nil })
	}
	sessions := func(l *Log) error {
		return l.Sessions(ctx, func([16]byte, []byte, uint64) error { return nil })
	}
	meta := func(l *Log) error { _, err := l.Meta(ctx, s); return err }
	rk := func(seq uint64) []byte { return appendRecordKey(nil, s, seq) }
	mk := appendMetaKey(nil, s)
	otherMeta := appendValue(nil, appendMetaKey(nil, sid(8)), metaData(s)) // framed for another key
	tests := []struct {
		name   string
		k, v   []byte
		read   func(*Log) error
		want   error
		detail string
	}{
		{"gap Scan", rk(5), appendValue(nil, rk(5), []byte("x")), scan, ErrGap, "found seq 5, want 4"},
		{"gap ScanAll", rk(5), appendValue(nil, rk(5), []byte("x")), scanAll, ErrGap, "found seq 5, want 4"},
		{"checksum Scan", rk(2), appendValue(nil, rk(3), recData(s, 2)), scan, ErrCorrupt, fmt.Sprintf("session %x seq 2", s)},
		{"checksum ScanAll", rk(2), appendValue(nil, rk(3), recData(s, 2)), scanAll, ErrCorrupt, fmt.Sprintf("session %x seq 2", s)},
		{"short frame", rk(3), []byte{1, 2}, scanAll, ErrCorrupt, "seq 3"},
		{"bad key", append(rk(1), 0), []byte{}, scan, ErrCorrupt, "length 26"},
		{"meta checksum Sessions", mk, otherMeta, sessions, ErrCorrupt, fmt.Sprintf("session %x metadata", s)},
		{"meta checksum Meta", mk, otherMeta, meta, ErrCorrupt, fmt.Sprintf("session %x metadata", s)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := openMem(t)
			mustAppend(t, l, mkWrite(s, 1, 3))
			rawSet(t, l, tc.k, tc.v)
			err := tc.read(l)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.detail) {
				t.Fatalf("read = %v, want %v mentioning %q", err, tc.want, tc.detail)
			}
		})
	}
}

func TestScanFrom(t *testing.T) {
	l := openMem(t)
	s := sid(1)
	mustAppend(t, l, mkWrite(s, 1, 10))
	mustAppend(t, l, mkWrite(sid(0), 1, 1), mkWrite(sid(2), 1, 1)) // neighbours in key order
	for _, from := range []uint64{0, 1, 5, 10, 11, 1 << 63} {
		var got []uint64
		err := l.Scan(context.Background(), s, from, func(seq uint64, data []byte) error {
			if !bytes.Equal(data, recData(s, seq)) {
				return fmt.Errorf("seq %d data %q", seq, data)
			}
			got = append(got, seq)
			return nil
		})
		want := max(from, 1)
		if err != nil || (want <= 10 && (len(got) != int(11-want) || got[0] != want)) || (want > 10 && len(got) != 0) {
			t.Fatalf("Scan from %d: %v %v", from, got, err)
		}
	}
	stop := errors.New("stop")
	n := 0
	err := l.Scan(context.Background(), s, 0, func(uint64, []byte) error { n++; return stop })
	if err != stop || n != 1 {
		t.Fatalf("Scan stopped by fn: %v after %d", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.ScanAll(ctx, func([16]byte, uint64, []byte) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("ScanAll with cancelled ctx = %v", err)
	}
	if _, err := l.Meta(context.Background(), sid(99)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Meta of unknown session = %v", err)
	}
	if last, err := l.LastSeq(context.Background(), sid(99)); err != nil || last != 0 {
		t.Fatalf("LastSeq of unknown session = %d, %v", last, err)
	}
}

// TestLargeRequests: a request of exactly MaxBatchBytes in tiny records
// commits (badger's own transaction limits are never reached), one byte
// more is ErrTooLarge, and an in-memory value over badger's limit is
// refused before it reaches the committer.
func TestLargeRequests(t *testing.T) {
	l := openMem(t)
	s := sid(1)
	budget := DefaultMaxBatchBytes - entrySize(metaKeyLen, len(metaData(s))) - headEntrySize
	n := budget / entrySize(recordKeyLen, 1)
	w := mkWrite(s, 1, n)
	for i := range w.Records {
		w.Records[i].Data = []byte{byte(i)}
	}
	w.Records[n-1].Data = make([]byte, 2+budget-n*entrySize(recordKeyLen, 1))
	if err := l.Append(context.Background(), w); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Append of cap+1 bytes = %v", err)
	}
	w.Records[n-1].Data = w.Records[n-1].Data[1:]
	mustAppend(t, l, w)
	if last, err := l.LastSeq(context.Background(), s); err != nil || last != uint64(n) {
		t.Fatalf("LastSeq = %d, %v; want %d", last, err, n)
	}
	limit := inMemoryMaxValue - 1 - frameHeaderLen
	big := Write{Session: s, Records: []Record{{Seq: uint64(n + 1), Data: make([]byte, limit+1)}}}
	if err := l.Append(context.Background(), big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Append of an in-memory value over the limit = %v", err)
	}
	big.Records[0].Data = big.Records[0].Data[:limit]
	mustAppend(t, l, big)
}

// TestValueLogRecord stores a record above badger's value threshold, which
// goes to badger's value log on disk, and reads it back.
func TestValueLogRecord(t *testing.T) {
	l, err := Open(Options{Dir: t.TempDir(), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	s := sid(1)
	data := bytes.Repeat([]byte("0123456789abcdef"), 3<<15) // 1.5 MiB
	mustAppend(t, l, Write{Session: s, Meta: []byte("m"), Records: []Record{{Seq: 1, Data: data}}})
	err = l.Scan(context.Background(), s, 1, func(seq uint64, got []byte) error {
		if !bytes.Equal(got, data) {
			return fmt.Errorf("seq %d: %d bytes differ", seq, len(got))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestStats(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  func(t *testing.T) Options
		syncs bool // each commit is synced and counted
	}{
		{"in memory", func(*testing.T) Options { return Options{InMemory: true} }, false},
		{"on disk", func(t *testing.T) Options { return Options{Dir: t.TempDir()} }, true},
		{"on disk, no sync", func(t *testing.T) Options { return Options{Dir: t.TempDir(), NoSync: true} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Open(tc.opts(t))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			ctx := context.Background()
			var s [16]byte
			s[0] = 7
			if err := l.Append(ctx, Write{Session: s, Meta: []byte("m"), Records: []Record{{Seq: 1, Data: []byte("a")}, {Seq: 2, Data: []byte("b")}}}); err != nil {
				t.Fatal(err)
			}
			if err := l.Append(ctx, Write{Session: s, Records: []Record{{Seq: 9, Data: []byte("gap")}}}); err == nil {
				t.Fatal("a gap was accepted")
			}
			st := l.Stats()
			if st.Commits != 1 || st.Requests != 1 || st.Records != 2 {
				t.Fatalf("stats %+v", st)
			}
			// The commit's sync, and perhaps an acknowledgement marker's
			// after a pause of ackDelay.
			if synced := st.Syncs >= 1 && st.Syncs <= 2 && st.Syncing > 0; synced != tc.syncs || !tc.syncs && (st.Syncs != 0 || st.Syncing != 0) {
				t.Fatalf("stats %+v: want syncs counted: %v", st, tc.syncs)
			}
		})
	}
}

func TestMetasMatchesSessions(t *testing.T) {
	l, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	for i := byte(1); i <= 3; i++ {
		s := [16]byte{i}
		if err := l.Append(ctx, Write{Session: s, Meta: []byte{'m', i}, Records: []Record{{Seq: 1, Data: []byte("x")}}}); err != nil {
			t.Fatal(err)
		}
	}
	var a, b []string
	l.Sessions(ctx, func(s [16]byte, meta []byte, last uint64) error {
		a = append(a, fmt.Sprintf("%x:%s", s[0], meta))
		return nil
	})
	l.Metas(ctx, func(s [16]byte, meta []byte) error {
		b = append(b, fmt.Sprintf("%x:%s", s[0], meta))
		return nil
	})
	if fmt.Sprint(a) != fmt.Sprint(b) || len(b) != 3 {
		t.Fatalf("Sessions %v, Metas %v", a, b)
	}
}

// TestScanBack: a session's records newest first, from a seq or its end,
// stopping where the caller stops; other sessions' records are not read.
func TestScanBack(t *testing.T) {
	l := openMem(t)
	a, b := sid(1), sid(2)
	mustAppend(t, l, mkWrite(a, 1, 5), mkWrite(b, 1, 3))
	mustAppend(t, l, mkWrite(a, 6, 2))
	read := func(s [16]byte, to uint64, stopAt int) []uint64 {
		t.Helper()
		var got []uint64
		err := l.ScanBack(context.Background(), s, to, func(seq uint64, data []byte) error {
			if !bytes.Equal(data, recData(s, seq)) {
				t.Fatalf("seq %d: data %q", seq, data)
			}
			if got = append(got, seq); len(got) == stopAt {
				return errStopTest
			}
			return nil
		})
		if err != nil && err != errStopTest {
			t.Fatal(err)
		}
		return got
	}
	for _, tc := range []struct {
		s      [16]byte
		to     uint64
		stopAt int
		want   string
	}{
		{a, 0, 0, "[7 6 5 4 3 2 1]"},
		{a, 4, 0, "[4 3 2 1]"},
		{a, 100, 2, "[7 6]"},
		{b, 0, 0, "[3 2 1]"},
		{sid(3), 0, 0, "[]"},
	} {
		if got := fmt.Sprint(read(tc.s, tc.to, tc.stopAt)); got != tc.want {
			t.Errorf("ScanBack(%x, %d): %s, want %s", tc.s[:2], tc.to, got, tc.want)
		}
	}
}

var errStopTest = errors.New("stop")
