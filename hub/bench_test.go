package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
	"github.com/hubd/hubd/wal"
)

func openWAL(b *testing.B, dir string, sync bool) *wal.Log {
	b.Helper()
	l, err := wal.Open(wal.Options{Dir: dir, NoSync: !sync})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// workflowReq opens a round-robin workflow of names (names[0] opens it;
// the others auto-accept) with one turn_within timer, capped far above
// what a benchmark sends (the default cap, workflow.DefaultMaxTurns, would
// close a session of a long run under it).
func workflowReq(names []string) *hubpb.OpenRequest {
	raw, _ := json.Marshal(transition.RoundRobin(names, 1<<30))
	graph := &structpb.Struct{}
	if err := hubpb.UnmarshalJSON(raw, graph); err != nil {
		panic(err)
	}
	req := &hubpb.OpenRequest{Type: "workflow@1", Graph: graph,
		Expectations: &hubpb.Expectations{Items: []*hubpb.Expectation{session.Expect(session.TurnWithin, time.Hour, session.ActionWarn)}}}
	for _, n := range names[1:] {
		req.Participants = append(req.Participants, &hubpb.Participant{Name: n, AutoAccept: true})
	}
	return req
}

// BenchmarkAccept measures the hub's send path in process (validate →
// append → fold → ack) on workflow sessions over a durable (fsynced) WAL,
// one goroutine per session, each sending as the expected speaker.
// cpu-ns/op is the whole process's CPU time per envelope (the log's
// goroutines and fsyncs included), steadier than ns/op on a shared machine.
func BenchmarkAccept(b *testing.B) {
	for _, sessions := range []int{1, 16, 128} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			l := openWAL(b, b.TempDir(), true)
			defer l.Close()
			h, err := openServed(context.Background(), hub.Config{Log: server.WALLog(l), Adapters: server.Adapters(nil)})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			ctx := context.Background()
			ids := make([]session.ID, sessions)
			for i := range ids {
				o, err := h.Open(ctx, "a", workflowReq([]string{"a", "b"}))
				if err != nil {
					b.Fatal(err)
				}
				ids[i] = session.MustParseID(o.GetSession().GetMeta().GetSessionId())
			}
			per := b.N/sessions + 1
			text := string(make([]byte, 200))
			b.ReportAllocs()
			b.ResetTimer()
			start, cpu := time.Now(), processCPU()
			var wg sync.WaitGroup
			for i := range sessions {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := range per {
						if _, err := h.Send(ctx, []string{"a", "b"}[n%2], ids[i], textEnv(text)); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(per*sessions)/time.Since(start).Seconds(), "envelopes/s")
			b.ReportMetric(float64(processCPU()-cpu)/float64(per*sessions), "cpu-ns/op")
		})
	}
}

// BenchmarkHydrate measures rebuilding a hub from a log of 1M envelopes
// over 10k workflow sessions (100 each): re-fold rate and time to serve.
// In the same run it times a raw scan of the same log (the WAL's ScanAll,
// counting records, decoding nothing) and reports hydrate's rate as a
// fraction of the raw scan's (hydrate/raw; the target is at least 0.5).
// Building the log takes a while; run it with -benchtime=1x.
func BenchmarkHydrate(b *testing.B) {
	const sessions, perSession = 10_000, 100
	const records = sessions * (perSession + 2) // invite, opened, turns
	dir := b.TempDir()
	l := openWAL(b, dir, false)
	buildLog(b, l, sessions, perSession)
	// The log was written without the hub's index: a first start writes
	// it; the ones measured read it, as every start after that does.
	h, err := openServed(context.Background(), hub.Config{Log: server.WALLog(l), Adapters: server.Adapters(nil)})
	if err != nil {
		b.Fatal(err)
	}
	h.Close()
	l.Close()
	b.ResetTimer()
	for range b.N {
		raw := rawScan(b, dir, records)
		l := openWAL(b, dir, false)
		start := time.Now()
		h, err := openServed(context.Background(), hub.Config{Log: server.WALLog(l), Adapters: server.Adapters(nil)})
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		b.ReportMetric(float64(records)/took.Seconds(), "envelopes/s")
		b.ReportMetric(float64(records)/raw.Seconds(), "raw-records/s")
		b.ReportMetric(raw.Seconds()/took.Seconds(), "hydrate/raw")
		b.ReportMetric(took.Seconds(), "s-to-serve")
		if q := h.Quarantined(); len(q) > 0 {
			for id, err := range q {
				b.Fatalf("%d quarantined, e.g. %v: %v", len(q), id, err)
			}
		}
		h.Close()
		l.Close()
	}
}

