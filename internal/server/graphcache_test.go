package server

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

func TestGraphCache(t *testing.T) {
	c := &GraphCache{Registry: transition.NewRegistry(), Max: 2}
	a, _ := json.Marshal(transition.Sequence("a", "b"))
	b, _ := json.Marshal(transition.Sequence("b", "a"))
	g1, err := c.Decode(a)
	if err != nil {
		t.Fatal(err)
	}
	if g2, _ := c.Decode(a); g2 != g1 {
		t.Error("the same bytes decoded twice")
	}
	if _, err := c.Decode([]byte(`{"initial_speaker":1}`)); err == nil {
		t.Error("a bad graph decoded")
	}
	if len(c.graphs) != 1 {
		t.Errorf("cache holds %d graphs after a failure, want 1", len(c.graphs))
	}
	c.Decode(b)
	c.Decode([]byte(`{"initial_speaker":"x"}`)) // the third starts afresh
	if len(c.graphs) != 1 {
		t.Errorf("cache holds %d graphs past Max", len(c.graphs))
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); c.Decode(a) }()
	}
	wg.Wait()
}

// TestGraphCacheByValue: a graph is kept by the value it was decoded
// from: the same value again is not written as JSON again; another value
// (equal or not) is decoded from its own JSON, never given another's
// graph; a failure is returned as it is and not kept; at most Max values
// are kept.
func TestGraphCacheByValue(t *testing.T) {
	c := &GraphCache{Registry: transition.NewRegistry(), Max: 3}
	value := func(g *transition.Graph) *structpb.Value {
		raw, _ := json.Marshal(g)
		return session.MustValue(json.RawMessage(raw))
	}
	decode := func(v *structpb.Value) (*transition.Graph, int, error) {
		calls := 0
		g, err := c.DecodeValue(v, func() (json.RawMessage, error) { calls++; return session.ValueJSON(v) })
		return g, calls, err
	}
	ab, ba := value(transition.Sequence("a", "b")), value(transition.Sequence("b", "a"))
	g1, calls, err := decode(ab)
	if err != nil || calls != 1 || g1.InitialSpeaker != "a" {
		t.Fatalf("first decode: %v, %d JSON, %v", g1, calls, err)
	}
	if g, calls, err := decode(ab); g != g1 || calls != 0 || err != nil {
		t.Fatalf("the same value again: %p (want %p), %d JSON (want 0), %v", g, g1, calls, err)
	}
	if g, calls, err := decode(ba); err != nil || calls != 1 || g == g1 || g.InitialSpeaker != "b" {
		t.Fatalf("another value: %v, %d JSON, %v; want its own graph", g, calls, err)
	}
	if g, calls, err := decode(value(transition.Sequence("a", "b"))); err != nil || calls != 1 || g != g1 {
		t.Fatalf("an equal value: %p, %d JSON, %v; want its JSON written and the graph of those bytes", g, calls, err)
	}
	bad := errors.New("no JSON")
	if _, err := c.DecodeValue(ab, func() (json.RawMessage, error) { return nil, bad }); err != nil {
		t.Fatalf("a kept value's JSON was asked for: %v", err)
	}
	odd := structpb.NewStringValue("not a graph")
	if _, err := c.DecodeValue(odd, func() (json.RawMessage, error) { return nil, bad }); !errors.Is(err, bad) {
		t.Fatalf("raw's error: got %v", err)
	}
	if _, _, err := decode(odd); err == nil {
		t.Fatal("a string decoded as a graph")
	}
	if _, ok := c.byValue[odd]; ok {
		t.Fatal("a failed decode was kept")
	}
	for i := range 10 {
		if _, _, err := decode(value(transition.Sequence("a", "b"))); err != nil {
			t.Fatal(err)
		}
		if len(c.byValue) > c.Max {
			t.Fatalf("%d values kept after %d more, the bound is %d", len(c.byValue), i+1, c.Max)
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { decode(ab) })
	}
	wg.Wait()
}
