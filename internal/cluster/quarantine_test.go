package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/natstest"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
)

// logBuffer collects a logger's JSON lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the log's JSON lines with the given message.
func (l *logBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["message"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// TestClusterLoadQuarantinesDamaged: a partition stream holds a record
// whose frame fails its checksum (one session's), a record of a session
// that has no metadata, and junk on a subject that names no session (as
// anything else that reaches the bus could publish); the node that takes
// the partition over quarantines those two sessions, skips the junk
// (logged at error level, counted in hubd_cluster_foreign_messages_total)
// and serves the partition's others: they answer and take writes, the
// damaged ones answer QUARANTINED.
func TestClusterLoadQuarantinesDamaged(t *testing.T) {
	if testing.Short() {
		t.Skip("a NATS server and two nodes")
	}
	c := natstest.RunServer(t)
	a := startClusterNode(t, c, "a")
	waitUntil(t, "a serves every partition", 10*time.Second, func() bool { return len(a.Served()) == 4 })
	ca := rawClient(t, a.Addr())
	parts := []*hubpb.Participant{{Name: "alice"}, {Name: "bob", AutoAccept: true}}
	// Sessions until two share a partition: the damaged one and its
	// sibling, which must go on serving.
	byPart := map[int]string{}
	var damaged, sibling string
	var others []string
	for damaged == "" {
		resp, err := ca.Open(as("alice"), &hubpb.OpenRequest{Type: "conversation@1", Participants: parts})
		if err != nil {
			t.Fatal(err)
		}
		id := resp.GetSession().GetMeta().GetSessionId()
		if _, err := sendText(t, ca, "alice", id, "one"); err != nil {
			t.Fatal(err)
		}
		k := a.PartitionOf(session.MustParseID(id))
		if prev, ok := byPart[k]; ok {
			damaged, sibling = id, prev
		} else {
			byPart[k] = id
			others = append(others, id)
		}
	}
	k := a.PartitionOf(session.MustParseID(damaged))
	// A session of the same partition with a record and no metadata.
	ghost := uuid.Must(uuid.NewV7())
	for a.PartitionOf(session.ID(ghost)) != k {
		ghost = uuid.Must(uuid.NewV7())
	}

	js, err := c.Connect(t).JetStream()
	if err != nil {
		t.Fatal(err)
	}
	publish := func(id string, seq int, payload []byte) {
		t.Helper()
		m := nats.NewMsg(fmt.Sprintf("hub.p%d.s.%s", k, id))
		m.Header.Set("Nats-Msg-Id", fmt.Sprintf("%s/%d", id, seq))
		m.Data = payload
		if _, err := js.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	// Frame version 1, a checksum of zeros, some data: seq 4 of the
	// damaged session (after invite, open, "one").
	publish(damaged, 4, []byte{1, 0, 0, 0, 0, 'x'})
	publish(ghost.String(), 1, []byte{1, 0, 0, 0, 0, 'x'})
	junk := fmt.Sprintf("hub.p%d.junk", k)
	if _, err := js.Publish(junk, []byte("not a record")); err != nil {
		t.Fatal(err)
	}

	// a leaves; b takes every partition over, the damaged one included.
	a.Shutdown(context.Background())
	logs := &logBuffer{}
	b := startClusterNodeLogged(t, c, "b", zerolog.New(logs))
	waitUntil(t, "b serves every partition", 20*time.Second, func() bool { return len(b.Served()) == 4 })
	skipped := logs.lines(t, "a message in a partition stream names no session: skipped")
	if len(skipped) != 1 || skipped[0]["level"] != "error" || skipped[0]["subject"] != junk {
		t.Errorf("log of the junk message: %v, want one error naming %s", skipped, junk)
	}
	if n := counterValue(t, b, "hubd_cluster_foreign_messages_total"); n != 1 {
		t.Errorf("hubd_cluster_foreign_messages_total = %v, want 1", n)
	}
	cb := rawClient(t, b.Addr())
	for _, id := range append(others, sibling) {
		resp, err := sendText(t, cb, "bob", id, "two")
		if err != nil || resp.GetSeq() != 4 { // invite, open, one, two
			t.Fatalf("send to %s on b after the load: seq %d, %v; want seq 4", id, resp.GetSeq(), err)
		}
	}
	for _, id := range []string{damaged, ghost.String()} {
		_, err := cb.GetSession(as("alice"), &hubpb.GetSessionRequest{SessionId: id})
		if status.Code(err) != codes.DataLoss || errorInfo(t, err).GetReason() != "QUARANTINED" {
			t.Fatalf("GetSession(%s) on b: %v, want DATA_LOSS QUARANTINED", id, err)
		}
		if _, err := sendText(t, cb, "alice", id, "two"); errorInfo(t, err).GetReason() != "QUARANTINED" {
			t.Fatalf("send to %s on b: %v, want QUARANTINED", id, err)
		}
	}
}

// counterValue reads a counter without labels from srv's metrics.
func counterValue(t *testing.T, srv *server.Server, name string) float64 {
	t.Helper()
	mfs, err := srv.Metrics().Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no counter %s", name)
	return 0
}
