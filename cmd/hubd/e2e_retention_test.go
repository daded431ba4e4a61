package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
)

// endPair opens a conversation of alice and bob, has alice speak and
// closes it, and returns its id.
func endPair(t *testing.T, alice hubsvc.HubClient, req *hubpb.OpenRequest) string {
	t.Helper()
	ctx := context.Background()
	if req == nil {
		req = &hubpb.OpenRequest{}
	}
	req.Type, req.Participants = "conversation", []*hubpb.Participant{{Name: "bob", AutoAccept: true}}
	resp, err := alice.Open(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetSession().GetMeta().GetSessionId()
	if _, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: "text",
		Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "hello " + id}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Close(ctx, &hubpb.CloseRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestE2EPurgeFromCLIAndHTTP purges a session with sessions purge on the
// real binary: reads answer PURGED over gRPC (with when and the archive
// in ErrorInfo), HTTP and the CLI, after a restart too; log archive read
// prints its envelopes; an agent may not purge, an open session is
// refused with a precise reason, and a second session is purged over
// HTTP.
func TestE2EPurgeFromCLIAndHTTP(t *testing.T) {
	data := t.TempDir()
	d := startDaemon(t, data, "", "--http", "127.0.0.1:0")
	hub := []string{"--hub", d.addr}
	alice := devClient(t, d.addr, "alice")
	id := endPair(t, alice, nil)
	other := endPair(t, alice, nil)
	open := openPair(t, alice)

	if code, _, errs := hubd(t, appendArgs(hub, "sessions", "purge", id, "--as", "alice")...); code != 1 || !strings.HasSuffix(errs, "(PERMISSION_DENIED)\n") {
		t.Errorf("sessions purge by an agent: exit %d, %q", code, errs)
	}
	if code, _, errs := hubd(t, appendArgs(hub, "sessions", "purge", open, "--as", "operator")...); code != 1 ||
		!strings.Contains(errs, "only an ended session is purged (BAD_LIFECYCLE_TRANSITION)") {
		t.Errorf("sessions purge of an open session: exit %d, %q", code, errs)
	}
	out := mustHubd(t, "", appendArgs(hub, "sessions", "purge", id, "--as", "operator")...)
	file := "hubd-archive-" + time.Now().UTC().Format("2006-01-02") + ".hubarc"
	if !strings.HasPrefix(out, "purged "+id+" at ") || !strings.HasSuffix(out, ", archived in "+file+"\n") {
		t.Fatalf("sessions purge printed %q", out)
	}
	checkPurged := func(d *daemon) {
		t.Helper()
		_, err := dialAs(t, d.addr, "alice").GetSession(context.Background(), id)
		var e *agentsdk.Error
		if !errors.Is(err, agentsdk.ErrPurged) || !errors.As(err, &e) || e.Metadata["archive"] != file || e.Metadata["purged_at"] == "" {
			t.Fatalf("GetSession of the purged session: %v", err)
		}
		if code, _, errs := hubd(t, "sessions", "show", id, "--hub", d.addr, "--as", "alice"); code != 1 || !strings.HasSuffix(errs, "(PURGED)\n") {
			t.Errorf("sessions show of the purged session: exit %d, %q", code, errs)
		}
		req, _ := http.NewRequest("GET", "http://"+d.httpAddr(t)+"/v1/sessions/"+id, nil)
		req.Header.Set("X-Hubd-Agent", "alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || !strings.Contains(string(b), `"reason":"PURGED"`) || !strings.Contains(string(b), file) {
			t.Errorf("GET of the purged session: %d %s", resp.StatusCode, b)
		}
	}
	checkPurged(d)
	read := mustHubd(t, "", "log", "archive", "read", filepath.Join(data, "archive", file))
	if !strings.HasPrefix(read, "session "+id+" conversation@1 creator alice ended ") || !strings.Contains(read, " alice        text\n") {
		t.Errorf("log archive read printed:\n%s", read)
	}
	js := mustHubd(t, "", "log", "archive", "read", "--json", filepath.Join(data, "archive", file))
	if !strings.Contains(js, `"text":"hello `+id+`"`) {
		t.Errorf("log archive read --json printed:\n%s", js)
	}

	req, _ := http.NewRequest("POST", "http://"+d.httpAddr(t)+"/v1/sessions/"+other+":purge", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hubd-Agent", "operator")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"archive":"`+file+`"`) {
		t.Fatalf("POST :purge: %d %s", resp.StatusCode, b)
	}

	d.stop(syscall.SIGKILL)
	d = startDaemon(t, data, "", "--http", "127.0.0.1:0")
	checkPurged(d)

	// An audit brings it back from the archive, the hub stopped.
	d.stop(syscall.SIGTERM)
	if code, _, errs := hubd(t, "log", "archive", "import", "--data", data, "--session", open, filepath.Join(data, "archive", file)); code != 2 ||
		!strings.Contains(errs, "holds no session "+open) {
		t.Errorf("log archive import of a session the file lacks: exit %d, %q", code, errs)
	}
	out = mustHubd(t, "", "log", "archive", "import", "--data", data, "--session", id, filepath.Join(data, "archive", file))
	if !strings.HasPrefix(out, "imported "+id+" (") {
		t.Errorf("log archive import printed %q", out)
	}
	d = startDaemon(t, data, "", "--retain-ended", "1s", "--retention-sweep", "50ms")
	s, err := dialAs(t, d.addr, "alice").GetSession(context.Background(), id)
	if err != nil || s.GetState() != agentsdk.StateClosed || s.GetMeta().GetLabels()["imported_from"] != file {
		t.Fatalf("the imported session: %v %v", s, err)
	}
	if code, out, errs := hubd(t, "sessions", "replay", id, "--hub", d.addr); code != 0 || !strings.HasSuffix(out, "the replay equals the live state\n") {
		t.Errorf("sessions replay of the imported session: exit %d\n%s%s", code, out, errs)
	}
	if _, err := dialAs(t, d.addr, "alice").GetSession(context.Background(), other); !errors.Is(err, agentsdk.ErrPurged) {
		t.Errorf("the session not imported: %v", err)
	}
}

// TestE2ERetentionPurgesAcrossKill9 lets a hub purge ended sessions by
// their retention and kills it with SIGKILL while it does: after a
// restart every session is whole or purged (none half), the log verifies,
// the archive reads, every purged session is in it, and the sweep of the
// restarted hub purges the rest.
func TestE2ERetentionPurgesAcrossKill9(t *testing.T) {
	data := t.TempDir()
	d := startDaemon(t, data, "", "--fsync=false", "--retain-ended", "1s", "--retention-sweep", "100ms")
	alice := devClient(t, d.addr, "alice")
	const n = 300
	var ids []string
	for range n {
		ids = append(ids, endPair(t, alice, nil))
	}
	first, err := alice.GetSession(context.Background(), &hubpb.GetSessionRequest{SessionId: ids[n-1]})
	if err != nil {
		t.Fatal(err)
	}
	seq := first.GetSeq() // every session's: they are alike
	keep := endPair(t, alice, &hubpb.OpenRequest{Retention: durationpb.New(time.Hour)})
	archiveDir := filepath.Join(data, "archive")
	// The sweep purges in id order, batch by batch: once the first
	// session is purged, the kill lands in the middle of the rest.
	watch := dialAs(t, d.addr, "alice")
	waitFor(t, "the first purge", 10*time.Second, func() bool {
		_, err := watch.GetSession(context.Background(), ids[0])
		return errors.Is(err, agentsdk.ErrPurged)
	})
	d.stop(syscall.SIGKILL)

	d = startDaemon(t, data, "") // keeps everything: what the kill left stays
	c := dialAs(t, d.addr, "alice")
	purged := map[string]bool{}
	for _, id := range ids {
		s, err := c.GetSession(context.Background(), id)
		switch {
		case errors.Is(err, agentsdk.ErrPurged):
			purged[id] = true
		case err != nil:
			t.Fatalf("session %s after the kill: %v", id, err)
		case s.GetSeq() != seq || s.GetState() != agentsdk.StateClosed:
			t.Fatalf("session %s after the kill: seq %d, %s; want %d, CLOSED", id, s.GetSeq(), s.GetState(), seq)
		default:
			log, err := c.ReadLog(context.Background(), id, 1, 100)
			if err != nil || uint64(len(log)) != seq {
				t.Fatalf("session %s after the kill: %d envelopes read (%v), want %d", id, len(log), err, seq)
			}
		}
	}
	t.Logf("%d of %d sessions purged before the kill", len(purged), n)
	if _, err := c.GetSession(context.Background(), keep); err != nil {
		t.Fatalf("the session kept an hour: %v", err)
	}
	archived := map[string]bool{}
	ents, _ := os.ReadDir(archiveDir)
	for _, e := range ents {
		out := mustHubd(t, "", "log", "archive", "read", filepath.Join(archiveDir, e.Name()))
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[0] == "session" {
				archived[f[1]] = true
			}
		}
	}
	for id := range purged {
		if !archived[id] {
			t.Errorf("session %s purged but not in the archive", id)
		}
	}
	d.stop(syscall.SIGTERM)
	if code, out, errs := hubd(t, "log", "verify", "--data", data); code != 0 {
		t.Fatalf("log verify after the purge and the kill: exit %d\n%s%s", code, out, errs)
	}
	d = startDaemon(t, data, "", "--retain-ended", "1s", "--retention-sweep", "100ms")
	c = dialAs(t, d.addr, "alice")
	waitFor(t, "every session purged", 10*time.Second, func() bool {
		_, err := c.GetSession(context.Background(), ids[n-1])
		return errors.Is(err, agentsdk.ErrPurged)
	})
	if _, err := c.GetSession(context.Background(), keep); err != nil {
		t.Fatalf("the session kept an hour: %v", err)
	}
}