// rawScan opens the log in dir and times one ScanAll over it that only
// counts the records; there must be want of them.
func rawScan(b *testing.B, dir string, want int) time.Duration {
	b.Helper()
	l := openWAL(b, dir, false)
	defer l.Close()
	n := 0
	start := time.Now()
	err := l.ScanAll(context.Background(), func([16]byte, uint64, []byte) error {
		n++
		return nil
	})
	took := time.Since(start)
	if err != nil || n != want {
		b.Fatalf("raw scan: %d records of %d: %v", n, want, err)
	}
	return took
}

// buildLog writes sessions × perSession text turns (plus invite and open)
// straight to the log, folding each session with its machine so the log is
// exactly what a hub would have written.
func buildLog(b *testing.B, l *wal.Log, sessions, perSession int) {
	b.Helper()
	reg := server.Adapters(nil)
	req := workflowReq([]string{"a", "b", "c"})
	a, _ := reg.Lookup(session.Type{Kind: "workflow", Version: 1})
	newID := ids()
	at := session.Stamp(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	batch := make([]hub.LogWrite, 0, 50)
	log := server.WALLog(l)
	for i := range sessions {
		id := session.ID(newID())
		meta := &hubpb.SessionMeta{SessionId: id.String(), Type: req.GetType(), Creator: "a",
			Knobs:        map[string]*structpb.Value{"graph": structpb.NewStructValue(req.GetGraph())},
			Expectations: req.GetExpectations().GetItems(), CreatedAt: at, InviteTimeout: durationpb.New(5 * time.Minute),
			Participants: append([]*hubpb.Participant{{Name: "a", Role: "creator"}}, req.GetParticipants()...)}
		m, err := adapters.NewMachine(a, meta)
		if err != nil {
			b.Fatal(err)
		}
		metaBytes, err := session.MarshalMeta(meta)
		if err != nil {
			b.Fatal(err)
		}
		w := hub.LogWrite{Session: id, Meta: metaBytes}
		add := func(e *hubpb.Envelope) {
			e.SessionId, e.Seq, e.AcceptedAt, e.Id = meta.GetSessionId(), m.Seq+1, at, uuid.UUID(newID()).String()
			all, _ := m.Apply(e)
			for _, x := range all {
				if x != e {
					x.Id = uuid.UUID(newID()).String()
				}
				data, err := session.MarshalEnvelope(x)
				if err != nil {
					b.Fatal(err)
				}
				w.Records = append(w.Records, hub.LogRecord{Seq: x.GetSeq(), Data: data})
			}
		}
		add(&hubpb.Envelope{Type: session.EventInvite, Payload: &hubpb.Envelope_Invite{Invite: &hubpb.Invite{Invitees: session.Invitees(meta)}}})
		for range perSession {
			e := textEnv("a turn of about sixty bytes of text, as agents write them")
			e.From = m.Expected()[0]
			add(e)
		}
		batch = append(batch, w)
		if len(batch) == cap(batch) || i == sessions-1 {
			if err := log.Append(context.Background(), batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// discardLog is a log that keeps nothing, to measure the hub's own memory
// apart from the store's.
type discardLog struct{}

func (discardLog) Append(context.Context, ...hub.LogWrite) error { return nil }
func (discardLog) Scan(context.Context, [16]byte, uint64, func(uint64, []byte) error) error {
	return nil
}
func (discardLog) Metas(context.Context, func([16]byte, []byte) error) error { return nil }
func (discardLog) ScanRange(context.Context, [16]byte, [16]byte, func([16]byte, uint64, []byte) error) error {
	return nil
}
func (discardLog) Meta(context.Context, [16]byte) ([]byte, error) { return nil, nil }
func (discardLog) MetasFrom(context.Context, [16]byte, func([16]byte, []byte) error) error {
	return nil
}
func (discardLog) IndexGet(context.Context, []byte) ([]byte, bool, error) { return nil, false, nil }
func (discardLog) IndexScan(context.Context, []byte, []byte, func([]byte, []byte) error) error {
	return nil
}
func (discardLog) PutIndex(context.Context, []hub.IndexEntry) error { return nil }

// BenchmarkIdleSessions opens 100k workflow sessions with armed timers and
// reports the hub's heap and goroutines per idle session. The log discards
// what it is given so the numbers are the hub's alone.
func BenchmarkIdleSessions(b *testing.B) {
	const n = 100_000
	for range b.N {
		// One agent opens them all: its limit is off.
		h, err := openServed(context.Background(), hub.Config{Log: discardLog{}, Adapters: server.Adapters(nil), MaxOpenPerAgent: -1})
		if err != nil {
			b.Fatal(err)
		}
		req := workflowReq([]string{"a", "b", "c"})
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		for range n {
			if _, err := h.Open(context.Background(), "a", req); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-B/session")
		b.ReportMetric(float64(runtime.NumGoroutine()-g0)/n, "goroutines/session")
		h.Close()
	}
}
