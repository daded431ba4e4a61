package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// ErrNoBackup: the hub's log cannot be backed up through the hub (a
// cluster node's log is NATS JetStream, backed up with NATS's tools).
var ErrNoBackup = errors.New("hub: this hub's log cannot be backed up through the hub")

// backuper is a Log that writes a consistent snapshot of itself while it
// serves (*wal.Log).
type backuper interface {
	Backup(ctx context.Context, w io.Writer) error
	BackupFormat() string
}

// BackupFormat names what Backup writes, or fails with ErrNoBackup.
func (h *Hub) BackupFormat() (string, error) {
	b, ok := h.cfg.Log.(backuper)
	if !ok {
		return "", fmt.Errorf("%w (its log is %T)", ErrNoBackup, h.cfg.Log)
	}
	return b.BackupFormat(), nil
}

// Backup writes a consistent snapshot of the hub's whole log to w while
// the hub serves: every session as it stood at one moment, the records
// acknowledged before the call among them, in the log's backup format
// (wal.BackupFormat). The caller checks that an operator asked.
func (h *Hub) Backup(ctx context.Context, w io.Writer) error {
	if err := h.gate.enter(); err != nil {
		return err
	}
	defer h.gate.leave()
	b, ok := h.cfg.Log.(backuper)
	if !ok {
		return fmt.Errorf("%w (its log is %T)", ErrNoBackup, h.cfg.Log)
	}
	return b.Backup(ctx, w)
}
