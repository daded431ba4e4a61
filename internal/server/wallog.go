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

// logErr gives the hub the meaning of the log's errors it acts on: a full
// disk wrote nothing (DISK_FULL, retry once space returns).
func logErr(err error) error {
	if errors.Is(err, wal.ErrDiskFull) {
		return fmt.Errorf("%v: %w", err, hub.ErrDiskFull)
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
// reserve (sends are refused with DISK_FULL; reads and watches go on).
const WriteHealth = "hubd.v1.Hub/writes"

// spaceHealth reports the log's free space on the health service.
type spaceHealth struct {
	hs   *health.Server
	lg   zerolog.Logger
	full atomic.Bool
}

func (s *spaceHealth) set(sp wal.Space) {
	st := healthpb.HealthCheckResponse_SERVING
	if sp.Full {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	}
	if was := s.full.Swap(sp.Full); was != sp.Full {
		if sp.Full {
			s.lg.Error().Uint64("free", sp.Free).Uint64("reserve", sp.Reserve).Msg("disk below its reserve: sends refused with DISK_FULL until space is freed")
		} else {
			s.lg.Info().Uint64("free", sp.Free).Msg("disk space back above the reserve: sends accepted again")
		}
	}
	s.hs.SetServingStatus(WriteHealth, st)
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
