package metrics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal"
)

// fakeHub lists sessions.
type fakeHub struct {
	infos []*hubpb.SessionInfo
}

func (f *fakeHub) Quarantined() map[session.ID]error {
	return map[session.ID]error{{1}: errors.New("bad")}
}

func (f *fakeHub) List(_ context.Context, _ string, _ bool, flt feed.Filter) ([]*hubpb.SessionInfo, session.ID, error) {
	var out []*hubpb.SessionInfo
	for _, info := range f.infos {
		if id := session.MustParseID(info.GetMeta().GetSessionId()); compare(id, flt.After) > 0 {
			out = append(out, info)
		}
		if len(out) == 1 { // one per page: exercise the paging
			return out, session.MustParseID(out[0].GetMeta().GetSessionId()), nil
		}
	}
	return out, session.ID{}, nil
}

func compare(a, b session.ID) int { return strings.Compare(string(a[:]), string(b[:])) }

// countingHub is a fakeHub with CountSessions and TypeOf, the faster path
// a hub may offer.
type countingHub struct{ fakeHub }

func (c *countingHub) CountSessions(f func(typ string, state session.State, n int)) {
	f("workflow@1", session.StateOpen, 7)
}

func (c *countingHub) TypeOf(session.ID) (string, bool) { return "workflow@1", true }

func info(n byte, typ, state string) *hubpb.SessionInfo {
	id := session.ID{15: n}
	return &hubpb.SessionInfo{Meta: &hubpb.SessionMeta{SessionId: id.String(), Type: typ}, State: state}
}

func TestCensusByListing(t *testing.T) {
	m := New(func() wal.Stats {
		return wal.Stats{Commits: 3, Requests: 6, Records: 9, Syncs: 4, Syncing: 2 * time.Second}
	})
	m.Attach(&fakeHub{infos: []*hubpb.SessionInfo{info(1, "conversation@1", "OPEN"), info(2, "conversation@1", "CLOSED"), info(3, "workflow@1", "OPEN")}})
	want := `
# HELP hubd_sessions Live sessions the hub holds in memory (pending and open; ended ones are read from the log on demand), by session type and state.
# TYPE hubd_sessions gauge
hubd_sessions{session_type="conversation@1",state="CLOSED"} 1
hubd_sessions{session_type="conversation@1",state="EXPIRED"} 0
hubd_sessions{session_type="conversation@1",state="OPEN"} 1
hubd_sessions{session_type="conversation@1",state="PENDING"} 0
hubd_sessions{session_type="workflow@1",state="CLOSED"} 0
hubd_sessions{session_type="workflow@1",state="EXPIRED"} 0
hubd_sessions{session_type="workflow@1",state="OPEN"} 1
hubd_sessions{session_type="workflow@1",state="PENDING"} 0
# HELP hubd_sessions_quarantined Sessions hydrate could not rebuild from the log.
# TYPE hubd_sessions_quarantined gauge
hubd_sessions_quarantined 1
# HELP hubd_wal_commits_total Log transactions committed, each with one fsync (group commit).
# TYPE hubd_wal_commits_total counter
hubd_wal_commits_total 3
# HELP hubd_wal_sync_seconds_total Time spent in the journal's syncs; divided by hubd_wal_syncs_total, what the disk takes to make a commit durable.
# TYPE hubd_wal_sync_seconds_total counter
hubd_wal_sync_seconds_total 2
# HELP hubd_wal_syncs_total Syncs (fdatasync) of the log's journal: one per commit, its commit point, and a few for markers and new segments.
# TYPE hubd_wal_syncs_total counter
hubd_wal_syncs_total 4
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "hubd_sessions", "hubd_sessions_quarantined", "hubd_wal_commits_total", "hubd_wal_sync_seconds_total", "hubd_wal_syncs_total"); err != nil {
		t.Error(err)
	}
	if got := m.typeOf(session.ID{15: 3}); got != "workflow@1" {
		t.Errorf("a listed session's type: %q", got)
	}
}

func TestCensusByHub(t *testing.T) {
	m := New(nil)
	m.Attach(&countingHub{})
	want := `
# HELP hubd_sessions Live sessions the hub holds in memory (pending and open; ended ones are read from the log on demand), by session type and state.
# TYPE hubd_sessions gauge
hubd_sessions{session_type="workflow@1",state="CLOSED"} 0
hubd_sessions{session_type="workflow@1",state="EXPIRED"} 0
hubd_sessions{session_type="workflow@1",state="OPEN"} 7
hubd_sessions{session_type="workflow@1",state="PENDING"} 0
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "hubd_sessions"); err != nil {
		t.Error(err)
	}
	h := m.Hooks(hub.Hooks{})
	h.Accepted(&hubpb.Envelope{SessionId: session.ID{15: 9}.String(), From: "a"})
	if got := testutil.ToFloat64(m.sendsAccepted.WithLabelValues("workflow@1")); got != 1 {
		t.Errorf("sends of a session the hub types: %v", got)
	}
}

