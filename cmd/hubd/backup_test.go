package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/hubd/hubd/session"
)

// TestE2EBackupLiveHub: a hub under load is backed up without stopping
// (`hubd log backup`), verified live (`hubd log verify --hub`), and the
// backup restored into a new directory (`hubd log restore`), where a hub
// serves every acknowledged send, with the same export as the live one.
// Outsiders may not take a backup, a restore never overwrites a store,
// and a damaged backup file is refused with nothing left behind.
func TestE2EBackupLiveHub(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "")
	load := buildBinary(t, "./cmd/hubload")
	dir := t.TempDir()
	acked := filepath.Join(dir, "acked.txt")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lg, lgOut := startLoad(t, ctx, load, "--hub", d.addr, "--agents", "8", "--sessions", "4", "--duration", "60s",
		"--warmup", "0s", "--verify", acked)
	for countLines(acked) < 200 && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}

	// Under load: a backup and a live verify, both consistent snapshots.
	during := filepath.Join(dir, "during.backup")
	if code, out, errs := hubd(t, "log", "backup", during, "--hub", d.addr); code != 0 || !strings.Contains(out, "backup: "+during+": ") {
		t.Fatalf("log backup under load: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := hubd(t, "log", "verify", "--hub", d.addr)
	if code != 0 || !strings.Contains(out, "note: verifying a backup of the hub at "+d.addr) || !regexp.MustCompile(`(?m)^\d+ sessions, \d+ records, 0 bad$`).MatchString(out) {
		t.Fatalf("log verify --hub under load: exit %d\n%s%s", code, out, errs)
	}
	lg.Process.Signal(os.Interrupt)
	lg.Wait()
	n := countLines(acked)
	if n < 200 {
		t.Fatalf("only %d acknowledged sends\n%s", n, lgOut.String())
	}
	restored := filepath.Join(dir, "restored-during")
	if code, out, errs := hubd(t, "log", "restore", "--data", restored, during); code != 0 || !strings.Contains(out, " 0 bad\n") {
		t.Fatalf("log restore of the backup taken under load: exit %d\n%s%s", code, out, errs)
	}

	// Quiet: a backup holds every acknowledged send.
	after := filepath.Join(dir, "after.backup")
	if code, out, errs := hubd(t, "log", "backup", after, "--hub", d.addr); code != 0 {
		t.Fatalf("log backup: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := hubd(t, "log", "backup", after, "--hub", d.addr); code != 2 || !strings.Contains(errs, "already exists") {
		t.Fatalf("log backup over an existing file: exit %d, %s", code, errs)
	}
	data := filepath.Join(dir, "restored")
	if code, out, errs := hubd(t, "log", "restore", "--data", data, after); code != 0 {
		t.Fatalf("log restore: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := hubd(t, "log", "restore", "--data", data, after); code != 2 || !strings.Contains(errs, "is not empty") {
		t.Fatalf("log restore over a store: exit %d, %s", code, errs)
	}
	_, liveExport, _ := hubd(t, "sessions", "export", "--hub", d.addr)
	r := startDaemon(t, data, "")
	_, restoredExport, _ := hubd(t, "sessions", "export", "--hub", r.addr)
	if liveExport == "" || restoredExport != liveExport {
		t.Fatalf("export of the restored hub differs from the live one (%d vs %d bytes)", len(restoredExport), len(liveExport))
	}
	check, err := exec.CommandContext(ctx, load, "--hub", r.addr, "--check", acked).CombinedOutput()
	if first := strings.SplitN(string(check), "\n", 2)[0]; err != nil || first != fmt.Sprintf("acked %d, found %d", n, n) {
		t.Fatalf("check on the restored hub: %v\n%s", err, check)
	}
	// The restored hub takes new work.
	if out, err := exec.CommandContext(ctx, load, "--hub", r.addr, "--agents", "2", "--sessions", "1", "--duration", "1s", "--warmup", "0s").CombinedOutput(); err != nil {
		t.Fatalf("hubload on the restored hub: %v\n%s", err, out)
	}

	// Refusals.
	mine := filepath.Join(dir, "alice.backup")
	if code, _, errs := hubd(t, "log", "backup", mine, "--hub", d.addr, "--as", "alice"); code == 0 || !strings.Contains(errs, "PERMISSION_DENIED") {
		t.Fatalf("a backup by a non-operator: exit %d, %s", code, errs)
	}
	if _, err := os.Stat(mine); err == nil {
		t.Fatal("a refused backup left a file")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*partial*")); len(left) > 0 {
		t.Fatalf("partial files left: %v", left)
	}
	b, err := os.ReadFile(after)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x40
	damaged := filepath.Join(dir, "damaged.backup")
	os.WriteFile(damaged, b, 0o644)
	sum, _ := os.ReadFile(after + ".sha256")
	os.WriteFile(damaged+".sha256", sum, 0o644)
	if code, _, errs := hubd(t, "log", "restore", "--data", filepath.Join(dir, "from-damaged"), damaged); code == 0 || !strings.Contains(errs, "sha256") {
		t.Fatalf("restore of a damaged backup: exit %d, %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "from-damaged")); err == nil {
		t.Fatal("a refused restore left a directory")
	}
}

// TestRestoreDigestAndUndo: the digest `hubd log backup` prints is given
// back to `hubd log restore --sha256` (the file beside the backup gone, as
// an operator who kept only the digest has it): a match restores, a
// mismatch refuses before writing anything, from a file or from stdin. A
// backup that loads but does not verify is refused and what the restore
// wrote is removed: a directory it made, with the parents it made, or the
// contents of an empty directory that was there before, which stays.
func TestRestoreDigestAndUndo(t *testing.T) {
	dir := migratedDataV1(t)
	d := startDaemon(t, dir, "")
	tmp := t.TempDir()
	file := filepath.Join(tmp, "hub.backup")
	code, out, errs := hubd(t, "log", "backup", file, "--hub", d.addr)
	m := regexp.MustCompile(`sha256 ([0-9a-f]{64}) `).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("log backup: exit %d\n%s%s", code, out, errs)
	}
	d.stop(syscall.SIGTERM)
	if err := os.Remove(file + ".sha256"); err != nil {
		t.Fatal(err)
	}
	sum := m[1]
	wrong := strings.Repeat("0", 64)
	backup, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}

	if code, out, errs := hubd(t, "log", "restore", "--data", filepath.Join(tmp, "ok"), "--sha256", sum, file); code != 0 || !strings.Contains(out, " 0 bad\n") {
		t.Fatalf("restore with the printed digest: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runBinary(t, hubdBinary(t), string(backup), "log", "restore", "--data", filepath.Join(tmp, "ok-stdin"), "--sha256", sum, "-"); code != 0 {
		t.Fatalf("restore from stdin with the printed digest: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := hubd(t, "log", "restore", "--data", filepath.Join(tmp, "x"), "--sha256", "abc", file); code != 2 || !strings.Contains(errs, "64 hex digits") {
		t.Errorf("a malformed digest: exit %d, %s", code, errs)
	}
	empty := filepath.Join(tmp, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{filepath.Join(tmp, "new", "data"), empty} {
		code, _, errs := hubd(t, "log", "restore", "--data", target, "--sha256", wrong, file)
		if code != 1 || !strings.Contains(errs, "has sha256 "+sum+", --sha256 says "+wrong) {
			t.Errorf("restore into %s with another digest: exit %d, %s", target, code, errs)
		}
		code, _, errs = runBinary(t, hubdBinary(t), string(backup), "log", "restore", "--data", target, "--sha256", wrong, "-")
		if code != 1 || !strings.Contains(errs, "--sha256 says "+wrong) {
			t.Errorf("restore from stdin into %s with another digest: exit %d, %s", target, code, errs)
		}
	}
	checkLeft := func(what string) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(tmp, "new")); err == nil {
			t.Errorf("%s: the directories it made are left", what)
		}
		if ents, err := os.ReadDir(empty); err != nil || len(ents) > 0 {
			t.Errorf("%s: the empty directory holds %v (%v), want it there and empty", what, ents, err)
		}
	}
	checkLeft("refused for its digest")

	bad := damagedBackup(t, dir, filepath.Join(tmp, "bad.backup"))
	for _, target := range []string{filepath.Join(tmp, "new", "data"), empty} {
		code, out, errs := hubd(t, "log", "restore", "--data", target, bad)
		if code != 1 || !strings.Contains(out, "BAD 01a207d6-fcd8-7992-863f-aa1ba1bded14") || !strings.Contains(errs, "does not verify") {
			t.Errorf("restore of a backup that does not verify into %s: exit %d\n%s%s", target, code, out, errs)
		}
	}
	checkLeft("refused for what it holds")
}

// damagedBackup writes to file a backup of a copy of the stopped store in
// dir with one record of a session deleted (a gap), which loads but does
// not verify.
func damagedBackup(t *testing.T, dir, file string) string {
	t.Helper()
	cp := filepath.Join(t.TempDir(), "data")
	if err := copyTree(dir, cp); err != nil {
		t.Fatal(err)
	}
	db, err := badger.Open(badger.DefaultOptions(cp).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	id := session.MustParseID("01a207d6-fcd8-7992-863f-aa1ba1bded14")
	key := binary.BigEndian.AppendUint64(append([]byte{0x02}, id[:]...), 2) // wal's record key, seq 2
	if err := db.Update(func(txn *badger.Txn) error { return txn.Delete(key) }); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := db.Backup(f, 0); err != nil {
		t.Fatal(err)
	}
	return file
}
