package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal"
)

// migratedDataV1 returns a copy of dataV1 migrated to the current format.
func migratedDataV1(t *testing.T) string {
	t.Helper()
	dir := copyDataV1(t)
	if code, out, errs := logCmd(t, "migrate", "--data", dir); code != 0 {
		t.Fatalf("log migrate: exit %d\n%s%s", code, out, errs)
	}
	return dir
}

// treeDigest describes every file under dir with a hash of its content.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sum, err := sparseDigest(p)
		fmt.Fprintf(&b, "%s %x\n", rel, sum)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// sparseDigest hashes a file's size and the bytes of its data ranges
// (badger's value log is a 2 GiB hole: reading it all takes seconds).
func sparseDigest(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d\n", fi.Size())
	const seekData, seekHole = 3, 4
	for off := int64(0); off < fi.Size(); {
		start, err := f.Seek(off, seekData)
		if err != nil {
			break
		}
		end, err := f.Seek(start, seekHole)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(h, "@%d\n", start)
		if _, err := io.Copy(h, io.NewSectionReader(f, start, end-start)); err != nil {
			return nil, err
		}
		off = end
	}
	return h.Sum(nil), nil
}

// TestLogVerifyReadOnly: `hubd log verify` reads a stopped hub's
// directory without changing a byte of it, and refuses a directory a
// running hub holds, naming the way out.
func TestLogVerifyReadOnly(t *testing.T) {
	dir := migratedDataV1(t)
	before := treeDigest(t, dir)
	if code, out, errs := logCmd(t, "verify", "--data", dir); code != 0 || out != "a start would serve\n6 sessions, 27 records, 0 bad\n" {
		t.Fatalf("log verify: exit %d\n%s%s", code, out, errs)
	}
	if after := treeDigest(t, dir); after != before {
		t.Fatalf("log verify changed the directory:\n%s\nwas\n%s", after, before)
	}
	l, err := wal.Open(wal.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	code, _, errs := logCmd(t, "verify", "--data", dir)
	if code != 1 || !strings.Contains(errs, "in use by another process") || !strings.Contains(errs, "verify a backup") {
		t.Fatalf("log verify of a directory in use: exit %d, %q", code, errs)
	}
}

// TestLogVerifyDamage: a hub is killed (its directory copied while it
// runs) after an acknowledged send and an open, and the memtable log of
// the copy is emptied, as a power loss can leave badger's unsynced log.
// The journal holds those commits: `hubd log verify` finds nothing lost
// and says a start would write them again from the journal (it runs that
// start on a copy) and changes nothing; a deleted MANIFEST is reported
// before badger can delete any table.
func TestLogVerifyDamage(t *testing.T) {
	dir := migratedDataV1(t)
	srv := startDataV1(t, dir)
	ctx := context.Background()
	id := session.MustParseID("01a207d6-fcd8-7992-863f-aa1ba1bded14")
	_, err := srv.Hub().Send(ctx, "alice", id, &hubpb.Envelope{Type: session.EventText,
		Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "and the refund?"}}})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	// A later commit: the journal then knows the send's was acknowledged
	// (the last commit before a crash may have been in flight).
	if _, err := srv.Hub().Open(ctx, "alice", &hubpb.OpenRequest{Type: "conversation@1",
		Participants: []*hubpb.Participant{{Name: "alice"}, {Name: "bob"}}}); err != nil {
		t.Fatalf("open: %v", err)
	}
	img, intact := filepath.Join(t.TempDir(), "img"), filepath.Join(t.TempDir(), "intact")
	if err := copyTree(dir, img); err != nil {
		t.Fatal(err)
	}
	if err := copyTree(img, intact); err != nil {
		t.Fatal(err)
	}
	_, whole, _ := logCmd(t, "verify", "--data", intact)
	counts := regexp.MustCompile(`\d+ sessions, \d+ records, 0 bad`).FindString(whole)
	if counts == "" {
		t.Fatalf("log verify of the intact copy:\n%s", whole)
	}
	mems, _ := filepath.Glob(filepath.Join(img, "*.mem"))
	for _, m := range mems {
		if err := os.Truncate(m, 0); err != nil {
			t.Fatal(err)
		}
	}
	before := treeDigest(t, img)
	code, out, errs := logCmd(t, "verify", "--data", img)
	if code != 0 || !regexp.MustCompile(`(?m)^a start would .*replay \d+ commits from the journal and serve$`).MatchString(out) ||
		!strings.Contains(out, counts) || strings.Contains(out, "BAD ") {
		t.Fatalf("log verify of a copy whose memtable log the journal restores: exit %d, want %q as for the intact copy\n%s%s", code, counts, out, errs)
	}
	if after := treeDigest(t, img); after != before {
		t.Fatalf("log verify changed the directory:\n%s\nwas\n%s", after, before)
	}

	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, badger.ManifestFilename)); err != nil {
		t.Fatal(err)
	}
	before = treeDigest(t, dir)
	code, out, errs = logCmd(t, "verify", "--data", dir)
	if code != 1 || !strings.Contains(out, "the MANIFEST is missing") {
		t.Fatalf("log verify without a MANIFEST: exit %d\n%s%s", code, out, errs)
	}
	if after := treeDigest(t, dir); after != before {
		t.Fatalf("log verify changed the directory:\n%s\nwas\n%s", after, before)
	}
}

// copyTree copies the directory src to dst, keeping files' holes (badger's
// memtable and value log files are large and mostly holes).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		return copySparse(p, out)
	})
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
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	if err := f.Truncate(fi.Size()); err != nil {
		_ = f.Close()
		return err
	}
	const seekData, seekHole = 3, 4 // lseek's SEEK_DATA and SEEK_HOLE
	for off := int64(0); off < fi.Size(); {
		start, err := in.Seek(off, seekData)
		switch {
		case errors.Is(err, syscall.ENXIO): // no data past off
			return f.Close()
		case err != nil: // no SEEK_DATA here: copy the rest
			start = off
		}
		end, err := in.Seek(start, seekHole)
		if err != nil || end <= start {
			end = fi.Size()
		}
		if _, err := io.Copy(io.NewOffsetWriter(f, start), io.NewSectionReader(in, start, end-start)); err != nil {
			_ = f.Close()
			return err
		}
		off = end
	}
	return f.Close()
}
