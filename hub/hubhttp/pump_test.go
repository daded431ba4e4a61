package hubhttp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
)

// script is a watch that hands out deliveries, then an error.
type script struct {
	ds  []*hubpb.Delivery
	err error
}

func (s *script) Next(ctx context.Context) (*hubpb.Delivery, error) {
	if len(s.ds) > 0 {
		d := s.ds[0]
		s.ds = s.ds[1:]
		return d, nil
	}
	return nil, s.err
}

// TestPumpCutOff: a subscriber the hub cuts off gets an end event saying
// why, with the seq to resume after, and the error goes to the caller
// (for the cut-off metric).
func TestPumpCutOff(t *testing.T) {
	a := &API{cfg: Config{Heartbeat: time.Hour}}
	rec := httptest.NewRecorder()
	s := openStream(rec)
	s.last = 4
	cut := fmt.Errorf("the subscriber's buffer of 2 deliveries is full: %w", hub.ErrSlowSubscriber)
	err := a.pump(context.Background(), s, &script{ds: []*hubpb.Delivery{{Envelope: &hubpb.Envelope{Seq: 5, Type: "text"}}}, err: cut})
	if err != cut {
		t.Errorf("pump returned %v", err)
	}
	body := rec.Body.String()
	if !strings.HasPrefix(body, "retry: 2000\n\nid: 5\nevent: envelope\ndata: {") {
		t.Fatalf("stream:\n%s", body)
	}
	_, data, ok := strings.Cut(body, "event: end\ndata: ")
	if !ok {
		t.Fatalf("no end event:\n%s", body)
	}
	var end streamEnd
	if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &end); err != nil {
		t.Fatal(err)
	}
	if end.Reason != "SLOW_SUBSCRIBER" || !end.Resume || end.LastSeq != 5 || !strings.Contains(end.Message, "buffer of 2") {
		t.Errorf("end %+v", end)
	}
}

// TestPumpClientGone: a client that leaves ends the stream quietly.
func TestPumpClientGone(t *testing.T) {
	a := &API{cfg: Config{Heartbeat: time.Hour}}
	rec := httptest.NewRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.pump(ctx, openStream(rec), &script{err: context.Canceled}); err != nil {
		t.Errorf("pump returned %v", err)
	}
	if strings.Contains(rec.Body.String(), "event: end") {
		t.Errorf("an end event for a client that left:\n%s", rec.Body.String())
	}
}

// FuzzParseTreeID: a tree stream's event id, as a client sends it back,
// never panics the parser, and what parses writes back as an id that
// parses to the same cursors.
func FuzzParseTreeID(f *testing.F) {
	f.Add("7")
	f.Add("7,0190a0c4-8f4e-7a2b-9c3d-4e5f60718293:3")
	f.Add("0,0190a0c4-8f4e-7a2b-9c3d-4e5f60718293:3,0190a0c4-8f4e-7a2b-9c3d-4e5f60718294:0")
	f.Add("7,nope:1")
	f.Add("18446744073709551615")
	f.Fuzz(func(t *testing.T, s string) {
		root, cursors, err := parseTreeID(s)
		if err != nil {
			return
		}
		again, cursors2, err := parseTreeID(treeID(root, cursors))
		if err != nil {
			t.Fatalf("%q parses, its id %q does not: %v", s, treeID(root, cursors), err)
		}
		if again != root {
			t.Fatalf("%q: root %d, then %d", s, root, again)
		}
		for id, seq := range cursors {
			if seq > 0 && cursors2[id] != seq {
				t.Fatalf("%q: cursor %s %d, then %d", s, id, seq, cursors2[id])
			}
		}
	})
}
