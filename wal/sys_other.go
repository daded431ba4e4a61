//go:build !linux

package wal

import (
	"errors"
	"os"
)

// freeBytes reports that the free-space check is not available here.
func freeBytes(string) (uint64, bool, error) { return 0, false, nil }

// freeBytesOf reports that the free-space check is not available here.
func freeBytesOf(*os.File) (uint64, bool, error) { return 0, false, nil }

// fdatasync flushes f.
func fdatasync(f *os.File) error { return f.Sync() }

// preallocate is not available here.
func preallocate(*os.File, int64) error { return errors.ErrUnsupported }

// isNoSpace reports false: without statfs the check is off.
func isNoSpace(error) bool { return false }

// allocatedBytes returns the file's size.
func allocatedBytes(path string) (uint64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return uint64(fi.Size()), nil
}

// unlinked reports false: the link count is not checked here.
func unlinked(os.FileInfo) bool { return false }
