package wal

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// CopyStore copies the store in dir, which must not be in use, into dst
// (which must not exist), file by file, keeping the holes of sparse files
// (badger's value log is a 2 GiB hole). It holds dir's lock shared while
// it copies, as a read-only Open does: a hub running on dir makes it fail
// with ErrLocked, and no hub starts on dir until the copy is whole. The
// copy needs as much free space as the store's data.
func CopyStore(dir, dst string) error {
	unlock, err := lockShared(dir)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: copying %s: %s already exists", ErrInvalid, dir, dst)
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		return copySparse(p, out)
	})
	if err != nil {
		return fmt.Errorf("wal: copying %s: %w", dir, err)
	}
	return nil
}

// copySparse copies the file src to dst, skipping its holes.
func copySparse(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if err := copyData(in, f, fi.Size()); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// copyData copies the data ranges of in, size bytes long, into out.
func copyData(in, out *os.File, size int64) error {
	if err := out.Truncate(size); err != nil {
		return err
	}
	const seekData, seekHole = 3, 4 // lseek's SEEK_DATA and SEEK_HOLE
	for off := int64(0); off < size; {
		start, err := in.Seek(off, seekData)
		if err != nil {
			if errors.Is(err, errNoData) {
				return nil // nothing but a hole past off
			}
			start = off // no SEEK_DATA here: copy the rest
		}
		end, err := in.Seek(start, seekHole)
		if err != nil || end <= start {
			end = size
		}
		if _, err := io.Copy(io.NewOffsetWriter(out, start), io.NewSectionReader(in, start, end-start)); err != nil {
			return err
		}
		off = end
	}
	return nil
}
