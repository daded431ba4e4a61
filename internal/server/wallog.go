package server

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/rs/zerolog"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"time"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/internal/metrics"
	"github.com/hubd/hubd/wal"
)

// walLog adapts a wal.Log to the hub's Log interface: Append converts its
// types; Scan, ScanRange and Metas are the log's own.
type walLog struct{ *wal.Log }

// The hub's optional shapes of a log that the badger log has.
var (
	_ hub.Purger     = walLog{}
	_ hub.Eraser     = walLog{}
	_ hub.LazySyncer = walLog{}
	_ hub.Reclaimer  = walLog{}
)

// WALLog returns l as the hub's log.
func WALLog(l *wal.Log) hub.Log { return walLog{l} }

func (w walLog) Append(ctx context.Context, writes ...hub.LogWrite) error {
	ws := make([]wal.Write, len(writes))
	n := 0
	for _, x := range writes {
		n += len(x.Records)
	}
	recs := make([]wal.Record, 0, n)
	for i, x := range writes {
		start := len(recs)
		for _, r := range x.Records {
			recs = append(recs, wal.Record{Seq: r.Seq, Data: r.Data})
		}
		ws[i] = wal.Write{Session: x.Session, Meta: x.Meta, Records: recs[start:len(recs):len(recs)], Index: indexEntries(x.Index)}
	}
	return logErr(w.Log.Append(ctx, ws...))
}

// indexEntries converts the hub's index entries to the log's.
func indexEntries(xs []hub.IndexEntry) []wal.IndexEntry {
	if len(xs) == 0 {
		return nil
	}
	out := make([]wal.IndexEntry, len(xs))
	for i, x := range xs {
		out[i] = wal.IndexEntry{Key: x.Key, Value: x.Value, Delete: x.Delete}
	}
	return out
}

// Meta returns a session's metadata, nil when the log has none.
func (w walLog) Meta(ctx context.Context, session [16]byte) ([]byte, error) {
	m, err := w.Log.Meta(ctx, session)
	if errors.Is(err, wal.ErrNotFound) {
		return nil, nil
	}
	return m, err
}

// PutIndex writes index entries outside an append.
func (w walLog) PutIndex(ctx context.Context, entries []hub.IndexEntry) error {
	return w.Log.PutIndex(ctx, indexEntries(entries))
}

// DeleteSessions deletes sessions' keys, leaving their tombstones.
func (w walLog) DeleteSessions(ctx context.Context, ds []hub.Deletion) error {
	out := make([]wal.Deletion, len(ds))
	for i, d := range ds {
		t := d.Tombstone
		out[i] = walDeletion(d, t)
	}
	return logErr(w.Log.DeleteSessions(ctx, out))
}

// EraseSessions erases sessions, every byte of them gone from the files.
func (w walLog) EraseSessions(ctx context.Context, ds []hub.Deletion) error {
	out := make([]wal.Deletion, len(ds))
	for i, d := range ds {
		out[i] = walDeletion(d, d.Tombstone)
	}
	return logErr(w.Log.EraseSessions(ctx, out))
}

func walDeletion(d hub.Deletion, t hub.Tombstone) wal.Deletion {
	return wal.Deletion{Session: d.Session, Index: d.Index, Exact: d.Exact, Lazy: d.Lazy,
		Tombstone: wal.Tombstone{Kind: wal.GoneKind(t.Kind), At: t.At, Archive: t.Archive, By: t.By, Reason: t.Reason}}
}

// Gone returns a deleted session's tombstone.
func (w walLog) Gone(ctx context.Context, session [16]byte) (hub.Tombstone, bool, error) {
	t, ok, err := w.Log.Gone(ctx, session)
	return hub.Tombstone{Kind: hub.GoneKind(t.Kind), At: t.At, Archive: t.Archive, By: t.By, Reason: t.Reason}, ok, err
}

// RestoreSession writes a purged session back (hub.Import).
func (w walLog) RestoreSession(ctx context.Context, session [16]byte, meta []byte, records []hub.LogRecord, index []hub.IndexEntry) error {
	recs := make([]wal.Record, len(records))
	for i, r := range records {
		recs[i] = wal.Record{Seq: r.Seq, Data: r.Data}
	}
	return logErr(w.Log.RestoreSession(ctx, session, meta, recs, indexEntries(index)))
}

