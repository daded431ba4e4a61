//go:build linux

package wal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// mountTmpfs mounts a tmpfs of the given size (as mount's size= says it)
// on a fresh directory and unmounts it at the end of the test. It skips
// the test where mounting is not permitted.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	mount(t, dir, "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir)
	return dir
}

// mountExt4 makes an ext4 file system image of mb MiB, loop-mounts it on a
// fresh directory and unmounts it at the end of the test. It skips the
// test where that is not possible (no root, no loop devices, no
// mkfs.ext4).
func mountExt4(t *testing.T, mb int) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "fs.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(mb) << 20); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", "0", img).CombinedOutput(); err != nil {
		t.Skipf("cannot make an ext4 image (mkfs.ext4: %v %s): skipping the disk-full test on ext4", err, out)
	}
	dir := t.TempDir()
	mount(t, dir, "-o", "loop", img, dir)
	return dir
}

// mount runs mount with args and registers the unmount; it skips the
// test if mount fails (not root, or not permitted in this container).
func mount(t *testing.T, dir string, args ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small file system needs root: skipping the disk-full test")
	}
	if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
		t.Skipf("mount %s: %v %s: skipping the disk-full test", strings.Join(args, " "), err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
			_ = exec.Command("umount", "-l", dir).Run()
		}
	})
}

const (
	// fillerBytes is what a test writes to take space it frees later: more
	// than what appends need above the reserve to resume (two batches and
	// a journal segment, 5 MiB), so that freeing it resumes them wherever
	// in its last segment the journal stood when the disk filled.
	fillerBytes = 5<<20 + 512<<10
	// testReserve is the tests' MinFreeBytes: more than the log writes
	// into its memtable on a 16 MiB file system, so badger can always
	// flush it (the rule DefaultMinFreeBytes follows at full size).
	testReserve = 6 << 20
)

// writeFiller writes n bytes of data (not a hole) to the file at p, as
// far as space allows.
func writeFiller(t *testing.T, p string, n int) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	buf := benchData(64 << 10)
	for w := 0; w < n; w += len(buf) {
		if _, err := f.Write(buf); err != nil {
			break // the disk is full: that is what the caller wants
		}
	}
	_ = f.Sync()
	if err := f.Close(); err != nil && !isNoSpace(err) {
		t.Fatal(err)
	}
}

// spaceWatch collects OnSpace calls.
type spaceWatch struct {
	mu     sync.Mutex
	events []Space
	ch     chan Space
}

func newSpaceWatch() *spaceWatch { return &spaceWatch{ch: make(chan Space, 64)} }

func (w *spaceWatch) on(s Space) {
	w.mu.Lock()
	w.events = append(w.events, s)
	w.mu.Unlock()
	select {
	case w.ch <- s:
	default:
	}
}

// await waits for an event with Full == full.
func (w *spaceWatch) await(t *testing.T, full bool) Space {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case s := <-w.ch:
			if s.Full == full {
				return s
			}
		case <-timeout:
			t.Fatalf("no OnSpace with Full=%v within 30s (events %v)", full, w.events)
		}
	}
}

// fillLog appends 1 KiB records round-robin to sessions until an append
// fails, which must be with ErrDiskFull, and returns the acknowledged last
// seq of each session.
func fillLog(t *testing.T, l *Log, acked map[[16]byte]uint64, sessions, limit int) error {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < limit; i++ {
		s := sid(i % sessions)
		w := mkWrite(s, acked[s]+1, 1)
		w.Records[0].Data = append(w.Records[0].Data, benchData(1024)...)
		if err := l.Append(ctx, w); err != nil {
			return err
		}
		acked[s]++
	}
	return nil
}

// checkAcked checks that every acknowledged record is readable.
func checkAcked(t *testing.T, l *Log, acked map[[16]byte]uint64) {
	t.Helper()
	ctx := context.Background()
	for s, last := range acked {
		want := uint64(1)
		err := l.Scan(ctx, s, 1, func(seq uint64, data []byte) error {
			if seq != want || !strings.HasPrefix(string(data), string(recData(s, seq))) {
				return fmt.Errorf("seq %d (want %d)", seq, want)
			}
			want++
			return nil
		})
		if err != nil || want != last+1 {
			t.Fatalf("session %x: scan %v, read to %d, acknowledged %d", s, err, want-1, last)
		}
	}
}

