package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// crashedDataV1 serves a migrated copy of dataV1 in process, lets work
// write to it, and returns a copy of its directory taken while it ran:
// what a kill -9 at that moment leaves. Work must end with a commit after
// the ones the test damages (the journal then knows they were
// acknowledged).
func crashedDataV1(t *testing.T, work func(h hubAPI)) string {
	t.Helper()
	dir := migratedDataV1(t)
	srv := startDataV1(t, dir)
	work(srv.Hub())
	img := filepath.Join(t.TempDir(), "img")
	if err := copyTree(dir, img); err != nil {
		t.Fatal(err)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return img
}

// hubAPI is what crashedDataV1's work calls.
type hubAPI interface {
	Send(ctx context.Context, from string, id session.ID, env *hubpb.Envelope) (*hubpb.SendResponse, error)
	Open(ctx context.Context, creator string, req *hubpb.OpenRequest) (*hubpb.OpenResponse, error)
	Delegate(ctx context.Context, delegator string, req *hubpb.DelegateRequest) (*hubpb.DelegateResponse, error)
	CloseSession(ctx context.Context, agent string, operator bool, id session.ID, reason string) (*hubpb.SendResponse, error)
}

// logLine returns the first JSON line of a daemon's log with this message.
func logLine(t *testing.T, log, message string) map[string]any {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["message"] == message {
			return m
		}
	}
	return nil
}

// listIDs returns the session ids `hubd sessions list` prints with args.
func listIDs(t *testing.T, addr string, args ...string) []string {
	t.Helper()
	code, out, errs := hubd(t, append([]string{"sessions", "list", "--hub", addr}, args...)...)
	if code != 0 {
		t.Fatalf("sessions list %v: exit %d\n%s%s", args, code, out, errs)
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		ids = append(ids, strings.Fields(line)[0])
	}
	slices.Sort(ids)
	return ids
}

// verdictIDs returns the sessions a verify verdict line names after
// "quarantine N sessions (".
func verdictIDs(line string) []string {
	m := regexp.MustCompile(`quarantine (\d+) sessions \(([^)]*)\)`).FindStringSubmatch(line)
	if m == nil {
		return nil
	}
	ids := strings.Split(m[2], ", ")
	slices.Sort(ids)
	return ids
}

// TestVerifyAsStartReplay: a hub killed after acknowledged writes, whose
// memtable logs are then lost (a power loss can leave badger's unsynced
// log so), is whole again at start: the journal holds those commits. `hubd
// log verify` says so, with the number of commits a start writes again,
// and reports nothing bad; a real start then writes exactly as many and
// serves every session verify counted.
func TestVerifyAsStartReplay(t *testing.T) {
	ctx := context.Background()
	img := crashedDataV1(t, func(h hubAPI) {
		id := session.MustParseID("01a207d6-fcd8-7992-863f-aa1ba1bded14")
		if _, err := h.Send(ctx, "alice", id, &hubpb.Envelope{Type: session.EventText,
			Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "and the refund?"}}}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := h.Open(ctx, "alice", &hubpb.OpenRequest{Type: "conversation@1",
				Participants: []*hubpb.Participant{{Name: "bob", AutoAccept: true}}}); err != nil {
				t.Fatal(err)
			}
		}
	})
	mems, _ := filepath.Glob(filepath.Join(img, "*.mem"))
	for _, m := range mems {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := hubd(t, "log", "verify", "--data", img)
	verdict := regexp.MustCompile(`(?m)^a start would replay (\d+) commits from the journal and serve$`).FindStringSubmatch(out)
	summary := regexp.MustCompile(`(?m)^(\d+) sessions, \d+ records, 0 bad$`).FindStringSubmatch(out)
	if code != 0 || verdict == nil || summary == nil || strings.Contains(out, "BAD") {
		t.Fatalf("log verify: exit %d, want a replay from the journal and nothing bad\n%s%s", code, out, errs)
	}
	d := startDaemon(t, img, "")
	line := logLine(t, d.log(), "wal: rewrote commits the store had lost from the journal")
	if line == nil || strconv.Itoa(int(line["commits"].(float64))) != verdict[1] {
		t.Fatalf("verify said a start replays %s commits; the start logged %v\n%s", verdict[1], line, d.log())
	}
	if n := len(listIDs(t, d.addr)); strconv.Itoa(n) != summary[1] {
		t.Errorf("the start serves %d sessions, verify counted %s", n, summary[1])
	}
}

