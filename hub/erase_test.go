package hub_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// EraseSessions is the wrapped log's: the badger log erases sessions.
func (f *faultyLog) EraseSessions(ctx context.Context, ds []hub.Deletion) error {
	return f.Log.(hub.Eraser).EraseSessions(ctx, ds)
}

// wantErased checks that err is the ERASED answer, by ops for why.
func wantErased(t *testing.T, what string, err error, why string) {
	t.Helper()
	var pe *hub.PurgedError
	if !errors.Is(err, hub.ErrErased) || !errors.As(err, &pe) || pe.By != "ops" || pe.Reason != why || pe.At.IsZero() {
		t.Fatalf("%s: %v, want ERASED by ops for %q", what, err, why)
	}
	if md := pe.ErrorMetadata(); md["erased_by"] != "ops" || md["reason"] != why || md["erased_at"] == "" {
		t.Errorf("%s: metadata %v", what, md)
	}
}

// TestEraseByParticipant erases every session dana takes part in: a live
// one (closed first) and an ended one, one of them purged into the
// archive before; every read answers ERASED, with who and why, across a
// restart; alice's other session is untouched and replays as it ran.
func TestEraseByParticipant(t *testing.T) {
	e := newArchivedEnv(t, nil)
	ctx := context.Background()
	const why = "dana asked to be forgotten"
	open := func(with string) session.ID {
		o, err := e.hub.Open(ctx, "alice", &hubpb.OpenRequest{Type: "conversation@1", Labels: map[string]string{"about": with},
			Participants: []*hubpb.Participant{{Name: with, AutoAccept: true}}})
		if err != nil {
			t.Fatal(err)
		}
		id := session.MustParseID(o.GetSession().GetMeta().GetSessionId())
		if _, err := e.hub.Send(ctx, "alice", id, textEnv("a word for "+with)); err != nil {
			t.Fatal(err)
		}
		return id
	}
	live, ended, purged, other := open("dana"), open("dana"), open("dana"), open("bob")
	for _, id := range []session.ID{ended, purged} {
		if _, err := e.hub.CloseSession(ctx, "alice", false, id, "done"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.hub.Purge(ctx, purged); err != nil {
		t.Fatal(err)
	}
	req := &hubpb.EraseRequest{Participant: "dana", Reason: why}
	for _, c := range []struct {
		by       string
		operator bool
		req      *hubpb.EraseRequest
		want     error
	}{
		{"alice", false, req, hub.ErrPermissionDenied},
		{"ops", true, &hubpb.EraseRequest{Participant: "dana"}, session.ErrMalformed},
		{"ops", true, &hubpb.EraseRequest{Reason: why}, session.ErrMalformed},
		{"ops", true, &hubpb.EraseRequest{SessionIds: []string{"01a224b6-2092-7a77-96b8-d3155efc5069"}, Reason: why}, hub.ErrUnknownSession},
		{"ops", true, &hubpb.EraseRequest{ThreadKey: "t", Reason: why}, session.ErrMalformed},
	} {
		if _, _, err := e.hub.Erase(ctx, c.by, c.operator, c.req); !errors.Is(err, c.want) {
			t.Errorf("%s %v: %v, want %v", c.by, c.req, err, c.want)
		}
	}
	if _, err := e.hub.Get(ctx, "alice", false, live); err != nil {
		t.Fatalf("the refusals erased something: %v", err)
	}
	ts, ids, err := e.hub.Erase(ctx, "ops", true, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 || len(ts) != 3 {
		t.Fatalf("erased %v", ids)
	}
	check := func() {
		for _, id := range []session.ID{live, ended, purged} {
			_, err := e.hub.Get(ctx, "alice", false, id)
			wantErased(t, "Get "+id.String(), err, why)
			_, err = e.hub.Get(ctx, "ops", true, id)
			wantErased(t, "an operator's Get", err, why)
		}
		if _, err := e.hub.Get(ctx, "alice", false, other); err != nil {
			t.Errorf("the other session: %v", err)
		}
	}
	check()
	again, _, err := e.hub.Erase(ctx, "ops", true, &hubpb.EraseRequest{SessionIds: []string{ended.String()}, Reason: "again"})
	if err != nil || again[0].Reason != why {
		t.Errorf("erasing again: %v %+v, want the first tombstone", err, again)
	}
	e.restart()
	check()
	assertReplayed(t, e, []session.ID{other})
}

// TestEraseRefusesAForkSource: a fork folds its source's log, so its
// source is erased only with it.
func TestEraseRefusesAForkSource(t *testing.T) {
	e := newArchivedEnv(t, nil)
	ctx := context.Background()
	src := endedConversation(t, e.hub, &hubpb.OpenRequest{Labels: map[string]string{"k": "v"}})
	f := fork(t, e.hub, "alice", &hubpb.ForkRequest{SessionId: src.String(), AtSeq: 2,
		Context: &hubpb.ContextUpdate{Set: map[string]*structpb.Value{"x": structpb.NewStringValue("y")}}})
	if _, _, err := e.hub.Erase(ctx, "ops", true, &hubpb.EraseRequest{SessionIds: []string{src.String()}, Reason: "r"}); !errors.Is(err, session.ErrBadTransition) {
		t.Fatalf("erasing a fork's source alone: %v, want BAD_LIFECYCLE_TRANSITION", err)
	}
	if _, _, err := e.hub.Erase(ctx, "ops", true, &hubpb.EraseRequest{SessionIds: []string{src.String(), f.String()}, Reason: "r"}); err != nil {
		t.Fatalf("erasing a fork with its source: %v", err)
	}
}
