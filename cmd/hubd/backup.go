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

// restoreLog is "hubd log restore --data DIR FILE": it loads a backup into
// DIR, which must not exist or be empty, checking the digest beside it
// when there is one, then verifies the result as "log verify" does. A
// restore that fails leaves no store behind.
func restoreLog(ctx context.Context, dir, file string, stdout io.Writer) error {
	const cmd = "log restore"
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return exitcode.Usage("%s: %s is not empty: restore into a new directory", cmd, dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	var in io.Reader = os.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return exitcode.Usage("%s: %v", cmd, err)
		}
		defer f.Close()
		// The digest is checked before anything is written.
		if err := checkDigest(f, file); err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
		in = f
	}
	if err := wal.Restore(wal.Options{Dir: dir}, in); err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("%s: %w", cmd, err)
	}
	fmt.Fprintf(stdout, "restored %s into %s\n", file, dir)
	return verifyLog(ctx, dir, verifyOptions{inPlace: true}, stdout)
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

// checkDigest compares f's SHA-256 with the one in file+".sha256" (written
// by backup; sha256sum's format), when there is one, and leaves f at its
// start.
func checkDigest(f *os.File, file string) error {
	b, err := os.ReadFile(file + ".sha256")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	hexSum, _, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	want, err := hex.DecodeString(hexSum)
	if err != nil || len(want) != sha256.Size {
		return fmt.Errorf("%s.sha256 holds no sha256 digest", file)
	}
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return err
	}
	if got := sum.Sum(nil); !bytes.Equal(got, want) {
		return fmt.Errorf("%s has sha256 %x, %s.sha256 says %x: the file is damaged or not that backup", file, got, file, want)
	}
	_, err = f.Seek(0, io.SeekStart)
	return err
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
