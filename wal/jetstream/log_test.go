package jetstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func TestAppendScan(t *testing.T) {
	_, l := single(t)
	a, b := id(1), id(2)
	mustAppend(t, l, open(a, 1))
	mustAppend(t, l, more(a, 2, 2))
	mustAppend(t, l, open(b, 3))
	wantDense(t, l, a, 3)
	wantDense(t, l, b, 3)
	for from, want := range map[uint64][]string{
		0: {"1:r-1", "2:r-2", "3:r-3"},
		2: {"2:r-2", "3:r-3"},
		3: {"3:r-3"},
		4: nil,
	} {
		if got := scanAll(t, l, a, from); !slices.Equal(got, want) {
			t.Errorf("Scan from %d = %v, want %v", from, got, want)
		}
	}
	fresh := openLog(t, l.nc, Options{})
	if k, found, err := fresh.Locate(context.Background(), a); err != nil || !found || k != l.PartitionOf(a) {
		t.Errorf("Locate = %d, %v, %v; want %d", k, found, err, l.PartitionOf(a))
	}
	if _, found, err := fresh.Locate(context.Background(), id(9)); err != nil || found {
		t.Errorf("Locate of an unknown session = %v, %v", found, err)
	}
	if got := scanAll(t, l, id(9), 1); got != nil {
		t.Errorf("Scan of an unknown session = %v", got)
	}
	errStop := errors.New("stop")
	n := 0
	err := l.Scan(context.Background(), a, 1, func(uint64, []byte) error { n++; return errStop })
	if err != errStop || n != 1 {
		t.Errorf("Scan stopped by fn = %v after %d calls, want errStop after 1", err, n)
	}
}

func TestMetasAndScanRange(t *testing.T) {
	_, l := single(t)
	ids := [][16]byte{id(5), id(1), id(9), id(3)}
	for i, s := range ids {
		mustAppend(t, l, open(s, uint64(i+1)))
	}
	var metas []string
	err := l.Metas(context.Background(), func(s [16]byte, meta []byte) error {
		root, err := testRoot(s, meta)
		if err != nil || root != s {
			t.Errorf("metadata of %x = %q", s[0], meta)
		}
		metas = append(metas, fmt.Sprint(s[0]))
		return nil
	})
	if err != nil || strings.Join(metas, ",") != "1,3,5,9" {
		t.Fatalf("Metas = %v, %v; want 1,3,5,9 in id order", metas, err)
	}
	var got []string
	err = l.ScanRange(context.Background(), id(2), id(5), func(s [16]byte, seq uint64, data []byte) error {
		got = append(got, fmt.Sprintf("%d/%d:%s", s[0], seq, data))
		return nil
	})
	want := []string{"3/1:r-1", "3/2:r-2", "3/3:r-3", "3/4:r-4", "5/1:r-1"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("ScanRange = %v, %v; want %v", got, err, want)
	}
}

func TestAppendRefusals(t *testing.T) {
	_, l := single(t)
	ctx := context.Background()
	a := id(1)
	mustAppend(t, l, open(a, 2))
	big := make([]byte, l.MaxRecordBytes()+1)
	other := idIn(t, 7, (l.PartitionOf(a)+1)%l.Partitions(), l.Partitions())
	for _, tc := range []struct {
		name string
		ws   []Write
		want error
	}{
		{"gap", []Write{more(a, 4, 1)}, ErrGap},
		{"rewrite", []Write{more(a, 2, 1)}, ErrGap},
		{"not consecutive", []Write{{Session: a, Records: []Record{{3, nil}, {5, nil}}}}, ErrGap},
		{"no records", []Write{{Session: a}}, ErrInvalid},
		{"seq 0", []Write{{Session: a, Records: []Record{{0, nil}}}}, ErrInvalid},
		{"meta again", []Write{{Session: a, Meta: testMeta(a), Records: recs("r", 3, 1)}}, ErrInvalid},
		{"no meta", []Write{more(id(2), 1, 1)}, ErrNoMeta},
		{"unknown session", []Write{more(id(2), 5, 1)}, ErrGap},
		{"too large", []Write{{Session: a, Records: []Record{{3, big}}}}, ErrTooLarge},
		{"two trees in two partitions", []Write{more(a, 3, 1), open(other, 1)}, ErrInvalid},
		{"bad root", []Write{{Session: id(3), Meta: []byte("x"), Records: recs("r", 1, 1)}}, ErrInvalid},
	} {
		if err := l.Append(ctx, tc.ws...); !errors.Is(err, tc.want) {
			t.Errorf("%s: Append = %v, want %v", tc.name, err, tc.want)
		}
	}
	wantDense(t, l, a, 2)
	if got := scanAll(t, l, other, 1); got != nil {
		t.Errorf("a refused append left %v", got)
	}
	mustAppend(t, l, more(a, 3, 1)) // refusals left the session writable
	wantDense(t, l, a, 3)
}

