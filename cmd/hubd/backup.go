package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hubd/hubd/internal/exitcode"
	"github.com/hubd/hubd/wal"
)

// backupLog is "hubd log backup FILE": a consistent snapshot of a running
// hub's log, streamed by the hub (an operator's call). The file appears
// only whole: it is written beside FILE, synced and renamed, with its
// digest in FILE.sha256 (sha256sum's format), which restore checks.
func backupLog(ctx context.Context, c *clientFlags, file string, stdout, stderr io.Writer) error {
	const cmd = "log backup"
	if file != "-" {
		if _, err := os.Stat(file); !errors.Is(err, fs.ErrNotExist) {
			return exitcode.Usage("%s: %s already exists: back up to a new file", cmd, file)
		}
	}
	client, err := c.dial(ctx, cmd)
	if err != nil {
		return err
	}
	defer client.Close()
	if file == "-" {
		w := bufio.NewWriterSize(stdout, 1<<20)
		info, err := client.Backup(ctx, w)
		if err != nil {
			return wrapCall(cmd, err)
		}
		if err := w.Flush(); err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
		fmt.Fprintf(stderr, "backup: %d bytes, sha256 %x (%s)\n", info.Bytes, info.SHA256, info.Format)
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".partial-")
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // after the rename, a no-op
	w := bufio.NewWriterSize(tmp, 1<<20)
	info, err := client.Backup(ctx, w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return wrapCall(cmd, err)
	}
	sum := fmt.Sprintf("%x  %s\n", info.SHA256, filepath.Base(file))
	if err := writeSynced(file+".sha256", []byte(sum)); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	if err := syncDir(filepath.Dir(file)); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	fmt.Fprintf(stdout, "backup: %s: %d bytes, sha256 %x (%s)\n", file, info.Bytes, info.SHA256, info.Format)
	return nil
}