// TestHooks: the hooks count with bounded labels and still call the next
// hooks.
func TestHooks(t *testing.T) {
	m := New(nil)
	m.Attach(&fakeHub{})
	var calls []string
	h := m.Hooks(hub.Hooks{
		Accepted: func(*hubpb.Envelope) { calls = append(calls, "accepted") },
		Rejected: func(session.ID, string, string, error) { calls = append(calls, "rejected") },
		Opened:   func(*hubpb.SessionMeta) { calls = append(calls, "opened") },
		Closed:   func(session.ID, session.State, string) { calls = append(calls, "closed") },
		TimerFired: func(session.ID, *hubpb.Envelope) {
			calls = append(calls, "timer")
		},
		SessionFailed: func(session.ID, error) { calls = append(calls, "failed") },
	})
	id := session.ID{15: 5}
	// The first envelopes come before the Opened hook: they wait for the type.
	h.Accepted(&hubpb.Envelope{SessionId: id.String(), Seq: 1, Type: session.EventInvite})
	h.Opened(&hubpb.SessionMeta{SessionId: id.String(), Type: "discussion@1"})
	h.Accepted(&hubpb.Envelope{SessionId: id.String(), Seq: 2, From: "a", Type: "text"})
	h.Rejected(id, "b", "text", fmt.Errorf("not yours: %w", session.ErrNotParticipant))
	h.Rejected(id, "b", "text", errors.New("a bug"))
	h.TimerFired(id, &hubpb.Envelope{Payload: &hubpb.Envelope_Violation{Violation: &hubpb.Violation{Action: "notify"}}})
	h.TimerFired(id, &hubpb.Envelope{Payload: &hubpb.Envelope_Ended{Ended: &hubpb.Ended{Reason: session.ReasonTTLExpired}}})
	h.TimerFired(id, &hubpb.Envelope{Payload: &hubpb.Envelope_Ended{Ended: &hubpb.Ended{Reason: "expectation_violated:turn_within"}}})
	h.Closed(id, session.StateExpired, session.ReasonTTLExpired)
	h.SessionFailed(id, errors.New("disk"))
	for i, tc := range []struct{ got, want float64 }{
		{testutil.ToFloat64(m.envelopes.WithLabelValues("discussion@1")), 2},
		{testutil.ToFloat64(m.sendsAccepted.WithLabelValues("discussion@1")), 1},
		{testutil.ToFloat64(m.sendsRejected.WithLabelValues("discussion@1", "NOT_PARTICIPANT")), 1},
		{testutil.ToFloat64(m.sendsRejected.WithLabelValues("discussion@1", "INTERNAL")), 1},
		{testutil.ToFloat64(m.opened.WithLabelValues("discussion@1")), 1},
		{testutil.ToFloat64(m.ended.WithLabelValues("discussion@1", "EXPIRED")), 1},
		{testutil.ToFloat64(m.timers.WithLabelValues("notify")), 1},
		{testutil.ToFloat64(m.timers.WithLabelValues("ttl_expired")), 1},
		{testutil.ToFloat64(m.failures), 1},
	} {
		if tc.got != tc.want {
			t.Errorf("counter %d: got %v, want %v", i, tc.got, tc.want)
		}
	}
	if n := testutil.CollectAndCount(m.timers); n != 2 {
		t.Errorf("%d timer series: an auto_close's end counted again?", n)
	}
	if strings.Join(calls, " ") != "accepted opened accepted rejected rejected timer timer timer closed failed" {
		t.Errorf("next hooks called: %v", calls)
	}
}

// TestWaitingBound: envelopes of sessions whose type never comes are
// counted as unknown past the bound.
func TestWaitingBound(t *testing.T) {
	m := New(nil)
	h := m.Hooks(hub.Hooks{})
	for i := range maxWaiting + 1 {
		id := session.ID{14: byte(i >> 8), 15: byte(i)}
		h.Accepted(&hubpb.Envelope{SessionId: id.String(), Seq: 1})
	}
	if got := testutil.ToFloat64(m.envelopes.WithLabelValues(unknownType)); got != 1 {
		t.Errorf("unknown %v, want 1", got)
	}
}

// TestStreams: open streams are a gauge; a cut-off is counted by kind.
func TestStreams(t *testing.T) {
	m := New(nil)
	a, b := m.Stream("events"), m.Stream("events")
	if got := testutil.ToFloat64(m.subscribers.WithLabelValues("events")); got != 2 {
		t.Errorf("open %v", got)
	}
	a(nil)
	b(fmt.Errorf("full: %w", hub.ErrSlowSubscriber))
	if got := testutil.ToFloat64(m.subscribers.WithLabelValues("events")); got != 0 {
		t.Errorf("open after the ends %v", got)
	}
	if got := testutil.ToFloat64(m.cutoffs.WithLabelValues("events")); got != 1 {
		t.Errorf("cut-offs %v", got)
	}
}
