package hub_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// TestPartitionLoadUnload: a partitioned hub starts empty and answers
// NOT_OWNER (through its route) for what it does not hold; LoadSessions
// takes over what another hub wrote (its timers re-armed from the log, a
// firing already written not repeated) and ends the subscriptions of the
// agents concerned; UnloadSessions drops the sessions at once, ends their
// streams and stops their timers.
func TestPartitionLoadUnload(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	open := func(ttl time.Duration) session.ID {
		t.Helper()
		o, err := e.hub.Open(ctx, "alice", &hubpb.OpenRequest{Type: "conversation@1", Ttl: durationpb.New(ttl),
			Participants: []*hubpb.Participant{{Name: "bob", AutoAccept: true}}})
		if err != nil {
			t.Fatal(err)
		}
		return session.MustParseID(o.GetSession().GetMeta().GetSessionId())
	}
	early, late := open(time.Minute), open(time.Hour)
	if _, err := e.hub.Send(ctx, "alice", late, textEnv("hello")); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute + time.Second) // early expires on the first hub
	if st := stateOf(t, e.hub, early); st != "EXPIRED" {
		t.Fatalf("the first hub left the early session %s, want EXPIRED", st)
	}
	e.hub.Close()

	notOwner := &hub.NotOwnerError{Partition: 3, Node: "n2", Addr: "10.0.0.2:7420"}
	cfg := e.cfg
	cfg.Log, cfg.Partitioned = e.log, true
	cfg.Route = func(context.Context, session.ID) error { return notOwner }
	b, err := openServed(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = b.Get(ctx, "alice", false, late)
	var ne *hub.NotOwnerError
	if !errors.As(err, &ne) || ne.Addr != "10.0.0.2:7420" {
		t.Fatalf("Get before loading: %v, want NOT_OWNER naming 10.0.0.2:7420", err)
	}
	if r, _ := session.ReasonOf(err); r != hubpb.Reason_NOT_OWNER {
		t.Fatalf("Get before loading: reason %v, want NOT_OWNER", r)
	}
	sub, err := b.Subscribe(ctx, "bob", feed.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}

	n, err := b.LoadSessions(ctx, func(meta func([16]byte, []byte) error, record func([16]byte, uint64, []byte) error, _ func([16]byte, error)) error {
		if err := e.wal.Metas(ctx, meta); err != nil {
			return err
		}
		var first, last [16]byte
		for i := range last {
			last[i] = 0xff
		}
		return e.wal.ScanRange(ctx, first, last, record)
	})
	if err != nil || n != 2 {
		t.Fatalf("LoadSessions = %d, %v; want 2 sessions", n, err)
	}
	bounded, cancel := context.WithTimeout(ctx, 10*time.Second) // a failure, not a hang
	defer cancel()
	if _, err := sub.Next(bounded); !errors.Is(err, hub.ErrNotOwner) {
		t.Fatalf("bob's subscription after the load: %v, want NOT_OWNER (resubscribe)", err)
	}
	resp, err := b.Send(ctx, "bob", late, textEnv("hi"))
	if err != nil || resp.GetSeq() != 4 { // invite, open, hello, hi
		t.Fatalf("send on the loaded session: %v, seq %d; want seq 4", err, resp.GetSeq())
	}
	// The expiry the first hub wrote is folded, not fired again.
	e.clock.Advance(time.Second)
	if lg := readAll(t, b, early); len(lg) != 3 {
		t.Fatalf("the expired session has %d envelopes after the load, want 3 (invite, open, expired)", len(lg))
	}

	w, err := b.Watch(ctx, "alice", false, late, feed.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	moved := &hub.NotOwnerError{Partition: 3, Why: "partition 3 moved"}
	if n := b.UnloadSessions(func(session.ID) bool { return true }, moved); n != 2 {
		t.Fatalf("UnloadSessions dropped %d sessions, want 2", n)
	}
	if _, err := b.Get(ctx, "alice", false, late); !errors.Is(err, hub.ErrNotOwner) {
		t.Fatalf("Get after unloading: %v, want NOT_OWNER", err)
	}
	for {
		_, err := w.Next(bounded)
		if err == nil {
			continue // the catch-up
		}
		if !errors.Is(err, hub.ErrNotOwner) {
			t.Fatalf("the watch after unloading: %v, want NOT_OWNER", err)
		}
		break
	}
	// Its TTL falls due: the unloaded session's timer does not run here.
	e.clock.Advance(2 * time.Hour)
	var tail uint64
	if err := e.wal.Scan(ctx, late, 1, func(seq uint64, _ []byte) error { tail = seq; return nil }); err != nil || tail != 4 {
		t.Fatalf("the unloaded session's log ends at seq %d (%v), want 4: a timer ran after the unload", tail, err)
	}
}

func stateOf(t *testing.T, h *served, id session.ID) string {
	t.Helper()
	info, err := h.Get(context.Background(), "alice", false, id)
	if err != nil {
		t.Fatal(err)
	}
	return info.GetState()
}

func readAll(t *testing.T, h *served, id session.ID) []*hubpb.Envelope {
	t.Helper()
	lg, _, err := h.ReadLog(context.Background(), "alice", false, id, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	return lg
}

// TestPartitionLoadQuarantines: a partition's load in which one session's
// record does not decode, another's messages the loader found damaged,
// and a third was reported damaged before any metadata of it was read
// quarantines those three and serves the rest; once the partition is
// unloaded, the three are the new owner's to answer for (NOT_OWNER).
func TestPartitionLoadQuarantines(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	var ids []session.ID
	for range 3 {
		o, err := e.hub.Open(ctx, "alice", &hubpb.OpenRequest{Type: "conversation@1",
			Participants: []*hubpb.Participant{{Name: "bob", AutoAccept: true}}})
		if err != nil {
			t.Fatal(err)
		}
		id := session.MustParseID(o.GetSession().GetMeta().GetSessionId())
		if _, err := e.hub.Send(ctx, "alice", id, textEnv("hello")); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	e.hub.Close()
	undecodable, damaged, healthy := ids[0], ids[1], ids[2]
	ghost := session.ID{0xff}

	cfg := e.cfg
	cfg.Log, cfg.Partitioned = e.log, true
	cfg.Route = func(context.Context, session.ID) error {
		return &hub.NotOwnerError{Partition: 3, Node: "n2", Addr: "10.0.0.2:7420"}
	}
	b, err := openServed(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	n, err := b.LoadSessions(ctx, func(meta func([16]byte, []byte) error, record func([16]byte, uint64, []byte) error, broken func([16]byte, error)) error {
		broken(ghost, errors.New("a record before any metadata"))
		if err := e.wal.Metas(ctx, meta); err != nil {
			return err
		}
		var first, last [16]byte
		for i := range last {
			last[i] = 0xff
		}
		return e.wal.ScanRange(ctx, first, last, func(id [16]byte, seq uint64, data []byte) error {
			switch {
			case session.ID(id) == undecodable && seq == 3:
				data = []byte("garbage")
			case session.ID(id) == damaged && seq == 3:
				broken(id, errors.New("checksum mismatch"))
				return nil
			}
			return record(id, seq, data)
		})
	})
	if err != nil || n != 1 {
		t.Fatalf("LoadSessions = %d, %v; want 1 session served", n, err)
	}
	if resp, err := b.Send(ctx, "bob", healthy, textEnv("hi")); err != nil || resp.GetSeq() != 4 {
		t.Fatalf("send on the healthy session: seq %d, %v; want 4", resp.GetSeq(), err)
	}
	for _, id := range []session.ID{undecodable, damaged, ghost} {
		if _, err := b.Get(ctx, "alice", true, id); !errors.Is(err, hub.ErrQuarantined) {
			t.Fatalf("Get(%v) after the load: %v, want QUARANTINED", id, err)
		}
	}
	if q := b.Quarantined(); len(q) != 3 {
		t.Fatalf("%d sessions quarantined, want 3: %v", len(q), q)
	}
	b.UnloadSessions(func(session.ID) bool { return true }, nil)
	for _, id := range []session.ID{undecodable, damaged, ghost} {
		if _, err := b.Get(ctx, "alice", true, id); !errors.Is(err, hub.ErrNotOwner) {
			t.Fatalf("Get(%v) after the unload: %v, want NOT_OWNER", id, err)
		}
	}
}
