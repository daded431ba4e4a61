package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
)

// drainTimeout is the --drain-timeout of the storage tests' hubs.
const drainTimeout = 3 * time.Second

// storageOutage runs the real hubd on data, sends texts until some are
// acknowledged, calls breakStorage, and checks what the hub promises when
// its storage fails under it: the next send and every later one are
// refused with STORAGE_FAILED, health (gRPC and /healthz) says NOT_SERVING
// for writes, the metrics count it, the log says it at error level, and
// SIGTERM ends the process within the drain deadline, non-zero, saying
// the log was not closed cleanly. It returns the acknowledged texts and
// the session.
func storageOutage(t *testing.T, data string, breakStorage func(), extra ...string) (acked []string, id string) {
	t.Helper()
	d := startDaemon(t, data, "", append([]string{"--http", "127.0.0.1:0", "--drain-timeout", drainTimeout.String()}, extra...)...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alice, err := agentsdk.Dial(ctx, d.addr, agentsdk.Options{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		text := fmt.Sprintf("acknowledged %d", i)
		if _, err := alice.SendText(ctx, s.ID(), text); err != nil {
			t.Fatalf("send before the failure: %v", err)
		}
		acked = append(acked, text)
	}
	breakStorage()
	for i := range 5 {
		_, err := alice.SendText(ctx, s.ID(), fmt.Sprintf("refused %d", i))
		if !errors.Is(err, agentsdk.ErrStorageFailed) {
			t.Fatalf("send %d after the storage failed: %v; want STORAGE_FAILED", i, err)
		}
		if i == 0 {
			t.Logf("the first send after the failure: %v", err)
		}
	}
	if _, err := alice.GetSession(ctx, s.ID()); err != nil {
		t.Errorf("a read after the storage failed: %v", err)
	}
	checkNotServing(t, d)
	began := time.Now()
	d.stop(syscall.SIGTERM)
	took := time.Since(began)
	if code := d.cmd.ProcessState.ExitCode(); code == 0 || took > drainTimeout+5*time.Second ||
		!strings.Contains(d.log(), "log not closed cleanly") {
		t.Fatalf("SIGTERM: exit %d after %v (the drain deadline is %v); want non-zero, in time, saying the log was not closed cleanly:\n%s",
			code, took.Round(time.Millisecond), drainTimeout, d.log())
	}
	return acked, s.ID()
}

// checkNotServing checks the hub's health and metrics once its storage
// failed.
func checkNotServing(t *testing.T, d *daemon) {
	t.Helper()
	base := "http://" + d.httpAddr(t)
	status, body := httpGet(t, base+"/healthz")
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "STORAGE_FAILED") {
		t.Errorf("/healthz: %d %q; want 503 naming STORAGE_FAILED", status, body)
	}
	_, metrics := httpGet(t, base+"/metrics")
	for _, want := range []string{"hubd_wal_storage_failed 1", "hubd_wal_append_errors_total "} {
		if !strings.Contains(metrics, want) || strings.Contains(metrics, "hubd_wal_append_errors_total 0\n") {
			t.Errorf("/metrics lacks %q or counts no append error:\n%s", want, grepLines(metrics, "hubd_wal_"))
		}
	}
	conn, err := grpc.NewClient(d.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	h, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{Service: server.WriteHealth})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("gRPC health of %s: %v, %v; want NOT_SERVING", server.WriteHealth, h, err)
	}
	if !strings.Contains(d.log(), `"level":"error"`) || !strings.Contains(d.log(), "storage failed") {
		t.Errorf("the hub's log does not say at error level that its storage failed:\n%s", d.log())
	}
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// checkRestored starts the real hubd on data and checks that the
// session's log holds every acknowledged text.
func checkRestored(t *testing.T, data, id string, acked []string) {
	t.Helper()
	d := startDaemon(t, data, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alice, err := agentsdk.Dial(ctx, d.addr, agentsdk.Options{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	found := map[string]bool{}
	for from := uint64(1); ; {
		page, err := alice.Raw().ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: id, FromSeq: from})
		if err != nil {
			t.Fatalf("reading the restored log: %v", err)
		}
		for _, e := range page.GetEnvelopes() {
			found[e.GetText().GetText()] = true
		}
		if page.GetNextSeq() == 0 || len(page.GetEnvelopes()) == 0 {
			break
		}
		from = page.GetNextSeq()
	}
	for _, text := range acked {
		if !found[text] {
			t.Errorf("acknowledged %q is missing after the restore", text)
		}
	}
	d.stop(syscall.SIGTERM)
}

// TestE2EStorageRemoved: the data directory removed under a running hub
// (rm -rf, as a mistaken clean-up script would) is noticed at the next
// commit; SIGTERM ends in time; and on the directory restored (here from
// hard links made just before the removal, as a lost mount coming back
// would be) every acknowledged send is found.
func TestE2EStorageRemoved(t *testing.T) {
	base := t.TempDir()
	data, saved := filepath.Join(base, "data"), filepath.Join(base, "saved")
	acked, id := storageOutage(t, data, func() {
		if out, err := exec.Command("cp", "-al", data, saved).CombinedOutput(); err != nil {
			t.Fatalf("cp -al: %v\n%s", err, out)
		}
		if err := os.RemoveAll(data); err != nil {
			t.Fatal(err)
		}
	})
	if err := os.Rename(saved, data); err != nil {
		t.Fatal(err)
	}
	checkRestored(t, data, id, acked)
}

// TestE2EStorageReadOnly: the data directory's file system turns
// read-only under a running hub (ext4's errors=remount-ro after an error,
// forced here through /sys/fs/ext4/<dev>/trigger_fs_error on a loop
// device): the same promises hold, and once mounted read-write again
// every acknowledged send is there. It needs root and loop devices, and
// is skipped without them.
func TestE2EStorageReadOnly(t *testing.T) {
	dev, mnt := ext4Loop(t)
	data := filepath.Join(mnt, "data")
	acked, id := storageOutage(t, data, func() {
		trigger := filepath.Join("/sys/fs/ext4", filepath.Base(dev), "trigger_fs_error")
		if err := os.WriteFile(trigger, []byte("hubd storage test\n"), 0o200); err != nil {
			t.Fatalf("%s: %v", trigger, err)
		}
		waitReadOnly(t, mnt)
	}, "--min-free-disk", "8MiB") // a small file system
	remount(t, dev, mnt)
	checkRestored(t, data, id, acked)
}

// ext4Loop makes an ext4 file system on a loop device over a file and
// mounts it with errors=remount-ro; it skips the test where that cannot
// be done (not root, no loop devices, no mkfs.ext4).
func ext4Loop(t *testing.T) (dev, mnt string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for a loop device")
	}
	for _, tool := range []string{"losetup", "mkfs.ext4", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "fs.img"), filepath.Join(dir, "mnt")
	if err := os.Truncate(createFile(t, img), 128<<20); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", img).Output()
	if err != nil {
		t.Skipf("no loop device: %v", err)
	}
	dev = strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", dev).Run() })
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", dev).CombinedOutput(); err != nil {
		t.Skipf("mkfs.ext4: %v\n%s", err, out)
	}
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-o", "errors=remount-ro", dev, mnt).CombinedOutput(); err != nil {
		t.Skipf("mount: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	if _, err := os.Stat(filepath.Join("/sys/fs/ext4", filepath.Base(dev), "trigger_fs_error")); err != nil {
		t.Skipf("this kernel cannot force an ext4 error: %v", err)
	}
	return dev, mnt
}

// waitReadOnly waits until the kernel has turned the file system at mnt
// read-only (it does so from a work queue, a moment after the error).
func waitReadOnly(t *testing.T, mnt string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		err := os.WriteFile(filepath.Join(mnt, "probe"), nil, 0o644)
		if errors.Is(err, syscall.EROFS) {
			return
		}
	}
	t.Fatalf("%s did not turn read-only", mnt)
}

func createFile(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

// remount mounts dev on mnt read-write again, as an operator would once
// the cause is repaired.
func remount(t *testing.T, dev, mnt string) {
	t.Helper()
	if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
		t.Fatalf("umount: %v\n%s", err, out)
	}
	if out, err := exec.Command("mount", dev, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v\n%s", err, out)
	}
}
