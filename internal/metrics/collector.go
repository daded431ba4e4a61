package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hubd/hubd/session"
)

// The metrics read at each scrape.
var (
	sessionsDesc = prometheus.NewDesc("hubd_sessions", "Live sessions the hub holds in memory (pending and open; ended ones are read from the log on demand), by session type and state.",
		[]string{"session_type", "state"}, nil)
	quarantinedDesc = prometheus.NewDesc("hubd_sessions_quarantined", "Sessions hydrate could not rebuild from the log.", nil, nil)
	walCommitsDesc  = prometheus.NewDesc("hubd_wal_commits_total", "Log transactions committed, each with one fsync (group commit).", nil, nil)
	walRequestsDesc = prometheus.NewDesc("hubd_wal_committed_appends_total",
		"Appends those transactions held; divided by hubd_wal_commits_total, the mean group-commit batch.", nil, nil)
	walRecordsDesc = prometheus.NewDesc("hubd_wal_committed_records_total", "Records those transactions held.", nil, nil)
	walSyncsDesc   = prometheus.NewDesc("hubd_wal_syncs_total", "Syncs (fdatasync) of the log's journal: one per commit, its commit point, and a few for markers and new segments.", nil, nil)
	walSyncDesc    = prometheus.NewDesc("hubd_wal_sync_seconds_total",
		"Time spent in the journal's syncs; divided by hubd_wal_syncs_total, what the disk takes to make a commit durable.", nil, nil)
	walFailedDesc = prometheus.NewDesc("hubd_wal_storage_failed",
		"1 once the log cannot make a commit durable on its data directory (removed or replaced, read-only, I/O errors, a failed fsync or flush): every write is refused with STORAGE_FAILED until an operator restarts the hub.", nil, nil)
)

// states are the session states the sessions gauge reports for each type.
var states = []session.State{session.StatePending, session.StateOpen, session.StateClosed, session.StateExpired}

// hubCollector reports the gauges read from the hub and the log's totals.
type hubCollector struct{ m *Metrics }

func (c hubCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{sessionsDesc, quarantinedDesc, walCommitsDesc, walRequestsDesc, walRecordsDesc, walSyncsDesc, walSyncDesc, walFailedDesc} {
		ch <- d
	}
}

func (c hubCollector) Collect(ch chan<- prometheus.Metric) {
	if h := c.m.hub.Load(); h != nil {
		for k, n := range census(*h) { //hubd:orderless the registry sorts what it gathers
			ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(n), k.typ, k.state.String())
		}
		ch <- prometheus.MustNewConstMetric(quarantinedDesc, prometheus.GaugeValue, float64(len((*h).Quarantined())))
	}
	if c.m.wal != nil {
		s := c.m.wal()
		ch <- prometheus.MustNewConstMetric(walCommitsDesc, prometheus.CounterValue, float64(s.Commits))
		ch <- prometheus.MustNewConstMetric(walRequestsDesc, prometheus.CounterValue, float64(s.Requests))
		ch <- prometheus.MustNewConstMetric(walRecordsDesc, prometheus.CounterValue, float64(s.Records))
		ch <- prometheus.MustNewConstMetric(walSyncsDesc, prometheus.CounterValue, float64(s.Syncs))
		ch <- prometheus.MustNewConstMetric(walSyncDesc, prometheus.CounterValue, s.Syncing.Seconds())
	}
	if f := c.m.walFailure.Load(); f != nil {
		failed := 0.0
		if (*f)() != nil {
			failed = 1
		}
		ch <- prometheus.MustNewConstMetric(walFailedDesc, prometheus.GaugeValue, failed)
	}
}

// censusKey is a session type and state.
type censusKey struct {
	typ   string
	state session.State
}

// census counts h's sessions by type and state; every state of a type
// that has sessions is present, so a state that empties reads 0.
func census(h Hub) map[censusKey]int {
	out := map[censusKey]int{}
	add := func(typ string, st session.State, n int) {
		for _, s := range states {
			if _, ok := out[censusKey{typ, s}]; !ok {
				out[censusKey{typ, s}] = 0
			}
		}
		out[censusKey{typ, st}] += n
	}
	if c, ok := h.(censusHub); ok {
		c.CountSessions(add)
		return out
	}
	eachSession(h, func(_ session.ID, typ string, st session.State) { add(typ, st, 1) })
	return out
}
