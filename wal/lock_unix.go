//go:build unix

package wal

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// errNoData is lseek's answer to SEEK_DATA past a file's last data.
var errNoData = syscall.ENXIO

// lockShared takes dir's lock shared, as badger's read-only open does (an
// flock of the directory); a running hub holds it exclusively.
func lockShared(dir string) (func(), error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		_ = d.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s (a hub is running on it: stop it, or verify a backup)", ErrLocked, dir)
		}
		return nil, fmt.Errorf("wal: locking %s: %w", dir, err)
	}
	return func() { _ = d.Close() }, nil
}
