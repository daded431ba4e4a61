package feed_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/session"
)

// stallingLog holds an append, once armed, until it is let go.
type stallingLog struct {
	hub.Log
	mu      sync.Mutex
	armed   bool
	entered chan struct{} // closed when the held append began
	release chan struct{} // closed to let it go
}

func (l *stallingLog) wrapLog(inner hub.Log) hub.Log {
	l.Log = inner
	return l
}

func (l *stallingLog) arm() {
	l.mu.Lock()
	l.armed, l.entered, l.release = true, make(chan struct{}), make(chan struct{})
	l.mu.Unlock()
}

func (l *stallingLog) Append(ctx context.Context, writes ...hub.LogWrite) error {
	l.mu.Lock()
	armed, entered, release := l.armed, l.entered, l.release
	l.armed = false
	l.mu.Unlock()
	if armed {
		close(entered)
		<-release
	}
	return l.Log.Append(ctx, writes...)
}

// TestReadsDoNotWaitForAWrite: while a write holds its session's tree
// (its append not answered yet), a subscription, a watch, the pending
// turns and the pending questions of that session are answered from what
// the session published, without waiting for the write; the write, once
// it lands, is delivered to the subscription and the watch, after what
// they caught up on, with no gap.
func TestReadsDoNotWaitForAWrite(t *testing.T) {
	e := newEnv(t, nil)
	l := &stallingLog{}
	e.shutdown()
	e.openWith(l)
	id := openConversation(t, e.hub, "a", "b")
	l.arm()
	sent := make(chan error, 1)
	go func() {
		_, err := e.hub.Send(context.Background(), "a", id, textEnv("held"))
		sent <- err
	}()
	<-l.entered
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := e.hub.Subscribe(ctx, "b", feed.SubscribeOptions{})
	if err != nil {
		t.Fatalf("subscribe while a write is held: %v", err)
	}
	w, err := e.hub.Watch(ctx, "b", false, id, feed.WatchOptions{})
	if err != nil {
		t.Fatalf("watch while a write is held: %v", err)
	}
	if _, err := e.hub.PendingTurns(ctx, "b"); err != nil {
		t.Fatalf("pending turns while a write is held: %v", err)
	}
	if _, err := e.hub.ListQuestions(ctx, "b", false, "", session.ID{}); err != nil {
		t.Fatalf("questions while a write is held: %v", err)
	}
	close(l.release)
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*feed.Subscription{"subscription": sub, "watch": w} {
		var seqs []uint64
		for {
			d, err := s.Next(ctx)
			if err != nil {
				t.Fatalf("%s: %v after %v", name, err, seqs)
			}
			seqs = append(seqs, d.GetEnvelope().GetSeq())
			if d.GetEnvelope().GetText().GetText() == "held" {
				break
			}
		}
		for i, seq := range seqs {
			if seq != uint64(i+1) {
				t.Fatalf("%s delivered seqs %v: want 1, 2, ... with no gap", name, seqs)
			}
		}
		s.Close()
	}
}
