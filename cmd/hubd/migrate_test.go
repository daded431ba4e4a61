package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/exitcode"
	"github.com/hubd/hubd/internal/fakeclock"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal"
)

// dataV1 is a data directory written by a release of log format version
// 1: a closed pipeline with context, a custom event, a
// packet with usage, a question, an answer and task progress with a
// traceparent; an open triage session with a handoff and expectations; a
// rejected invite; a timed-out discussion; a closed consulting session; a
// child session. It is never modified: tests copy it.
const dataV1 = "testdata/data-v1"

// dataV1Export is what a hub serving dataV1 after migration exports:
// every envelope of every session as hubpb.MarshalJSON lines, sessions in
// id order. Like dataV1 it is never regenerated; every value in it was
// checked against what the version-1 release exported, and the one change
// since, the call ids the hub stamps on every envelope (derived from the
// session's meta, not stored), was checked to be the only difference.
const dataV1Export = "testdata/data-v1.export.jsonl"

// dataV1Now is the fake clock's time for a hub serving dataV1: just after
// its last record, with no timer due, so the hub writes nothing by itself.
var dataV1Now = time.Date(2026, 11, 23, 9, 57, 42, 0, time.UTC)

// copyDataV1 copies dataV1 into a fresh directory.
func copyDataV1(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.CopyFS(dir, os.DirFS(dataV1)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// logCmd runs "hubd log args..." and returns its exit code and output.
func logCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errs bytes.Buffer
	err := runLog(context.Background(), args, &out, &errs)
	return exitcode.Report("hubd", err, &errs), out.String(), errs.String()
}

// TestMigrateLogV1 is how we know that version-1 logs still open: the
// data directory of the previous release refuses to open until migrated,
// migrates with `hubd log migrate`, and then serves every session with
// every envelope as that release stored it. It must run forever.
func TestMigrateLogV1(t *testing.T) {
	dir := copyDataV1(t)
	hint := "run `hubd log migrate --data " + dir + "`"
	if _, err := wal.Open(wal.Options{Dir: dir}); !errors.Is(err, wal.ErrFormat) || !strings.Contains(err.Error(), hint) {
		t.Fatalf("opening an unmigrated version-1 log: %v; want ErrFormat saying %s", err, hint)
	}
	if code, out, errs := logCmd(t, "verify", "--data", dir); code != 1 || !strings.Contains(out, "a start would refuse: ") || !strings.Contains(out, hint) {
		t.Fatalf("log verify before migrating: exit %d, %q%q; want exit 1 saying a start would refuse: %s", code, out, errs, hint)
	}

	code, out, errs := logCmd(t, "migrate", "--data", dir)
	summary := regexp.MustCompile(`^migrated \S+ from format version 1 to 3: 6 sessions, 27 records \(33 values rewritten\), took \S+\n$`)
	if code != 0 || !summary.MatchString(out) {
		t.Fatalf("log migrate: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := logCmd(t, "migrate", "--data", dir); code != 0 || !strings.Contains(out, "already has format version 3") {
		t.Fatalf("log migrate again: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := logCmd(t, "verify", "--data", dir); code != 0 || out != "a start would serve\n6 sessions, 27 records, 0 bad\n" {
		t.Fatalf("log verify after migrating: exit %d\n%s%s", code, out, errs)
	}

	srv := startDataV1(t, dir)
	checkDataV1Sessions(t, srv.Feed())
	want, err := os.ReadFile(dataV1Export)
	if err != nil {
		t.Fatal(err)
	}
	if got := exportAll(t, srv.Feed()); !bytes.Equal(got, want) {
		t.Fatalf("the migrated log exports\n%s\nwant (%s)\n%s", got, dataV1Export, want)
	}
	checkDataV1Live(t, srv, dir)
}

// startDataV1 serves the data directory dir on a fake clock set to
// dataV1Now; the server is shut down at the end of the test.
func startDataV1(t *testing.T, dir string) *server.Server {
	t.Helper()
	srv, err := server.Start(context.Background(), server.Config{Listen: "127.0.0.1:0", DataDir: dir,
		Hub: hub.Config{Clock: fakeclock.New(dataV1Now)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return srv
}

// checkDataV1Sessions checks that every session of dataV1 hydrated, in
// the state the version-1 release left it.
func checkDataV1Sessions(t *testing.T, h *feed.Feed) {
	t.Helper()
	if q := h.Hub().Quarantined(); len(q) != 0 {
		t.Fatalf("quarantined: %v", q)
	}
	want := []string{
		`01a207d6-fcd1-7300-b3f5-b7a080707647 workflow@1 CLOSED "approved" 11`,
		`01a207d6-fcd8-7992-863f-aa1ba1bded14 workflow@1 OPEN "" 5`,
		`01a207d6-fcda-7c6f-8947-d97513156efa conversation@1 CLOSED "invite_rejected" 3`,
		`01a207d6-fcdc-7085-8036-54b5274a7491 discussion@1 EXPIRED "invite_timeout" 2`,
		`01a207d6-fcdc-7ca9-ae5f-649624a148c3 consulting@1 CLOSED "explicit_close" 4`,
		`01a207d6-fcde-753d-b7f4-fe25d03bebb7 conversation@1 OPEN "" 2`,
	}
	infos, _, err := h.List(context.Background(), server.DevOperator, true, feed.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, i := range infos {
		m := i.GetMeta()
		got = append(got, fmt.Sprintf("%s %s %s %q %d", m.GetSessionId(), m.GetType(), i.GetState(), i.GetCloseReason(), i.GetSeq()))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("sessions:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// exportAll returns every envelope of every session, as an operator reads
// them, one hubpb.MarshalJSON line each, sessions in id order.
func exportAll(t *testing.T, h *feed.Feed) []byte {
	t.Helper()
	ctx := context.Background()
	infos, _, err := h.List(context.Background(), server.DevOperator, true, feed.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, info := range infos {
		id := session.MustParseID(info.GetMeta().GetSessionId())
		envs, _, err := h.ReadLog(ctx, server.DevOperator, true, id, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(envs) != int(info.GetSeq()) {
			t.Fatalf("session %v: read %d envelopes, its seq is %d", id, len(envs), info.GetSeq())
		}
		for _, e := range envs {
			line, err := hubpb.MarshalJSON(e)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// checkDataV1Live sends into the migrated triage session, whose turn is
// back with alice, then restarts the hub and checks that replaying the log
// gives the state the live hub had.
func checkDataV1Live(t *testing.T, srv *server.Server, dir string) {
	t.Helper()
	ctx := context.Background()
	id := session.MustParseID("01a207d6-fcd8-7992-863f-aa1ba1bded14")
	resp, err := srv.Hub().Send(ctx, "alice", id, &hubpb.Envelope{Type: session.EventText,
		Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "and the refund?"}}})
	if err != nil || resp.GetSeq() != 6 {
		t.Fatalf("send into the migrated session: %v, %v", resp, err)
	}
	live, err := srv.Hub().Snapshot(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	replayed, err := startDataV1(t, dir).Hub().Snapshot(ctx, id)
	if err != nil || !bytes.Equal(replayed, live) {
		t.Fatalf("after a restart the session is\n%s (%v)\nlive it was\n%s", replayed, err, live)
	}
}

// TestLogMigrateUsage checks the command's arguments and exit codes.
func TestLogMigrateUsage(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"migrate", "--data", missing}, 1, "no store to migrate"},
		{[]string{"migrate", "extra"}, 2, "unexpected argument"},
		{[]string{"migrate", "--bogus"}, 2, "bogus"},
		{[]string{"migrate", "--help"}, 0, ""},
		{[]string{"rewrite"}, 2, "unknown command"},
	} {
		code, _, errs := logCmd(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.err) {
			t.Errorf("log %v: exit %d, %q; want %d, %q", tc.args, code, errs, tc.code, tc.err)
		}
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("log migrate of a missing directory created it: %v", err)
	}
}
