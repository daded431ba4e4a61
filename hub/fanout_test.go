package hub_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// backgroundKids delegates n conversation children of parent in the
// background, as a, each with c.
func backgroundKids(ctx context.Context, h *served, a string, parent session.ID, n int) (*hubpb.DelegateResponse, error) {
	kids := make([]*hubpb.OpenRequest, n)
	for i := range kids {
		kids[i] = &hubpb.OpenRequest{Type: "conversation@1", Participants: []*hubpb.Participant{{Name: "c", AutoAccept: true}}}
	}
	return h.Delegate(ctx, a, &hubpb.DelegateRequest{SessionId: parent.String(), Mode: session.ModeBackground, Children: kids})
}

// wantLimit checks that err is a refusal at limit (its flag named in the
// message with its value) with reason, and that it says so as a
// *hub.LimitError.
func wantLimit(t *testing.T, err error, reason error, flag string, value int) {
	t.Helper()
	var le *hub.LimitError
	if !errors.Is(err, reason) || !errors.As(err, &le) || le.Flag != flag || le.Value != int64(value) ||
		!strings.Contains(err.Error(), fmt.Sprintf("the limit is %d (%s)", value, flag)) {
		t.Fatalf("got %v; want %v at %s %d, naming it", err, reason, flag, value)
	}
	if md := le.ErrorMetadata(); md["limit"] != strings.TrimPrefix(flag, "--") || md["value"] != fmt.Sprint(value) {
		t.Fatalf("metadata %v; want limit %s, value %d", md, flag, value)
	}
}

// TestChildrenPerTurnByDefault: with the default configuration, an agent's
// background delegations on one turn open at most
// hub.DefaultMaxChildrenPerTurn children; the next is refused with
// LIMIT_REACHED naming the limit, nothing of it written, also after a
// restart; a new turn opens children again.
func TestChildrenPerTurnByDefault(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	root := openConversation(t, e.hub, "a", "b")
	for i := 0; i < hub.DefaultMaxChildrenPerTurn; i += hub.MaxChildren {
		if _, err := backgroundKids(ctx, e.hub, "a", root, hub.MaxChildren); err != nil {
			t.Fatalf("children %d to %d: %v", i, i+hub.MaxChildren, err)
		}
	}
	live, _ := e.hub.Resident()
	seq := seqOf(t, e.hub, root)
	_, err := backgroundKids(ctx, e.hub, "a", root, 1)
	wantLimit(t, err, hub.ErrLimit, "--max-children-per-turn", hub.DefaultMaxChildrenPerTurn)
	if now, _ := e.hub.Resident(); now != live || seqOf(t, e.hub, root) != seq {
		t.Fatalf("the refusal wrote: %d sessions (was %d), parent at seq %d (was %d)", now, live, seqOf(t, e.hub, root), seq)
	}
	e.restart()
	_, err = backgroundKids(ctx, e.hub, "a", root, 1)
	wantLimit(t, err, hub.ErrLimit, "--max-children-per-turn", hub.DefaultMaxChildrenPerTurn)
	if _, err := e.hub.Send(ctx, "b", root, textEnv("next turn")); err != nil {
		t.Fatal(err)
	}
	if _, err := backgroundKids(ctx, e.hub, "a", root, hub.MaxChildren); err != nil {
		t.Fatalf("children on a new turn: %v", err)
	}
}

// seqOf is a session's last seq.
func seqOf(t *testing.T, h *served, id session.ID) uint64 {
	t.Helper()
	info, err := h.Get(context.Background(), "", true, id)
	if err != nil {
		t.Fatal(err)
	}
	return info.GetSeq()
}

