package hub_test

import (
	"context"
	"testing"
	"time"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// TestDiskFull: while the log refuses appends for lack of space, a send is
// refused with DISK_FULL and writes nothing, reads go on, a due timer is
// not lost but fires once space is back, and sends resume by themselves.
func TestDiskFull(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	id := openConversation(t, e.hub, "a", "b", session.Expect(session.MaxSilence, time.Minute, session.ActionNotify))
	if _, err := e.hub.Send(ctx, "a", id, textEnv("before")); err != nil {
		t.Fatal(err)
	}
	e.log.setFull(true)
	_, err := e.hub.Send(ctx, "b", id, textEnv("while full"))
	if r, _ := session.ReasonOf(err); r != hubpb.Reason_DISK_FULL {
		t.Fatalf("send on a full disk: %v; want DISK_FULL", err)
	}
	info, err := e.hub.Get(ctx, "a", false, id)
	if err != nil || info.GetSeq() != 3 {
		t.Fatalf("a read on a full disk: %v, %v; want seq 3", info, err)
	}
	e.clock.Advance(time.Minute) // max_silence is due; its firing cannot be written
	e.log.setFull(false)
	e.clock.Advance(time.Second) // the firing is tried again
	if es, _, err := e.hub.ReadLog(ctx, "", true, id, 4, 0); err != nil || len(es) != 1 || es[0].GetType() != session.EventViolation {
		t.Fatalf("after space returned the log from seq 4 holds %v, %v; want the max_silence violation", es, err)
	}
	ack, err := e.hub.Send(ctx, "b", id, textEnv("after"))
	if err != nil || ack.GetSeq() != 5 {
		t.Fatalf("send after space returned: %v, %v; want seq 5", ack, err)
	}
	es, _, err := e.hub.ReadLog(ctx, "", true, id, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, env := range es {
		if env.GetType() == session.EventText {
			texts = append(texts, env.GetText().GetText())
		}
	}
	if len(texts) != 2 || texts[0] != "before" || texts[1] != "after" {
		t.Errorf("the log holds the texts %q; want before, after", texts)
	}
}
