package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hubd/hubd/agentsdk"
)

// TestE2EImportIntoTheRunningHub lets the retention sweep of the real
// binary purge two sessions, then brings one back with sessions import
// and the other over HTTP, the hub running: each reads again at once
// (GetSession, sessions show, the log), labelled imported_from; an agent
// may not import, a path is refused, and a second import of a session is
// refused, importing nothing.
func TestE2EImportIntoTheRunningHub(t *testing.T) {
	data := t.TempDir()
	d := startDaemon(t, data, "", "--retain-ended", "1s", "--retention-sweep", "50ms", "--http", "127.0.0.1:0")
	hub := []string{"--hub", d.addr}
	alice := devClient(t, d.addr, "alice")
	id, other := endPair(t, alice, nil), endPair(t, alice, nil)
	c := dialAs(t, d.addr, "alice")
	waitFor(t, "the purge of both sessions", 10*time.Second, func() bool {
		_, err := c.GetSession(context.Background(), id)
		_, err2 := c.GetSession(context.Background(), other)
		return errors.Is(err, agentsdk.ErrPurged) && errors.Is(err2, agentsdk.ErrPurged)
	})
	_, err := c.GetSession(context.Background(), id)
	var e *agentsdk.Error
	if !errors.As(err, &e) || e.Metadata["archive"] == "" {
		t.Fatalf("GetSession of the purged session: %v, want its archive named", err)
	}
	file := e.Metadata["archive"]

	if code, _, errs := hubd(t, appendArgs(hub, "sessions", "import", file, "--as", "alice")...); code != 1 || !strings.HasSuffix(errs, "(PERMISSION_DENIED)\n") {
		t.Errorf("sessions import by an agent: exit %d, %q", code, errs)
	}
	if code, _, errs := hubd(t, appendArgs(hub, "sessions", "import", "../"+file, "--as", "operator")...); code != 1 ||
		!strings.Contains(errs, "not a path (MALFORMED)") {
		t.Errorf("sessions import of a path: exit %d, %q", code, errs)
	}
	out := mustHubd(t, "", appendArgs(hub, "sessions", "import", file, "--session", id, "--as", "operator")...)
	if out != "imported "+id+" (4 envelopes)\n" { // open, accept, text, close
		t.Fatalf("sessions import printed %q", out)
	}
	s, err := c.GetSession(context.Background(), id)
	if err != nil || s.GetState() != agentsdk.StateClosed || s.GetMeta().GetLabels()["imported_from"] != file {
		t.Fatalf("the imported session: %v %v", s, err)
	}
	if log, err := c.ReadLog(context.Background(), id, 1, 100); err != nil || len(log) != 4 || log[2].GetText().GetText() != "hello "+id {
		t.Fatalf("the imported session's log: %v %v", log, err)
	}
	if show := mustHubd(t, "", appendArgs(hub, "sessions", "show", id, "--as", "alice")...); !strings.Contains(show, id) {
		t.Errorf("sessions show of the imported session printed %q", show)
	}
	if _, err := c.GetSession(context.Background(), other); !errors.Is(err, agentsdk.ErrPurged) {
		t.Errorf("the session not imported: %v", err)
	}
	if code, _, errs := hubd(t, appendArgs(hub, "sessions", "import", file, "--as", "operator")...); code != 1 ||
		!strings.Contains(errs, "is in the log (it was imported from "+file+")") || !strings.HasSuffix(errs, "(BAD_LIFECYCLE_TRANSITION)\n") {
		t.Errorf("a second sessions import: exit %d, %q", code, errs)
	}
	if _, err := c.GetSession(context.Background(), other); !errors.Is(err, agentsdk.ErrPurged) {
		t.Errorf("the session a refused import names: %v", err)
	}

	body := `{"archive":"` + file + `","session_ids":["` + other + `"]}`
	req, _ := http.NewRequest("POST", "http://"+d.httpAddr(t)+"/v1/imports", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hubd-Agent", "operator")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"session_id":"`+other+`"`) {
		t.Fatalf("POST /v1/imports: %d %s", resp.StatusCode, b)
	}
	if s, err := c.GetSession(context.Background(), other); err != nil || s.GetMeta().GetLabels()["imported_from"] != file {
		t.Fatalf("the session imported over HTTP: %v %v", s, err)
	}

	// Purged again the same day, the session is in the file twice; the
	// offline import, the hub stopped, brings its last copy back once.
	mustHubd(t, "", appendArgs(hub, "sessions", "purge", id, "--as", "operator")...)
	d.stop(syscall.SIGTERM)
	out = mustHubd(t, "", "log", "archive", "import", "--data", data, "--session", id, filepath.Join(data, "archive", file))
	if out != "imported "+id+" (4 envelopes)\n" {
		t.Fatalf("log archive import of a session the file holds twice printed %q", out)
	}
}