// TestVerifyAsStartTableCut: a table file of a stopped hub's directory
// cut short, or damaged in its footer, is refused by a start with hubd's
// own message naming the file and what to do, exit 1 and no panic trace;
// `hubd log verify` says a start would refuse, with the same words.
func TestVerifyAsStartTableCut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
	}{
		{"cut short", func(b []byte) []byte { return b[:len(b)/2] }},
		{"footer flipped", func(b []byte) []byte { b[len(b)-2] ^= 0x10; return b }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := migratedDataV1(t)
			tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
			if len(tables) == 0 {
				t.Fatal("no table")
			}
			b, err := os.ReadFile(tables[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(tables[0], tc.damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			said := "store: table " + filepath.Base(tables[0]) + " is damaged: its footer does not hold an index"
			code, errs := refusedStart(t, dir)
			if code != 1 || !strings.Contains(errs, said) || !strings.Contains(errs, "restore "+dir+" from a backup") ||
				strings.Contains(errs, "--on-damage quarantine") || strings.Contains(errs, "panic") || strings.Contains(errs, "goroutine ") {
				t.Fatalf("serve: exit %d, want 1 saying %q and to restore\n%s", code, said, errs)
			}
			code, out, errs := hubd(t, "log", "verify", "--data", dir)
			if code != 1 || !strings.HasPrefix(out, "a start would refuse: ") || !strings.Contains(out, said) ||
				strings.Contains(out+errs, "panic") || strings.Contains(out+errs, "goroutine ") {
				t.Fatalf("log verify: exit %d, want 1 saying a start would refuse: %q\n%s%s", code, said, out, errs)
			}
		})
	}
}

// TestVerifyAsStartBlocks: a byte flipped in a table block of a stopped
// hub's directory, at several places. Whatever a real start then does
// (refuse, or serve with sessions quarantined), `hubd log verify` said it
// would: the same refusal, the same quarantined sessions.
func TestVerifyAsStartBlocks(t *testing.T) {
	acted := 0
	for _, at := range []float64{0.1, 0.3, 0.5} {
		dir := migratedDataV1(t)
		tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
		b, err := os.ReadFile(tables[0])
		if err != nil {
			t.Fatal(err)
		}
		b[int(float64(len(b))*at)] ^= 0x08
		if err := os.WriteFile(tables[0], b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, out, _ := hubd(t, "log", "verify", "--data", dir)
		verdict, _, _ := strings.Cut(out, "\n")
		t.Logf("flip at %.1f: %s", at, verdict)
		if refusal, ok := strings.CutPrefix(verdict, "a start would refuse: "); ok {
			if code, errs := refusedStart(t, dir); code != 1 || !strings.Contains(errs, refusal) {
				t.Errorf("flip at %.1f: verify said %q; the start: exit %d\n%s", at, verdict, code, errs)
			}
			acted++
			continue
		}
		d := startDaemon(t, dir, "")
		got := listIDs(t, d.addr, "--state", "QUARANTINED")
		if want := verdictIDs(verdict); !slices.Equal(got, want) {
			t.Errorf("flip at %.1f: verify said %q; the start quarantined %v", at, verdict, got)
		}
		if len(got) > 0 {
			acted++
		}
		d.stop(syscall.SIGTERM)
	}
	if acted == 0 {
		t.Error("no flip made a start refuse or quarantine: the test does not test")
	}
}

// TestVerifyAsStartQuarantine: a hub killed after a delegation whose
// child's records badger then lost, while the parent's record of it is
// there: the journal cannot write the child again (its commit is half
// there), so acknowledged records are missing. A start refuses, and with
// --on-damage quarantine serves with the child quarantined, listed as
// QUARANTINED from the start; `hubd log verify` says both, and with
// --on-damage quarantine the second.
func TestVerifyAsStartQuarantine(t *testing.T) {
	ctx := context.Background()
	var child session.ID
	img := crashedDataV1(t, func(h hubAPI) {
		p, err := h.Open(ctx, "alice", &hubpb.OpenRequest{Type: "conversation@1",
			Participants: []*hubpb.Participant{{Name: "bob", AutoAccept: true}}})
		if err != nil {
			t.Fatal(err)
		}
		parent := p.GetSession().GetMeta().GetSessionId()
		d, err := h.Delegate(ctx, "alice", &hubpb.DelegateRequest{SessionId: parent, Mode: session.ModeBackground,
			Children: []*hubpb.OpenRequest{{Type: "conversation@1", Participants: []*hubpb.Participant{{Name: "carol", AutoAccept: true}}}}})
		if err != nil {
			t.Fatal(err)
		}
		child = session.MustParseID(d.GetChildren()[0].GetMeta().GetSessionId())
		if _, err := h.CloseSession(ctx, "alice", false, child, "done"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Send(ctx, "alice", session.MustParseID(parent), &hubpb.Envelope{Type: session.EventText,
			Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "thanks"}}}); err != nil {
			t.Fatal(err)
		}
	})
	dropRecords(t, img, child)
	quarantine := "quarantine 1 sessions (" + child.String() + ") and serve the rest"

	code, out, errs := hubd(t, "log", "verify", "--data", img)
	if code != 1 || !strings.HasPrefix(out, "a start would refuse: ") || !strings.Contains(out, "session "+child.String()+" from seq 1: acknowledged records") ||
		!strings.Contains(out, "\nwith --on-damage quarantine, a start would "+quarantine+"\n") {
		t.Fatalf("log verify: exit %d\n%s%s", code, out, errs)
	}
	code, errs = refusedStart(t, img)
	if code != 1 || !strings.Contains(errs, "session "+child.String()+" from seq 1: acknowledged records") || !strings.Contains(errs, "--on-damage quarantine") {
		t.Fatalf("serve: exit %d\n%s", code, errs)
	}
	code, out, errs = hubd(t, "log", "verify", "--data", img, "--on-damage", "quarantine")
	if code != 1 || !strings.HasPrefix(out, "a start would "+quarantine+"\n") || !strings.Contains(out, "BAD "+child.String()) {
		t.Fatalf("log verify --on-damage quarantine: exit %d\n%s%s", code, out, errs)
	}
	d := startDaemon(t, img, "", "--on-damage", "quarantine")
	if got := listIDs(t, d.addr, "--state", "QUARANTINED"); !slices.Equal(got, []string{child.String()}) {
		t.Errorf("sessions list --state QUARANTINED: %v, want the child", got)
	}
	_, all, _ := hubd(t, "sessions", "list", "--hub", d.addr)
	if !regexp.MustCompile(`(?m)^` + child.String() + `\s+conversation@1\s+QUARANTINED\s`).MatchString(all) {
		t.Errorf("sessions list does not show the child as QUARANTINED:\n%s", all)
	}
}

// refusedStart runs `hubd serve` on dir, expecting it to refuse to start,
// and returns its exit code and stderr; one still running after 30 s is
// killed (exit -1).
func refusedStart(t *testing.T, dir string, extra ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hubdBinary(t), append([]string{"serve", "--listen", "127.0.0.1:0", "--data", dir}, extra...)...)
	var errb strings.Builder
	cmd.Stderr = &errb
	_ = cmd.Run()
	return cmd.ProcessState.ExitCode(), errb.String()
}

// dropRecords deletes a session's records and head from the badger store
// in dir, as damage would (wal's format: kind 0x02 records, 0x03 head).
func dropRecords(t *testing.T, dir string, id session.ID) {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(txn *badger.Txn) error {
		for _, kind := range []byte{0x02, 0x03} {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: append([]byte{kind}, id[:]...)})
			var keys [][]byte
			for it.Rewind(); it.Valid(); it.Next() {
				keys = append(keys, it.Item().KeyCopy(nil))
			}
			it.Close()
			for _, k := range keys {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
