package main

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hubd/hubd/agentsdk"
)

// TestE2ESteer steers a live round_robin(alice, bob, carol) session through
// hubd sessions steer on the real binary: an agent is refused, an
// operator's --next makes carol's turn accepted and bob's (the graph's)
// refused, --set changes the context, --release-result with nothing held
// is refused naming why; each action is in the log with its operator and
// reason, and the session replays to its live state before and after a
// restart.
func TestE2ESteer(t *testing.T) {
	data := t.TempDir()
	d := startDaemon(t, data, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alice, bob, carol := dialAs(t, d.addr, "alice"), dialAs(t, d.addr, "bob"), dialAs(t, d.addr, "carol")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Graph: agentsdk.RoundRobin([]string{"alice", "bob", "carol"}, 20),
		Participants: agentsdk.AutoAccepted("bob", "carol")})
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	if _, err := alice.SendText(ctx, id, "over to bob"); err != nil {
		t.Fatal(err)
	}
	steer := func(args ...string) (int, string, string) {
		return hubd(t, append([]string{"sessions", "steer", id, "--hub", d.addr}, args...)...)
	}
	if code, out, errs := steer("--next", "carol", "--reason", "mine", "--as", "bob"); code == 0 || !strings.Contains(errs, "not an operator") {
		t.Fatalf("steer as an agent: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := steer("--next", "carol", "--reason", "carol has the logs"); code != 0 || !strings.Contains(out, "steered "+id) {
		t.Fatalf("steer --next: exit %d\n%s%s", code, out, errs)
	}
	if _, err := bob.SendText(ctx, id, "me?"); !isReason(err, "OUT_OF_TURN") {
		t.Fatalf("bob after --next carol: %v, want OUT_OF_TURN", err)
	}
	if _, err := carol.SendText(ctx, id, "here are the logs"); err != nil {
		t.Fatalf("carol after --next carol: %v", err)
	}
	if code, out, errs := steer("--set", "priority=1", "--set", "team=core", "--reason", "escalated"); code != 0 {
		t.Fatalf("steer --set: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := steer("--release-result", "go", "--reason", "unstick"); code == 0 || !strings.Contains(errs, "no turn is held") {
		t.Fatalf("steer --release-result with nothing held: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := steer("--next", "carol", "--set", "a=1", "--reason", "two"); code != 2 {
		t.Fatalf("steer with two actions: exit %d, want 2\n%s%s", code, out, errs)
	}
	check := func(when string) {
		t.Helper()
		info := showSession(t, d.addr, id)
		if got := info.GetContext()["team"].GetStringValue(); got != "core" {
			t.Errorf("%s: context team = %q, want core (%v)", when, got, info.GetContext())
		}
		es, err := dialAs(t, d.addr, "alice").ReadLog(ctx, id, 1, 100)
		if err != nil {
			t.Fatal(err)
		}
		var reasons []string
		for _, e := range es {
			if a := e.GetOperatorAction(); a != nil {
				if e.GetFrom() != "" || a.GetOperator() == "" {
					t.Errorf("%s: operator action from %q by %q", when, e.GetFrom(), a.GetOperator())
				}
				reasons = append(reasons, a.GetReason())
			}
		}
		if got := strings.Join(reasons, "|"); got != "carol has the logs|escalated" {
			t.Errorf("%s: operator actions logged: %q", when, got)
		}
		if code, out, errs := hubd(t, "sessions", "replay", id, "--hub", d.addr); code != 0 {
			t.Errorf("%s: replay: exit %d\n%s%s", when, code, out, errs)
		}
	}
	check("live")
	d.stop(syscall.SIGTERM)
	d = startDaemon(t, data, "")
	check("after a restart")
}

// isReason reports whether err carries the hub's stable reason.
func isReason(err error, reason string) bool {
	r, ok := agentsdk.Reason(err)
	return ok && r == reason
}
