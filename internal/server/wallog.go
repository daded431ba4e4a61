package server

import (
	"context"

	"github.com/hubd/hubd/hub"
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
		ws[i] = wal.Write{Session: x.Session, Meta: x.Meta, Records: recs[start:len(recs):len(recs)]}
	}
	return w.Log.Append(ctx, ws...)
}
