package fakeclock

import (
	"slices"
	"sync"
	"time"
)

// Clock is a manual clock. Its zero value is not usable; call New.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
	seq    int
}

type timer struct {
	at      time.Time
	seq     int
	f       func()
	stopped bool
}

// New returns a clock set to t.
func New(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc arms f to run once the clock reaches now+d.
func (c *Clock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &timer{at: c.now.Add(d), seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// Advance moves the clock forward by d, running every timer that falls due
// on the way, in deadline order, with the clock set to each one's deadline.
func (c *Clock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Set moves the clock to t (never backwards), running due timers as Advance
// does.
func (c *Clock) Set(t time.Time) {
	for {
		c.mu.Lock()
		slices.SortFunc(c.timers, func(a, b *timer) int {
			if n := a.at.Compare(b.at); n != 0 {
				return n
			}
			return a.seq - b.seq
		})
		var next *timer
		for len(c.timers) > 0 && (c.timers[0].stopped || !c.timers[0].at.After(t)) {
			x := c.timers[0]
			c.timers = c.timers[1:]
			if !x.stopped {
				next = x
				break
			}
		}
		if next == nil {
			if t.After(c.now) {
				c.now = t
			}
			c.mu.Unlock()
			return
		}
		next.stopped = true
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
	}
}

// Pending returns how many timers are armed.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.stopped {
			n++
		}
	}
	return n
}
