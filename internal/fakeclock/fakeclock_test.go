package fakeclock_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/internal/fakeclock"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestAdvance: timers fire in deadline order (ties in arming order), each
// with the clock at its deadline; a stopped timer never fires; a timer armed
// by a firing one fires in the same Advance if it falls due; the clock never
// goes back.
func TestAdvance(t *testing.T) {
	c := fakeclock.New(epoch)
	var fired []string
	note := func(name string) func() {
		return func() { fired = append(fired, fmt.Sprintf("%s@%v", name, c.Now().Sub(epoch))) }
	}
	c.AfterFunc(3*time.Second, note("c"))
	c.AfterFunc(time.Second, note("a"))
	c.AfterFunc(3*time.Second, note("d"))
	stop := c.AfterFunc(2*time.Second, note("stopped"))
	c.AfterFunc(time.Second, func() { note("b")(); c.AfterFunc(time.Second, note("chained")) })
	c.AfterFunc(10*time.Second, note("later"))
	if !stop() || stop() {
		t.Fatal("stop reports wrongly whether the timer was armed")
	}
	if n := c.Pending(); n != 5 {
		t.Fatalf("%d pending, want 5", n)
	}
	c.Advance(5 * time.Second)
	if got, want := strings.Join(fired, " "), "a@1s b@1s chained@2s c@3s d@3s"; got != want {
		t.Fatalf("fired %s, want %s", got, want)
	}
	if now := c.Now(); !now.Equal(epoch.Add(5 * time.Second)) {
		t.Fatalf("now %v", now)
	}
	c.Set(epoch) // never backwards
	if now := c.Now(); !now.Equal(epoch.Add(5 * time.Second)) {
		t.Fatalf("Set moved the clock back to %v", now)
	}
	if n := c.Pending(); n != 1 {
		t.Fatalf("%d pending, want 1 (later)", n)
	}
	c.Advance(0)
	if len(fired) != 5 {
		t.Fatalf("Advance(0) fired %v", fired[5:])
	}
}