// restoreLog is "hubd log restore --data DIR [--sha256 HEX] FILE": it
// loads a backup into DIR, which must not exist or be empty, then verifies
// the result as "log verify" does. FILE is checked first against the
// digest given and the one beside it (FILE.sha256, written by backup),
// when there is one; a mismatch writes nothing. From stdin ("-") the given
// digest is checked as the backup streams in. A restore that fails
// (a mismatch from stdin, a backup that does not load or does not verify)
// removes what it wrote: DIR, and the parents it made, or DIR's contents
// when DIR was there before.
func restoreLog(ctx context.Context, dir, file, sum string, stdout io.Writer) error {
	const cmd = "log restore"
	want, err := parseDigest(sum)
	if err != nil {
		return exitcode.Usage("%s: --sha256: %v", cmd, err)
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return exitcode.Usage("%s: %s is not empty: restore into a new directory", cmd, dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	in, check, done, err := restoreInput(file, want)
	if err != nil {
		return err
	}
	defer done()
	undo, err := undoFor(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	err = wal.Restore(wal.Options{Dir: dir}, in)
	if err == nil {
		err = check()
	}
	if err != nil {
		return fmt.Errorf("%s: %w%s", cmd, err, undo())
	}
	fmt.Fprintf(stdout, "restored %s into %s\n", file, dir)
	if err := verifyLog(ctx, dir, verifyOptions{inPlace: true}, stdout); err != nil {
		return exitcode.New(1, fmt.Errorf("%s: %s does not verify: %w%s", cmd, file, err, undo()))
	}
	return nil
}

// restoreInput opens a restore's backup: FILE, checked against want and
// the digest beside it before anything is written, or stdin, whose digest
// check reports once it is read. done closes FILE.
func restoreInput(file string, want []byte) (in io.Reader, check func() error, done func(), err error) {
	const cmd = "log restore"
	if file == "-" {
		h := sha256.New()
		check = func() error { return matchDigest(h.Sum(nil), want, "the backup read from stdin", "--sha256") }
		return io.TeeReader(os.Stdin, h), check, func() {}, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, nil, exitcode.Usage("%s: %v", cmd, err)
	}
	if err := checkDigest(f, file, want); err != nil {
		_ = f.Close()
		return nil, nil, nil, exitcode.New(1, fmt.Errorf("%s: %w", cmd, err))
	}
	return f, func() error { return nil }, func() { _ = f.Close() }, nil
}

// undoFor returns what removes all a restore into dir writes: dir and the
// parents it lacks, or, when dir exists (empty), its contents. The undo
// returns a note for the restore's error.
func undoFor(dir string) (func() string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	top := "" // the highest directory the restore makes
	for p := abs; ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		top = p
		if filepath.Dir(p) == p {
			break
		}
	}
	return func() string {
		if top != "" {
			if err := os.RemoveAll(top); err != nil {
				return fmt.Sprintf("; removing %s: %v", top, err)
			}
			return fmt.Sprintf("; removed %s", top)
		}
		ents, _ := os.ReadDir(abs)
		for _, e := range ents {
			if err := os.RemoveAll(filepath.Join(abs, e.Name())); err != nil {
				return fmt.Sprintf("; emptying %s: %v", dir, err)
			}
		}
		return fmt.Sprintf("; emptied %s", dir)
	}, nil
}

// verifyLive is "hubd log verify --hub ADDR": the running hub's log is
// backed up into a temporary directory, restored there, verified and
// removed. The hub is not stopped or changed; the check is of the moment
// the backup began.
func verifyLive(ctx context.Context, c *clientFlags, o verifyOptions, stdout io.Writer) error {
	const cmd = "log verify"
	client, err := c.dial(ctx, cmd)
	if err != nil {
		return err
	}
	defer client.Close()
	tmp, err := os.MkdirTemp("", "hubd-verify-")
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	// The backup streams straight into the restore: no copy of it on disk.
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	dir := filepath.Join(tmp, "data")
	go func() {
		err := wal.Restore(wal.Options{Dir: dir}, pr)
		_ = pr.CloseWithError(err) // unblocks the backup if the restore gave up
		done <- err
	}()
	start := time.Now()
	info, err := client.Backup(ctx, pw)
	_ = pw.CloseWithError(err)
	if rerr := <-done; err == nil && rerr != nil {
		err = rerr
	}
	if err != nil {
		return wrapCall(cmd, err)
	}
	fmt.Fprintf(stdout, "note: verifying a backup of the hub at %s taken at %s (%d bytes, %s)\n",
		c.hub, start.UTC().Format(time.RFC3339), info.Bytes, info.Format)
	o.inPlace = true // the restored backup is verify's own
	return verifyLog(ctx, dir, o, stdout)
}

// checkDigest compares f's SHA-256 with want (unless nil) and with the
// one in file+".sha256" (written by backup; sha256sum's format), when
// there is one, and leaves f at its start.
func checkDigest(f *os.File, file string, want []byte) error {
	var beside []byte
	b, err := os.ReadFile(file + ".sha256")
	switch {
	case err == nil:
		hexSum, _, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
		if beside, err = parseDigest(hexSum); err != nil || beside == nil {
			return fmt.Errorf("%s.sha256 holds no sha256 digest", file)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if want == nil && beside == nil {
		return nil
	}
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return err
	}
	got := sum.Sum(nil)
	if err := matchDigest(got, want, file, "--sha256"); err != nil {
		return err
	}
	if err := matchDigest(got, beside, file, file+".sha256"); err != nil {
		return err
	}
	_, err = f.Seek(0, io.SeekStart)
	return err
}

// matchDigest compares a backup's digest with the one from where (nil:
// none given).
func matchDigest(got, want []byte, what, where string) error {
	if want == nil || bytes.Equal(got, want) {
		return nil
	}
	return fmt.Errorf("%s has sha256 %x, %s says %x: the file is damaged or not that backup", what, got, where, want)
}

// parseDigest decodes a SHA-256 digest in hex; "" is none (nil).
func parseDigest(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("%q is not a sha256 digest (64 hex digits)", s)
	}
	return b, nil
}

// writeSynced writes a new file and syncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// syncDir syncs a directory, so a rename in it survives a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
