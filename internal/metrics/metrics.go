package metrics

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal"
)

// Label values used when a session's type is not known.
const unknownType = "unknown"

// Hub is what the gauges read from the hub at each scrape: its
// quarantined sessions (*hub.Hub) and its listings (*feed.Feed). A hub
// that also has CountSessions(func(typ string, state
// session.State, n int)) and TypeOf(session.ID) (string, bool) is asked
// those directly; otherwise the counts come from listings and the types
// from an index of the sessions seen (see typeIndex).
type Hub interface {
	Quarantined() map[session.ID]error
	List(ctx context.Context, agent string, operator bool, f feed.Filter) ([]*hubpb.SessionInfo, session.ID, error)
}

// censusHub is a hub that counts its sessions itself.
type censusHub interface {
	CountSessions(f func(typ string, state session.State, n int))
}

// typedHub is a hub that says a session's type without taking its lock.
type typedHub interface {
	TypeOf(id session.ID) (string, bool)
}

// Metrics are one hub's Prometheus metrics, in a registry of their own
// with the Go runtime's and the process's. Safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	sendsAccepted, sendsRejected, envelopes *prometheus.CounterVec
	opened, ended, timers                   *prometheus.CounterVec
	failures, appendErrors, deltasDropped   prometheus.Counter
	subscribers                             *prometheus.GaugeVec
	cutoffs, limits                         *prometheus.CounterVec
	appendSeconds, appendRecords            prometheus.Histogram
	hydrateSeconds                          prometheus.Gauge
	requests                                *prometheus.CounterVec
	requestSeconds                          *prometheus.HistogramVec

	types      typeIndex
	hub        atomic.Pointer[Hub]
	wal        func() wal.Stats
	walFailure atomic.Pointer[func() error] // the log's storage failure (wal.Log.Failure)
}

// New returns the metrics, registered. walStats, when set, is read at each
// scrape for the log's running totals (wal.Log.Stats).
func New(walStats func() wal.Stats) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), wal: walStats}
	m.types.init()
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		m.reg.MustRegister(c)
		return c
	}
	m.sendsAccepted = counter("hubd_sends_accepted_total", "Envelopes of agents the hub accepted and logged, by session type.", "session_type")
	m.sendsRejected = counter("hubd_sends_rejected_total", "Sends the hub refused, by session type and stable reason.", "session_type", "reason")
	m.envelopes = counter("hubd_envelopes_written_total", "Envelopes written to the log (agents' and the hub's), by session type.", "session_type")
	m.opened = counter("hubd_sessions_opened_total", "Sessions created, by session type.", "session_type")
	m.ended = counter("hubd_sessions_ended_total", "Sessions that ended, by session type and final state.", "session_type", "state")
	m.timers = counter("hubd_timer_firings_total", "Envelopes timers wrote, by action: warn, notify, auto_close (expectations), ttl_expired, invite_timeout.", "action")
	m.cutoffs = counter("hubd_subscriber_cutoffs_total", "Streams the hub cut off because they fell behind their buffer, by kind.", "kind")
	m.limits = counter("hubd_limit_refusals_total", "Calls, sends and streams refused at one of the hub's limits, and subscribers cut off at a buffer bound, by limit (the hubd serve flag that sets it, without its dashes).", "limit")
	m.requests = counter("hubd_requests_total", "Unary calls and the sends and opens of agent streams, by transport (grpc, http; agent_stream for a stream's sends and opens), method and status code.", "transport", "method", "code")
	m.failures = prometheus.NewCounter(prometheus.CounterOpts{Name: "hubd_session_failures_total",
		Help: "Sessions failed because their log could not be written or read (quarantined at hydrate included)."})
	m.appendErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "hubd_wal_append_errors_total", Help: "Appends the log did not take."})
	m.deltasDropped = prometheus.NewCounter(prometheus.CounterOpts{Name: "hubd_deltas_dropped_total",
		Help: "Deltas (pieces of replies being written, never logged) a subscriber or watcher too far behind did not get; envelopes are never dropped."})
	m.subscribers = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hubd_subscribers",
		Help: "Open streams, by kind: subscribe and watch (gRPC), events (server-sent)."}, []string{"kind"})
	m.appendSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hubd_wal_append_duration_seconds",
		Help: "Time from a commit's append to its durability: queueing for group commit, the transaction and its fsync.", Buckets: prometheus.ExponentialBuckets(0.00025, 2, 15)})
	m.appendRecords = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hubd_wal_append_records",
		Help: "Records per append (an envelope and the follow-ups it caused).", Buckets: []float64{1, 2, 3, 4, 6, 8, 16, 32, 64}})
	m.hydrateSeconds = prometheus.NewGauge(prometheus.GaugeOpts{Name: "hubd_hydrate_duration_seconds", Help: "How long the last start took to rebuild every session from the log."})
	m.requestSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hubd_request_duration_seconds",
		Help: "Duration of unary calls, by transport and method.", Buckets: prometheus.ExponentialBuckets(0.00025, 2, 16)}, []string{"transport", "method"})
	m.reg.MustRegister(m.failures, m.appendErrors, m.deltasDropped, m.subscribers, m.appendSeconds, m.appendRecords, m.hydrateSeconds, m.requestSeconds,
		hubCollector{m}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// DeltaDropped counts a delta a subscriber dropped (feed.Config.DeltaDropped).
func (m *Metrics) DeltaDropped() { m.deltasDropped.Inc() }

// Registry returns the metrics' registry.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Attach makes the gauges read h (sessions by type and state,
// quarantined sessions) and indexes its sessions' types; call it once the
// hub is built (after hydrate).
func (m *Metrics) Attach(h Hub) {
	if t, ok := h.(typedHub); ok {
		m.types.use(t)
	} else {
		m.types.fill(h)
	}
	m.hub.Store(&h)
}

// WatchStorage makes the gauge hubd_wal_storage_failed read failure (the
// log's wal.Log.Failure) at each scrape.
func (m *Metrics) WatchStorage(failure func() error) { m.walFailure.Store(&failure) }

// Hydrated records how long the hub took to start (hydrate).
func (m *Metrics) Hydrated(d time.Duration) { m.hydrateSeconds.Set(d.Seconds()) }

// Appended records one append to the log: its duration, its records and
// whether it failed.
func (m *Metrics) Appended(d time.Duration, records int, err error) {
	if err != nil {
		m.appendErrors.Inc()
		return
	}
	m.appendSeconds.Observe(d.Seconds())
	m.appendRecords.Observe(float64(records))
}

// typeOf is the label for a session's type.
func (m *Metrics) typeOf(id session.ID) string {
	if t := m.types.get(id); t != "" {
		return t
	}
	return unknownType
}