// TestDiskFull fills a small file system under the log: on tmpfs by the
// log's own appends (badger's memtable log cannot be preallocated past
// the space there is), on ext4 by another file while the memtable log is
// preallocated. Appends must fail with ErrDiskFull and write nothing,
// reads go on, OnSpace and Space report it, and once space is freed
// appends resume by themselves; nothing acknowledged is lost, and the
// process never dies of SIGBUS.
func TestDiskFull(t *testing.T) {
	for _, fs := range []struct {
		name  string
		mount func(t *testing.T) string
	}{
		{"tmpfs", func(t *testing.T) string { return mountTmpfs(t, "16m") }},
		{"ext4", func(t *testing.T) string { return mountExt4(t, 80) }},
	} {
		t.Run(fs.name, func(t *testing.T) {
			root := fs.mount(t)
			dir := filepath.Join(root, "data")
			filler := filepath.Join(root, "filler")
			writeFiller(t, filler, fillerBytes)
			watch := newSpaceWatch()
			opts := Options{Dir: dir, MinFreeBytes: testReserve, OnSpace: watch.on}
			l, err := open(opts, testHooks{recheck: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			acked := map[[16]byte]uint64{}
			if err := fillLog(t, l, acked, 8, 100); err != nil {
				t.Fatal(err)
			}
			if fs.name == "ext4" {
				mems, _ := filepath.Glob(filepath.Join(dir, "*"+memFileExt))
				if n, err := allocatedBytes(mems[0]); err != nil || n < minMemTableSize {
					t.Fatalf("memtable log %s holds %d bytes of blocks (%v): not preallocated", mems[0], n, err)
				}
				writeFiller(t, filepath.Join(root, "filler2"), 1<<30) // the disk fills up under the log
			}
			err = fillLog(t, l, acked, 8, 1<<20)
			if !errors.Is(err, ErrDiskFull) {
				t.Fatalf("filling the disk: %v, want ErrDiskFull", err)
			}
			if sp := watch.await(t, true); !sp.Full || !l.Space().Full || sp.Reserve != testReserve {
				t.Fatalf("OnSpace %+v, Space %+v", sp, l.Space())
			}
			t.Logf("%s: %d records acknowledged before the disk filled: %v", fs.name, total(acked), err)
			before := total(acked)
			if err := fillLog(t, l, acked, 8, 5); !errors.Is(err, ErrDiskFull) || total(acked) != before {
				t.Fatalf("append on a full disk: %v (%d acks)", err, total(acked)-before)
			}
			checkAcked(t, l, acked) // reads go on

			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			_ = os.Remove(filepath.Join(root, "filler2"))
			watch.await(t, false)
			if err := fillLog(t, l, acked, 8, 20); err != nil {
				t.Fatalf("append after space was freed: %v", err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l, err = Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			checkAcked(t, l, acked)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// total sums the acknowledged records.
func total(acked map[[16]byte]uint64) int {
	n := 0
	for _, v := range acked {
		n += int(v)
	}
	return n
}

// fullEnv switches TestFullHelper on and names its log directory.
const fullEnv = "WAL_FULL_HELPER_DIR"

// TestRestartOnFullDisk kills a process whose log filled a tmpfs, then
// opens the log again on the still-full disk: badger would have to flush
// what it replays, and with no room for that it would die of SIGBUS, so
// Open fails with ErrDiskFull instead. Once space is freed, Open succeeds
// and every acknowledged record is there.
func TestRestartOnFullDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	root := mountTmpfs(t, "16m")
	dir := filepath.Join(root, "data")
	filler := filepath.Join(root, "filler")
	writeFiller(t, filler, fillerBytes)

	cmd := exec.Command(os.Args[0], "-test.run=^TestFullHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), fullEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[[16]byte]uint64{}
	sc := bufio.NewScanner(out)
	full := false
	for !full && sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "ack":
			i, _ := strconv.Atoi(f[1])
			seq, _ := strconv.ParseUint(f[2], 10, 64)
			acked[sid(i)] = seq
		case len(f) == 1 && f[0] == "full":
			full = true
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !full {
		t.Fatal("the helper ended before the disk filled")
	}

	// Something else takes the rest of the disk: badger could not even
	// flush what it replays.
	filler2 := filepath.Join(root, "filler2")
	writeFiller(t, filler2, 1<<30)
	opts := Options{Dir: dir, MinFreeBytes: testReserve}
	if _, err := Open(opts); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Open on a disk too full to flush = %v, want ErrDiskFull", err)
	}
	// With room to flush (5 MiB) but not above the reserve, the log
	// opens: reads work, appends are refused until space returns.
	if err := os.Remove(filler2); err != nil {
		t.Fatal(err)
	}
	free, _, err := freeBytes(root)
	if err != nil || free < 5<<20 {
		t.Fatalf("free %d, %v", free, err)
	}
	writeFiller(t, filler2, int(free-5<<20))
	watch := newSpaceWatch()
	opts.OnSpace = watch.on
	l, err := open(opts, testHooks{recheck: 5 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open with room to flush: %v", err)
	}
	checkAcked(t, l, acked)
	if err := fillLog(t, l, acked, 8, 1); !errors.Is(err, ErrDiskFull) || !l.Space().Full {
		t.Fatalf("append below the reserve after a restart = %v (%+v)", err, l.Space())
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filler2); err != nil {
		t.Fatal(err)
	}
	watch.await(t, false)
	if err := fillLog(t, l, acked, 8, 10); err != nil {
		t.Fatalf("append once space was freed: %v", err)
	}
	checkAcked(t, l, acked)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFullHelper is the child of TestRestartOnFullDisk: it appends until
// the disk is full, printing each acknowledged record, then "full", and
// waits to be killed.
func TestFullHelper(t *testing.T) {
	dir := os.Getenv(fullEnv)
	if dir == "" {
		t.Skip("helper process of TestRestartOnFullDisk")
	}
	time.AfterFunc(50*time.Second, func() { os.Exit(3) })
	l, err := Open(Options{Dir: dir, MinFreeBytes: testReserve})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	w := bufio.NewWriter(os.Stdout)
	acked := map[[16]byte]uint64{}
	for i := 0; ; i++ {
		s := sid(i % 8)
		wr := mkWrite(s, acked[s]+1, 1)
		wr.Records[0].Data = append(wr.Records[0].Data, benchData(1024)...)
		if err := l.Append(context.Background(), wr); err != nil {
			if !errors.Is(err, ErrDiskFull) {
				fmt.Fprintln(os.Stderr, "append:", err)
				os.Exit(2)
			}
			fmt.Fprintln(w, "full")
			_ = w.Flush()
			select {}
		}
		acked[s]++
		fmt.Fprintf(w, "ack %d %d\n", i%8, acked[s])
		_ = w.Flush()
	}
}
