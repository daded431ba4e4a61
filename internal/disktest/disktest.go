package disktest

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// FilesHolding lists the files under dir whose bytes contain needle (a
// file deleted while the walk runs is skipped); a failure to walk or read
// fails t.
func FilesHolding(t testing.TB, dir string, needle []byte) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted while walking
		}
		if err != nil || d.IsDir() {
			return err
		}
		found, err := Holds(p, needle)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if found {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Holds says whether the file at p contains needle, reading only its
// data: badger preallocates its files sparse (a gigabyte of holes for a
// value log), which lseek's SEEK_DATA and SEEK_HOLE step over.
func Holds(p string, needle []byte) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	const seekData, seekHole = 3, 4
	buf := make([]byte, 1<<20)
	var off int64
	for {
		start, err := f.Seek(off, seekData)
		if err != nil {
			return false, nil // ENXIO: no data past off
		}
		end, err := f.Seek(start, seekHole)
		if err != nil {
			return false, err
		}
		for pos := start; pos < end; {
			n, err := f.ReadAt(buf[:min(int64(len(buf)), end-pos)], pos)
			if bytes.Contains(buf[:n], needle) {
				return true, nil
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return false, err
			}
			if n == 0 {
				break
			}
			pos += int64(max(n-len(needle)+1, 1)) // chunks overlap by the needle's length
		}
		off = end
	}
}
