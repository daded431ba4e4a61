package main

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/wiretest"
)

// sseEvents is a server-sent event stream read by a test.
type sseEvents struct {
	t    *testing.T
	r    *bufio.Reader
	stop func()
}

// openSSE opens GET url as agent.
func openSSE(t *testing.T, url, agent string) *sseEvents {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Hubd-Agent", agent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %v %v", url, resp, err)
	}
	s := &sseEvents{t: t, r: bufio.NewReader(resp.Body), stop: func() { cancel(); resp.Body.Close() }}
	t.Cleanup(s.stop)
	return s
}

// next returns the next event's name and data (comments skipped).
func (s *sseEvents) next() (string, string) {
	s.t.Helper()
	var name, data string
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			s.t.Fatalf("reading events: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && name != "":
			return name, data
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
}

// upTo reads envelope events until the one of seq.
func (s *sseEvents) upTo(seq uint64) {
	s.t.Helper()
	for {
		name, data := s.next()
		var e hubpb.Envelope
		if name == "envelope" && hubpb.UnmarshalJSON([]byte(data), &e) == nil && e.GetSeq() == seq {
			return
		}
	}
}

// wantDelta reads the next event, which must be a delta with text.
func (s *sseEvents) wantDelta(text string) {
	s.t.Helper()
	name, data := s.next()
	var d hubpb.Delta
	if name != "delta" || hubpb.UnmarshalJSON([]byte(data), &d) != nil || d.GetText() != text || d.GetFrom() != "alice" {
		s.t.Fatalf("event %s %s; want the delta %q", name, data, text)
	}
}

// TestE2EDeltas on the real binary: deltas sent over gRPC and HTTP reach
// an SSE client as "delta" events before the final envelope's event; a
// kill mid-reply loses the deltas and nothing else: the log holds none of
// them, the turn is still the writer's, and its final envelope then
// takes it.
func TestE2EDeltas(t *testing.T) {
	data := t.TempDir()
	d := startDaemon(t, data, "", "--http", "127.0.0.1:0")
	httpAddr := httpOf(t, d)
	ctx := context.Background()
	alice := devClient(t, d.addr, "alice")
	id := wiretest.Pipeline(t, alice)
	info, err := alice.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
	if err != nil {
		t.Fatal(err)
	}
	last := info.GetSeq()
	events := "http://" + httpAddr + "/v1/sessions/" + id + "/events?deltas=true"
	ev := openSSE(t, events, "operator")
	ev.upTo(last)
	if _, err := alice.SendDelta(ctx, &hubpb.Delta{SessionId: id, StreamId: "r1", Text: "Hel"}); err != nil {
		t.Fatal(err)
	}
	ev.wantDelta("Hel")
	code, body := httpDo(t, "POST", "http://"+httpAddr+"/v1/sessions/"+id+"/deltas",
		map[string]string{"X-Hubd-Agent": "alice", "Content-Type": "application/json"}, `{"stream_id":"r1","index":1,"text":"lo"}`)
	if code != 200 {
		t.Fatalf("POST deltas: %d %s", code, body)
	}
	ev.wantDelta("lo")

	d.stop(syscall.SIGKILL) // mid-reply
	d = startDaemon(t, data, d.addr, "--http", httpAddr)
	alice = devClient(t, d.addr, "alice")
	log, err := alice.ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: id})
	if err != nil || uint64(len(log.GetEnvelopes())) != last {
		t.Fatalf("after the restart the log holds %d envelopes (%v); want %d, none of the deltas", len(log.GetEnvelopes()), err, last)
	}
	_, err = devClient(t, d.addr, "bob").SendDelta(ctx, &hubpb.Delta{SessionId: id, StreamId: "b", Text: "x"})
	if code, reason := wiretest.ReasonOf(err); code != codes.FailedPrecondition || reason != "OUT_OF_TURN" {
		t.Fatalf("bob's delta after the restart: %v; the turn is still alice's", err)
	}
	ev = openSSE(t, events, "operator")
	ev.upTo(last)
	ss, err := alice.SendStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ss.Send(&hubpb.SendStreamFrame{Frame: &hubpb.SendStreamFrame_Delta{Delta: &hubpb.Delta{SessionId: id, StreamId: "r1", Text: "Hello"}}}); err != nil {
		t.Fatal(err)
	}
	ev.wantDelta("Hello")
	final := wiretest.Text("Hello")
	final.ClientMsgId = "r1"
	if err := ss.Send(&hubpb.SendStreamFrame{Frame: &hubpb.SendStreamFrame_Final{Final: &hubpb.SendRequest{SessionId: id, Envelope: final}}}); err != nil {
		t.Fatal(err)
	}
	if ack, err := ss.CloseAndRecv(); err != nil || ack.GetSeq() != last+1 {
		t.Fatalf("the final envelope: %v %v; want seq %d", ack, err, last+1)
	}
	name, data2 := ev.next()
	if name != "envelope" || !strings.Contains(data2, `"client_msg_id":"r1"`) {
		t.Fatalf("after the delta: %s %s; want the final envelope", name, data2)
	}
	if code, body := httpDo(t, "GET", "http://"+httpAddr+"/metrics", nil, ""); code != 200 || !strings.Contains(body, "\nhubd_deltas_dropped_total 0\n") {
		t.Errorf("metrics: %d, no hubd_deltas_dropped_total 0", code)
	}
}