// TestSessionsPerTree: a tree holds at most MaxTreeSessions sessions
// pending or open, its root and every descendant counted; a delegation
// past it is refused whole, and a child that ends frees its place. After
// a restart the count is the log's.
func TestSessionsPerTree(t *testing.T) {
	e := newEnv(t, func(c *hub.Config) { c.MaxTreeSessions = 5 })
	ctx := context.Background()
	root := openConversation(t, e.hub, "a", "b")
	resp, err := backgroundKids(ctx, e.hub, "a", root, 3)
	if err != nil {
		t.Fatal(err)
	}
	kid := session.MustParseID(resp.GetChildren()[0].GetMeta().GetSessionId())
	live, _ := e.hub.Resident()
	_, err = backgroundKids(ctx, e.hub, "a", root, 2)
	wantLimit(t, err, hub.ErrLimit, "--max-tree-sessions", 5)
	if now, _ := e.hub.Resident(); now != live {
		t.Fatalf("a refused delegation left %d sessions, was %d", now, live)
	}
	// One level down counts in the same tree.
	if _, err := backgroundKids(ctx, e.hub, "a", kid, 1); err != nil {
		t.Fatalf("a grandchild, the fifth session: %v", err)
	}
	_, err = backgroundKids(ctx, e.hub, "c", kid, 1)
	wantLimit(t, err, hub.ErrLimit, "--max-tree-sessions", 5)
	e.restart()
	_, err = backgroundKids(ctx, e.hub, "c", kid, 1)
	wantLimit(t, err, hub.ErrLimit, "--max-tree-sessions", 5)
	if _, err := e.hub.CloseSession(ctx, "a", false, kid, ""); err != nil {
		t.Fatal(err)
	}
	// The child and its own child ended: two places free.
	if _, err := backgroundKids(ctx, e.hub, "a", root, 2); err != nil {
		t.Fatalf("after a child ended: %v", err)
	}
	// Another tree is counted apart.
	other := openConversation(t, e.hub, "a", "b")
	if _, err := backgroundKids(ctx, e.hub, "a", other, 4); err != nil {
		t.Fatalf("another tree: %v", err)
	}
}

// TestOpenPerAgentByDefault: the hub bounds the sessions pending or open
// that one agent created, children included, by default; past the bound
// an open and a delegation are refused with LIMIT_REACHED naming it, and
// a negative limit turns it off.
func TestOpenPerAgentByDefault(t *testing.T) {
	if got := (hub.Config{}).WithDefaults().MaxOpenPerAgent; got != hub.DefaultMaxOpenPerAgent || got <= 0 {
		t.Fatalf("default MaxOpenPerAgent %d", got)
	}
	e := newEnv(t, func(c *hub.Config) { c.MaxOpenPerAgent = 3 })
	ctx := context.Background()
	root := openConversation(t, e.hub, "a", "b")
	if _, err := backgroundKids(ctx, e.hub, "a", root, 2); err != nil {
		t.Fatal(err)
	}
	_, err := e.hub.Open(ctx, "a", &hubpb.OpenRequest{Type: "conversation@1", Participants: []*hubpb.Participant{{Name: "b", AutoAccept: true}}})
	wantLimit(t, err, hub.ErrLimit, "--max-open-per-agent", 3)
	_, err = backgroundKids(ctx, e.hub, "a", root, 1)
	wantLimit(t, err, hub.ErrLimit, "--max-open-per-agent", 3)
	if live, _ := e.hub.Resident(); live != 3 {
		t.Fatalf("%d sessions after the refusals, want 3", live)
	}
	if _, err := backgroundKids(ctx, e.hub, "b", root, 1); err != nil {
		t.Fatalf("another agent's child: %v", err)
	}

	off := newEnv(t, func(c *hub.Config) { c.MaxOpenPerAgent, c.MaxTreeSessions, c.MaxChildrenPerTurn = -1, -1, -1 })
	root = openConversation(t, off.hub, "a", "b")
	for range 6 {
		if _, err := backgroundKids(ctx, off.hub, "a", root, hub.MaxChildren); err != nil {
			t.Fatalf("limits off: %v", err)
		}
	}
}
