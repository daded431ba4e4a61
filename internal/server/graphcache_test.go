package server

import (
	"encoding/json"
	"sync"
	"testing"

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
