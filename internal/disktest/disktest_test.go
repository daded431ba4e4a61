package disktest_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hubd/hubd/internal/disktest"
)

// The needle is found in a plain file, across the 1 MiB read chunks and
// after a hole of a sparse file, and not where it is absent.
func TestFilesHolding(t *testing.T) {
	dir := t.TempDir()
	needle := []byte("needle-7731")
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := write("plain", append([]byte("hay "), needle...))
	across := write("across", append(bytes.Repeat([]byte{'x'}, 1<<20-4), needle...))
	write("none", bytes.Repeat([]byte{'y'}, 3<<20))
	sparse := filepath.Join(dir, "sub", "sparse")
	if err := os.MkdirAll(filepath.Dir(sparse), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(needle, 64<<20); err != nil { // 64 MiB of hole first
		t.Fatal(err)
	}
	f.Close()
	got := disktest.FilesHolding(t, dir, needle)
	slices.Sort(got)
	want := []string{across, plain, sparse}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("FilesHolding = %v, want %v", got, want)
	}
}
