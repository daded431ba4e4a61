package wal

import (
	"errors"
	"os"
	"syscall"
)

// freeBytes returns the bytes of dir's file system available to an
// unprivileged user (statfs f_bavail × f_bsize), and true; the check is
// available on Linux only.
func freeBytes(dir string) (uint64, bool, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, true, err
	}
	return st.Bavail * uint64(st.Bsize), true, nil
}

// freeBytesOf is freeBytes of the file system holding the open file f.
func freeBytesOf(f *os.File) (uint64, bool, error) {
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(int(f.Fd()), &st); err != nil {
		return 0, true, err
	}
	return st.Bavail * uint64(st.Bsize), true, nil
}

// fdatasync flushes f's data (not its metadata unless needed to read the
// data back).
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// preallocate reserves disk blocks for f's first n bytes without changing
// its size. A file system that cannot (tmpfs can, some cannot) returns
// an error matching errors.ErrUnsupported.
func preallocate(f *os.File, n int64) error {
	const keepSize = 0x01 // FALLOC_FL_KEEP_SIZE
	err := syscall.Fallocate(int(f.Fd()), keepSize, 0, n)
	if errors.Is(err, syscall.EOPNOTSUPP) {
		return errors.ErrUnsupported
	}
	return err
}

// isNoSpace reports whether err is ENOSPC.
func isNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }

// allocatedBytes returns the bytes of disk blocks the file at path holds.
func allocatedBytes(path string) (uint64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Blocks) * 512, nil
	}
	return uint64(fi.Size()), nil
}

// unlinked reports whether the open file fi describes has no name left
// in any directory (its link count fell to 0).
func unlinked(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 0
}