func TestOwnership(t *testing.T) {
	c := natstestServer(t)
	l := openLog(t, c.Connect(t), Options{})
	a := id(1)
	k := l.PartitionOf(a)
	wantErr(t, l.Append(context.Background(), open(a, 1)), ErrNotOwner)
	l.Own(k)
	mustAppend(t, l, open(a, 1))
	l.Disown(k)
	wantErr(t, l.Append(context.Background(), more(a, 2, 1)), ErrNotOwner)
	wantDense(t, l, a, 1) // reads need no ownership
	l.Own(k)
	mustAppend(t, l, more(a, 2, 1)) // the tail is read again after Disown
	wantDense(t, l, a, 2)
}

// TestFence is the deposed owner: two logs (two nodes) write one session;
// each append carries the stream seq its writer last knew, so the stale
// one is refused, whatever it writes (a record, a timer firing, a close).
func TestFence(t *testing.T) {
	c := natstestServer(t)
	old := openLog(t, c.Connect(t), Options{OwnAll: true})
	neu := openLog(t, c.Connect(t), Options{OwnAll: true})
	ctx := context.Background()
	a := id(1)
	mustAppend(t, old, open(a, 2))
	// The new owner hydrates the partition, then writes.
	if _, err := neu.Hydrate(ctx, neu.PartitionOf(a), Visitor{}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, neu, more(a, 3, 1))
	// The old owner, paused through all that, appends seq 3 from its
	// state: fenced, and nothing of it is written.
	err := old.Append(ctx, Write{Session: a, Records: []Record{{3, []byte("stale close")}}})
	wantErr(t, err, ErrFenced)
	wantDense(t, neu, a, 3)
	// The old owner appended just before the new owner's append: the new
	// owner is fenced, reloads and carries on.
	if err := old.Scan(ctx, a, 1, func(uint64, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, old, more(a, 4, 1))
	wantErr(t, neu.Append(ctx, more(a, 4, 1)), ErrFenced)
	if err := neu.Scan(ctx, a, 4, func(uint64, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, neu, more(a, 5, 1))
	wantDense(t, old, a, 5)
	// A writer that never read the session reads its tail: its seq must
	// follow it (ErrGap otherwise), and the fence still holds.
	third := openLog(t, c.Connect(t), Options{OwnAll: true})
	wantErr(t, third.Append(ctx, more(a, 5, 1)), ErrGap)
	mustAppend(t, third, more(a, 6, 1))
	wantErr(t, neu.Append(ctx, more(a, 6, 1)), ErrFenced)
	wantDense(t, old, a, 6)
	// The first append of a session is fenced too: its metadata can be
	// written once only.
	b := id(2)
	mustAppend(t, old, open(b, 1))
	neu.Disown(neu.PartitionOf(b)) // forget, so the tail is not read
	neu.Own(neu.PartitionOf(b))
	err = neu.Append(ctx, Write{Session: b, Meta: testMeta(b), Records: []Record{{1, []byte("again")}}})
	if !errors.Is(err, ErrGap) && !errors.Is(err, ErrFenced) {
		t.Fatalf("second open = %v, want ErrGap or ErrFenced", err)
	}
	wantDense(t, old, b, 1)
}

// TestDisownedWhileRetried is a deposed owner whose append gets no answer
// (its stream has no leader) while its lease runs out and a new owner
// loads the partition: once disowned it sends the append no more, so
// nothing lands behind the new owner's back. (A retry would land: the
// session's tail is still the one it expects, as the new owner has only
// read it; that owner would then serve a session behind its log.)
func TestDisownedWhileRetried(t *testing.T) {
	c := natstestServer(t)
	old := openLog(t, c.Connect(t), Options{})
	neu := openLog(t, c.Connect(t), Options{})
	ctx := context.Background()
	a := id(1)
	k := old.PartitionOf(a)
	old.Own(k)
	mustAppend(t, old, open(a, 2))
	tries := 0
	old.hooks.unsent = func(attempt int) error {
		tries = attempt
		if attempt > 1 {
			return nil
		}
		// No answer; meanwhile the lease is lost and the partition loaded
		// by its new owner.
		old.Disown(k)
		neu.Own(k)
		if _, err := neu.Hydrate(ctx, k, Visitor{}); err != nil {
			t.Error(err)
		}
		return nats.ErrNoResponders
	}
	wantErr(t, old.Append(ctx, more(a, 3, 1)), ErrNotOwner)
	if tries != 1 {
		t.Errorf("%d attempts sent, want 1 (none after Disown)", tries)
	}
	wantDense(t, neu, a, 2)
	mustAppend(t, neu, more(a, 3, 1)) // the new owner goes on from what it read
	wantDense(t, old, a, 3)

	// The same, the partition lost and taken back by the same log (loaded
	// again) while the append waited to be retried.
	neu.hooks.unsent = func(attempt int) error {
		if attempt > 1 {
			return nil
		}
		neu.Disown(k)
		neu.Own(k)
		if _, err := neu.Hydrate(ctx, k, Visitor{}); err != nil {
			t.Error(err)
		}
		return nats.ErrNoResponders
	}
	wantErr(t, neu.Append(ctx, more(a, 4, 1)), ErrNotOwner)
	neu.hooks.unsent = nil
	wantDense(t, neu, a, 3)
	mustAppend(t, neu, more(a, 4, 1))
	wantDense(t, old, a, 4)

	// An attempt that landed before Disown, its answer lost, is found by
	// the read-back: the append succeeded.
	b := id(2)
	kb := neu.PartitionOf(b)
	neu.Own(kb)
	mustAppend(t, neu, open(b, 1))
	neu.hooks.lostAck = func(attempt int) error {
		if attempt == 1 {
			neu.Disown(kb)
			return nats.ErrTimeout
		}
		return nil
	}
	mustAppend(t, neu, more(b, 2, 1))
	wantDense(t, neu, b, 2)
}

// TestSettle: Settle, after Disown, returns only once the append in
// flight has its outcome (its attempt landed here), and an append after it
// is refused: a lease handed back after Settle is read by the next owner
// with every write this log acknowledged.
func TestSettle(t *testing.T) {
	c := natstestServer(t)
	l := openLog(t, c.Connect(t), Options{})
	ctx := context.Background()
	a := id(3)
	k := l.PartitionOf(a)
	l.Own(k)
	mustAppend(t, l, open(a, 1))
	sending, release := make(chan struct{}), make(chan struct{})
	l.hooks.unsent = func(attempt int) error {
		if attempt == 1 {
			close(sending)
			<-release // the attempt is on its way while the lease goes
		}
		return nil
	}
	appended := make(chan error, 1)
	go func() { appended <- l.Append(ctx, more(a, 2, 1)) }()
	<-sending
	l.Disown(k)
	settled := make(chan struct{})
	go func() {
		l.Settle(k)
		close(settled)
	}()
	select {
	case <-settled:
		t.Error("Settle returned while an append was in flight")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-appended; err != nil {
		t.Fatalf("the append in flight: %v; want it landed", err)
	}
	<-settled
	wantErr(t, l.Append(ctx, more(a, 3, 1)), ErrNotOwner)
	wantDense(t, l, a, 2)
}

// TestLapsed: an append acknowledged once the lease has lapsed by the
// node's clock (Options.Holds) fails with ErrLapsed, though it landed: the
// next owner may have read the stream before it did.
func TestLapsed(t *testing.T) {
	c := natstestServer(t)
	var lapsed atomic.Bool
	l := openLog(t, c.Connect(t), Options{Holds: func(int) bool { return !lapsed.Load() }})
	a := id(4)
	l.Own(l.PartitionOf(a))
	mustAppend(t, l, open(a, 1))
	l.hooks.unsent = func(int) error {
		lapsed.Store(true) // the lease runs out while the append is on its way
		return nil
	}
	wantErr(t, l.Append(context.Background(), more(a, 2, 1)), ErrLapsed)
	wantDense(t, l, a, 2)
}

// TestAtomicTree writes a parent's record and a child's open (metadata and
// first records) in one append, then an append across the two whose fence
// fails on one session: none of it lands.
func TestAtomicTree(t *testing.T) {
	c := natstestServer(t)
	l := openLog(t, c.Connect(t), Options{OwnAll: true})
	other := openLog(t, c.Connect(t), Options{OwnAll: true})
	ctx := context.Background()
	root := id(1)
	child := idIn(t, 2, (l.PartitionOf(root)+1)%l.Partitions(), l.Partitions()) // its own id hashes elsewhere
	mustAppend(t, l, open(root, 1))
	mustAppend(t, l, more(root, 2, 1), openChild(child, root, 2))
	wantDense(t, l, root, 2)
	wantDense(t, l, child, 2)
	if _, err := other.Hydrate(ctx, l.PartitionOf(root), Visitor{}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, other, more(child, 3, 1)) // l's knowledge of child is now stale
	err := l.Append(ctx, more(root, 3, 2), Write{Session: child, Records: []Record{{3, []byte("stale")}}})
	wantErr(t, err, ErrFenced)
	wantDense(t, l, root, 2) // the root's records of that batch are not there
	wantDense(t, l, child, 3)
	// A session twice in one append, and three sessions.
	grand := id(3)
	mustAppend(t, other, more(root, 3, 1), openChild(grand, root, 1), more(root, 4, 1), more(child, 4, 2))
	wantDense(t, l, root, 4)
	wantDense(t, l, grand, 1)
	wantDense(t, l, child, 5)
}

// TestLostAck drops JetStream's acknowledgement of appends that landed: the
// retry (same Nats-Msg-Ids) is refused as a duplicate or by the fence, and
// the log reads back that its own append is there.
func TestLostAck(t *testing.T) {
	_, l := single(t)
	a, b := id(1), id(2)
	lost := 0
	l.hooks.lostAck = func(attempt int) error {
		if attempt == 1 {
			lost++
			return nats.ErrTimeout
		}
		return nil
	}
	mustAppend(t, l, open(a, 1))    // a batch (metadata and record)
	mustAppend(t, l, more(a, 2, 1)) // one message
	mustAppend(t, l, open(b, 3))    // a batch
	mustAppend(t, l, more(b, 4, 2)) // a batch in one session
	mustAppend(t, l, more(a, 3, 1)) // one message again
	l.hooks.lostAck = nil
	mustAppend(t, l, more(a, 4, 1), more(a, 5, 1)) // the tails learned from read-backs are right
	if lost != 5 {
		t.Fatalf("%d acks dropped, want 5", lost)
	}
	wantDense(t, l, a, 5)
	wantDense(t, l, b, 5)
}

func TestConcurrentAppends(t *testing.T) {
	_, l := single(t)
	const sessions, perSession = 16, 20
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := id(byte(i + 1))
			if err := l.Append(context.Background(), open(s, 1)); err != nil {
				errs <- err
				return
			}
			for seq := uint64(2); seq <= perSession; seq++ {
				if err := l.Append(context.Background(), more(s, seq, 1)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range sessions {
		wantDense(t, l, id(byte(i+1)), perSession)
	}
}

// TestSameSessionConcurrently: two appends of the same seq race; the log
// serializes them, so one lands and the other is ErrGap, as with badger.
func TestSameSessionConcurrently(t *testing.T) {
	_, l := single(t)
	a := id(1)
	mustAppend(t, l, open(a, 1))
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- l.Append(context.Background(), more(a, 2, 1)) }()
	}
	e1, e2 := <-errs, <-errs
	if (e1 == nil) == (e2 == nil) || !errors.Is(errors.Join(e1, e2), ErrGap) {
		t.Fatalf("racing appends = %v, %v; want one nil and one ErrGap", e1, e2)
	}
	wantDense(t, l, a, 2)
}

func TestLongSession(t *testing.T) {
	_, l := single(t)
	a := id(1)
	mustAppend(t, l, open(a, 100))
	for seq := uint64(101); seq <= 300; seq += 50 {
		mustAppend(t, l, more(a, seq, 50))
	}
	wantDense(t, l, a, 300) // past smallRead: a consumer
	fresh := openLog(t, l.nc, Options{OwnAll: true})
	for _, from := range []uint64{1, 64, 65, 200, 299, 300} {
		got := scanAll(t, fresh, a, from)
		if uint64(len(got)) != 301-from || got[0] != fmt.Sprintf("%d:r-%d", from, from) {
			t.Fatalf("Scan from %d: %d records from %q", from, len(got), got[0])
		}
	}
}

func TestClose(t *testing.T) {
	_, l := single(t)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, l.Close(), ErrClosed)
	wantErr(t, l.Append(context.Background(), open(id(1), 1)), ErrClosed)
	wantErr(t, l.Scan(context.Background(), id(1), 1, nil), ErrClosed)
}

func TestOpenChecksLayout(t *testing.T) {
	c := natstestServer(t)
	nc := c.Connect(t)
	openLog(t, nc, Options{Partitions: 4})
	_, err := Open(context.Background(), Options{Conn: nc, Partitions: 8, Replicas: 1})
	wantErr(t, err, ErrConfig)
	openLog(t, nc, Options{Partitions: 4, Duplicates: 3 * 60e9}) // settings are updated
	wantErr(t, Options{}.Validate(), ErrInvalid)
}

// TestUnavailable: with the server down an append gives up after
// AppendTimeout, outcome unknown; once the server is back the session is
// written again from its tail as stored.
func TestUnavailable(t *testing.T) {
	c := natstestServer(t)
	l := openLog(t, c.Connect(t), Options{OwnAll: true, AppendTimeout: 500 * time.Millisecond,
		AttemptTimeout: 100 * time.Millisecond, RequestTimeout: 200 * time.Millisecond})
	a := id(1)
	mustAppend(t, l, open(a, 2))
	c.Shutdown(0)
	start := time.Now()
	err := l.Append(context.Background(), more(a, 3, 1))
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Append with the server down = %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Append gave up after %v", d)
	}
	c.Restart(0)
	// The client may have sent the append once reconnected, after Append
	// gave up: the outcome was unknown. The session goes on from its tail
	// as stored.
	var n uint64
	waitFor(t, func() bool {
		n, err = count(l, a)
		return err == nil
	}, 10*time.Second)
	if n != 2 && n != 3 {
		t.Fatalf("%d records after the outage, want 2 or 3", n)
	}
	if err := l.Append(context.Background(), more(a, n+1, 1)); errors.Is(err, ErrFenced) {
		// The client's buffered append landed after the count: the fence
		// refused a second writer of that seq, as it must. Go on from
		// the tail as stored now, as the hub does.
		if n, err = count(l, a); err != nil || n != 3 {
			t.Fatalf("after the fence: %d records, %v; want 3", n, err)
		}
		mustAppend(t, l, more(a, n+1, 1))
	} else if err != nil {
		t.Fatal(err)
	}
	wantDense(t, l, a, n+1)
}
