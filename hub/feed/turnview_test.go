package feed_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// nextTurn reads sub until a your_turn delivery.
func nextTurn(t *testing.T, sub *feed.Subscription) *hubpb.Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		d, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.GetYourTurn() {
			return d
		}
		if d.GetView() != nil {
			t.Errorf("a delivery that is no turn notice carries a view: %v", d)
		}
	}
}

// TestTurnViewInTheNotice: a subscription opened with TurnView gets each
// turn notice with the agent's view of the session, the one View returns;
// one opened without gets none; an unknown view is refused.
func TestTurnViewInTheNotice(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	id := openConversation(t, e.hub, "a", "b")
	with, err := e.hub.Subscribe(ctx, "b", feed.SubscribeOptions{TurnView: &feed.ViewOptions{Name: feed.ViewWindowed, Window: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer with.Close()
	without, err := e.hub.Subscribe(ctx, "b", feed.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer without.Close()
	for _, text := range []string{"first", "second"} {
		if _, err := e.hub.Send(ctx, "a", id, textEnv(text)); err != nil {
			t.Fatal(err)
		}
		d := nextTurn(t, with)
		want, err := e.hub.View(ctx, "b", id, feed.ViewOptions{Name: feed.ViewWindowed, Window: 1})
		if err != nil {
			t.Fatal(err)
		}
		if v := d.GetView(); !proto.Equal(v, want) || len(v.GetItems()) != 1 || v.GetItems()[0].GetText() != text {
			t.Errorf("turn after %q: view %v, want %v", text, v, want)
		}
		if d := nextTurn(t, without); d.GetView() != nil {
			t.Errorf("a subscription without TurnView got a view: %v", d)
		}
		if _, err := e.hub.Send(ctx, "b", id, textEnv("reply to "+text)); err != nil {
			t.Fatal(err)
		}
	}
	_, err = e.hub.Subscribe(ctx, "b", feed.SubscribeOptions{TurnView: &feed.ViewOptions{Name: "everything"}})
	if !errors.Is(err, session.ErrMalformed) {
		t.Errorf("an unknown turn view: %v, want ErrMalformed", err)
	}
	_, err = e.hub.Subscribe(ctx, "b", feed.SubscribeOptions{TurnView: &feed.ViewOptions{History: "cousins"}})
	if !errors.Is(err, session.ErrMalformed) {
		t.Errorf("an unknown turn view history: %v, want ErrMalformed", err)
	}
}
