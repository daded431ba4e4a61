package hub_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/hubd/hubd/hub"
)

// TestBackupNeedsABackupLog: a hub whose log cannot write a snapshot of
// itself (here a wrapper that hides wal.Log's Backup, as a cluster node's
// JetStream log has none) says so instead of writing anything.
func TestBackupNeedsABackupLog(t *testing.T) {
	e := newEnv(t, nil)
	var w countingWriter
	if err := e.hub.Backup(context.Background(), &w); !errors.Is(err, hub.ErrNoBackup) || w.n != 0 {
		t.Fatalf("Backup over %T = %v (%d bytes), want ErrNoBackup and nothing written", e.log, err, w.n)
	}
	if _, err := e.hub.BackupFormat(); !errors.Is(err, hub.ErrNoBackup) {
		t.Fatalf("BackupFormat = %v, want ErrNoBackup", err)
	}
}

type countingWriter struct{ n int }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

var _ io.Writer = (*countingWriter)(nil)
