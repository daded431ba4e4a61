package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/internal/disktest"
)

// TestE2EErase erases everything dana took part in on the real binary: a
// live session, an ended one and one purged into the archive, holding
// her secret in texts, a context value and a label. Afterwards no byte
// of the secret is in the data directory, the archive or a backup taken
// then, every read answers ERASED with who and why, and a restart keeps
// it so; an agent may not erase.
func TestE2EErase(t *testing.T) {
	data := t.TempDir()
	d := startDaemon(t, data, "")
	hub := []string{"--hub", d.addr}
	alice := devClient(t, d.addr, "alice")
	const secret = "danas-secret-4417"
	open := func(end bool) string {
		ctx := context.Background()
		resp, err := alice.Open(ctx, &hubpb.OpenRequest{Type: "conversation", Labels: map[string]string{"about": secret + "-label"},
			Participants: []*hubpb.Participant{{Name: "dana", AutoAccept: true}}})
		if err != nil {
			t.Fatal(err)
		}
		id := resp.GetSession().GetMeta().GetSessionId()
		send(t, alice, id, &hubpb.Envelope{Type: "context_set", Payload: &hubpb.Envelope_ContextSet{ContextSet: &hubpb.ContextUpdate{
			Set: map[string]*structpb.Value{"note": structpb.NewStringValue(secret + "-context")}}}})
		send(t, alice, id, &hubpb.Envelope{Type: "text", Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: secret + "-text"}}})
		if end {
			if _, err := alice.Close(ctx, &hubpb.CloseRequest{SessionId: id, Reason: "done"}); err != nil {
				t.Fatal(err)
			}
		}
		return id
	}
	live, ended, purged := open(false), open(true), open(true)
	mustHubd(t, "", appendArgs(hub, "sessions", "purge", purged, "--as", "operator")...)
	if len(disktest.FilesHolding(t, data, []byte(secret))) == 0 {
		t.Fatal("the secret is in no file before the erasure: the test shows nothing")
	}
	if code, _, errs := hubd(t, appendArgs(hub, "sessions", "erase", "--participant", "dana", "--reason", "r", "--as", "alice")...); code != 1 ||
		!strings.HasSuffix(errs, "(PERMISSION_DENIED)\n") {
		t.Errorf("sessions erase by an agent: exit %d, %q", code, errs)
	}
	out := mustHubd(t, "", appendArgs(hub, "sessions", "erase", "--participant", "dana", "--reason", "dana asked to be forgotten", "--as", "operator")...)
	for _, id := range []string{live, ended, purged} {
		if !strings.Contains(out, "erased "+id+" at ") || !strings.Contains(out, " by operator: dana asked to be forgotten\n") {
			t.Errorf("sessions erase printed %q, missing %s", out, id)
		}
	}
	backup := filepath.Join(t.TempDir(), "backup")
	mustHubd(t, "", appendArgs(hub, "log", "backup", backup, "--as", "operator")...)
	check := func(d *daemon, when string) {
		t.Helper()
		for _, dir := range []string{data, filepath.Dir(backup)} {
			if got := disktest.FilesHolding(t, dir, []byte(secret)); len(got) > 0 {
				t.Errorf("%s: the secret is still in %v", when, got)
			}
		}
		for _, id := range []string{live, ended, purged} {
			_, err := dialAs(t, d.addr, "alice").GetSession(context.Background(), id)
			var e *agentsdk.Error
			if !errors.Is(err, agentsdk.ErrErased) || !errors.As(err, &e) || e.Metadata["erased_by"] != "operator" ||
				e.Metadata["reason"] != "dana asked to be forgotten" || e.Metadata["erased_at"] == "" {
				t.Errorf("%s: GetSession of %s: %v", when, id, err)
			}
			if code, _, errs := hubd(t, "sessions", "show", id, "--hub", d.addr, "--as", "operator"); code != 1 || !strings.HasSuffix(errs, "(ERASED)\n") {
				t.Errorf("%s: sessions show: exit %d, %q", when, code, errs)
			}
		}
	}
	check(d, "after the erasure")
	d.stop(syscall.SIGTERM)
	d = startDaemon(t, data, "")
	check(d, "after a restart")
}

func send(t *testing.T, c hubsvc.HubClient, id string, e *hubpb.Envelope) {
	t.Helper()
	if _, err := c.Send(context.Background(), &hubpb.SendRequest{SessionId: id, Envelope: e}); err != nil {
		t.Fatal(err)
	}
}
