package feed_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
)

// TestViewCacheIsTheLog: the view kept by the fold equals the view read
// from the log, for every view, both participants, after every send of a
// conversation longer than the cache's tail, with texts of every size
// (some larger than the tail's bytes) and envelopes addressed to one
// participant or to none, and again after a restart (the cache rebuilt by
// hydration).
func TestViewCacheIsTheLog(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	id := openConversation(t, e.hub, "a", "b")
	r := rand.New(rand.NewPCG(1, 2))
	views := []feed.ViewOptions{{}, {Name: feed.ViewFull}, {Name: feed.ViewLast}, {Name: feed.ViewWindowed, Window: 1},
		{Name: feed.ViewWindowed, Window: 3}, {Name: feed.ViewWindowed}, {Name: feed.ViewWindowed, Window: 100}}
	check := func(step int) {
		t.Helper()
		for _, agent := range []string{"a", "b"} {
			for _, o := range views {
				got, err := e.hub.View(ctx, agent, id, o)
				if err != nil {
					t.Fatal(err)
				}
				want, err := e.hub.View(ctx, agent, id, feed.Scanned(o))
				if err != nil {
					t.Fatal(err)
				}
				if !proto.Equal(got, want) {
					t.Fatalf("step %d, %s's view %+v:\ncached %v\nlog    %v", step, agent, o, got, want)
				}
			}
		}
	}
	check(0)
	for i := range 150 {
		from := []string{"a", "b"}[r.IntN(2)]
		size := []int{1, 10, 100, 3000}[r.IntN(4)]
		env := textEnv(strings.Repeat("x", size))
		switch r.IntN(4) {
		case 0:
			env.Audience = &hubpb.Audience{} // the log only
		case 1:
			env.Audience = &hubpb.Audience{Names: []string{map[string]string{"a": "b", "b": "a"}[from]}}
		}
		if r.IntN(5) == 0 {
			env = &hubpb.Envelope{Type: "app.note", Payload: &hubpb.Envelope_Custom{Custom: []byte("not in a view")}}
		}
		if _, err := e.hub.Send(ctx, from, id, env); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 || i > 140 {
			check(i + 1)
		}
	}
	e.restart()
	check(-1)
}
