package feed_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal"
)

// treeWatcher is an operator's verbose watch of a tree, resumed from its
// cursors as a client would after a broken stream.
type treeWatcher struct {
	h       *served
	root    session.ID
	sub     *feed.Subscription
	last    map[string]uint64 // last seq read, per session
	started bool
}

// resume (re)starts the watch from what was read so far.
func (w *treeWatcher) resume(t *testing.T) {
	if w.sub != nil {
		w.sub.Close()
	}
	opts := feed.WatchOptions{Tree: true, Verbose: true, From: w.last[w.root.String()] + 1, Cursors: map[string]uint64{}}
	for id, seq := range w.last {
		opts.Cursors[id] = seq
	}
	sub, err := w.h.Watch(context.Background(), "", true, w.root, opts)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	w.sub, w.started = sub, true
}

// read takes one delivery, checking it is the next of its session.
func (w *treeWatcher) read(t *testing.T, ctx context.Context) error {
	d, err := w.sub.Next(ctx)
	if err != nil {
		return err
	}
	env := d.GetEnvelope()
	id, seq := env.GetSessionId(), env.GetSeq()
	if want := w.last[id] + 1; seq != want {
		t.Fatalf("session %s: watch delivered seq %d after %d (a gap or a repeat)", id, seq, w.last[id])
	}
	w.last[id] = seq
	return nil
}

// FuzzTreeWatch drives a call tree with delegations (blocking and
// background), sends, closes and watch restarts chosen by the input, then
// checks that the watch, across its restarts, delivered every envelope of
// every session of the tree exactly once and in order.
func FuzzTreeWatch(f *testing.F) {
	f.Add([]byte{0, 4, 1, 7, 2, 10, 6, 4, 3})
	f.Add([]byte{5, 1, 0, 0, 4, 8, 2, 14, 3, 4})
	f.Add([]byte{0, 0, 0, 1, 4, 1, 4, 2, 4, 9, 3})
	// One hub (on an in-memory badger log) serves every input of a
	// process: each input grows a tree of its own, and opening badger per
	// input would make the fuzzer crawl.
	l, err := wal.Open(wal.Options{InMemory: true, NoSync: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { l.Close() })
	h, err := openServed(context.Background(), hub.Config{Log: server.WALLog(l), Adapters: server.Adapters(nil)})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { h.Close() })
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 48 {
			ops = ops[:48]
		}
		ctx := context.Background()
		root := conversationWith(t, h, "user", "main")
		tree := []session.ID{root}
		w := &treeWatcher{h: h, root: root, last: map[string]uint64{}}
		for _, b := range ops {
			target := tree[int(b/7)%len(tree)]
			switch b % 7 {
			case 0, 5: // delegations: refused when it is not main's turn, or target ended
				mode := map[byte]string{0: "background", 5: "blocking"}[b%7]
				resp, err := h.Delegate(ctx, "main", &hubpb.DelegateRequest{SessionId: target.String(), Mode: mode,
					Children: []*hubpb.OpenRequest{{Type: "conversation@1", Participants: []*hubpb.Participant{{Name: "worker", AutoAccept: true}}}}})
				if err == nil {
					for _, ch := range resp.GetChildren() {
						tree = append(tree, mustID(t, ch.GetMeta().GetSessionId()))
					}
				}
			case 1:
				_, _ = h.Send(ctx, "main", target, textEnv("m"))
			case 2:
				_, _ = h.Send(ctx, "worker", target, textEnv("w"))
			case 3:
				_, _ = h.Send(ctx, "user", target, textEnv("u"))
			case 4:
				w.resume(t)
			case 6:
				_, _ = h.CloseSession(ctx, "", true, target, "")
			}
			if w.started && b%2 == 0 { // read a little while the tree changes
				rctx, cancel := context.WithTimeout(ctx, time.Millisecond)
				err := w.read(t, rctx)
				cancel()
				if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, io.EOF) {
					t.Fatalf("watch: %v", err)
				}
			}
		}
		want := 0
		for _, id := range tree {
			info, err := h.Get(ctx, "", true, id)
			if err != nil {
				t.Fatal(err)
			}
			want += int(info.GetSeq())
		}
		w.resume(t)
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		for total(w.last) < want {
			if err := w.read(t, rctx); err != nil {
				t.Fatalf("after %d of %d envelopes: %v\nread: %v", total(w.last), want, err, w.last)
			}
		}
		for _, id := range tree {
			info, _ := h.Get(ctx, "", true, id)
			if got := w.last[id.String()]; got != info.GetSeq() {
				t.Errorf("session %v: watched up to seq %d of %d", id, got, info.GetSeq())
			}
		}
		w.sub.Close()
	})
}

func total(m map[string]uint64) int {
	n := 0
	for _, v := range m {
		n += int(v)
	}
	return n
}