// logErr gives the hub the meaning of the log's errors it acts on: a full
// disk wrote nothing (DISK_FULL, retry once space returns); failed
// storage takes nothing more until a restart (STORAGE_FAILED).
func logErr(err error) error {
	switch {
	case errors.Is(err, wal.ErrDiskFull):
		return fmt.Errorf("%v: %w", err, hub.ErrDiskFull)
	case errors.Is(err, wal.ErrStorageFailed):
		return fmt.Errorf("%v: %w", err, hub.ErrStorageFailed)
	}
	return err
}

// observedLog is the hub's log with each append timed and counted for the
// metrics.
type observedLog struct {
	walLog
	m *metrics.Metrics
}

func (o observedLog) Append(ctx context.Context, writes ...hub.LogWrite) error {
	start := time.Now()
	err := o.walLog.Append(ctx, writes...)
	n := 0
	for _, w := range writes {
		n += len(w.Records)
	}
	o.m.Appended(time.Since(start), n, err)
	return err
}

// WriteHealth is the health service name ("grpc.health.v1") that says
// whether the hub takes writes: NOT_SERVING while the disk is below its
// reserve (sends are refused with DISK_FULL; reads and watches go on) and
// once the log's storage failed (STORAGE_FAILED, until a restart).
const WriteHealth = "hubd.v1.Hub/writes"

// writeHealth reports on the health service, and to GET /healthz,
// whether the log takes writes.
type writeHealth struct {
	hs     *health.Server
	lg     zerolog.Logger
	full   atomic.Bool
	failed atomic.Pointer[error] // the log's storage failure, final
}

// space is wal.Options.OnSpace: the disk went below its reserve or back.
func (w *writeHealth) space(sp wal.Space) {
	if was := w.full.Swap(sp.Full); was != sp.Full {
		if sp.Full {
			w.lg.Error().Uint64("free", sp.Free).Uint64("reserve", sp.Reserve).Msg("disk below its reserve: sends refused with DISK_FULL until space is freed")
		} else {
			w.lg.Info().Uint64("free", sp.Free).Msg("disk space back above the reserve: sends accepted again")
		}
	}
	w.update()
}

// storage is wal.Options.OnFailure: the log's storage failed, for good
// (the log has logged why).
func (w *writeHealth) storage(err error) {
	w.failed.Store(&err)
	w.update()
}

func (w *writeHealth) update() {
	st := healthpb.HealthCheckResponse_SERVING
	if w.Err() != nil {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	}
	w.hs.SetServingStatus(WriteHealth, st)
}

// Err says why writes are refused, or nil while they are taken.
func (w *writeHealth) Err() error {
	if p := w.failed.Load(); p != nil {
		return fmt.Errorf("STORAGE_FAILED: %w (an operator must repair the data directory and restart the hub)", *p)
	}
	if w.full.Load() {
		return errors.New("DISK_FULL: the data directory's disk is below its free-space reserve (writes resume once space is freed)")
	}
	return nil
}

// openHint adds to a log that does not open what the operator can do.
func openHint(cfg Config, err error) error {
	var de *wal.DamageError
	switch {
	case errors.As(err, &de) && de.RestoreOnly:
		return fmt.Errorf("%w\nsee docs/OPERATIONS.md: restore %s from a backup", err, cfg.DataDir)
	case errors.As(err, &de):
		return fmt.Errorf("%w\nacknowledged records are missing; see docs/OPERATIONS.md: restore %s from a backup, or start with --on-damage quarantine to serve every other session", err, cfg.DataDir)
	case errors.Is(err, wal.ErrDiskFull):
		return fmt.Errorf("%w\nfree space on the disk of %s (the log must replay its memtables), or lower --min-free-disk", err, cfg.DataDir)
	case errors.Is(err, wal.ErrLocked):
		return fmt.Errorf("%w\nanother hubd serves %s", err, cfg.DataDir)
	}
	return err
}
