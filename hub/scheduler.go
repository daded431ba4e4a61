package hub

import (
	"container/heap"
	"sync"
	"time"
)

// Clock is the hub's source of time. Deadlines are computed from logged
// timestamps and Now; AfterFunc arms the one timer the scheduler needs.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once d has passed (in its own goroutine or, for a
	// test clock, when the test advances time) and returns a function that
	// stops it.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// systemClock is the wall clock, the default.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// scheduler keeps every session's next deadline in a min-heap and one clock
// timer armed for the earliest. Idle sessions cost a heap slot, no
// goroutine.
type scheduler struct {
	clock   Clock
	run     func(*Session) // writes a session's due timers (Hub.runTimers)
	mu      sync.Mutex
	q       dueHeap
	stopT   func() bool
	armedAt time.Time
	running bool
	stopped bool
}

// fireParallelism bounds how many sessions' timers are written at once.
const fireParallelism = 64

func (sc *scheduler) init(clock Clock, run func(*Session)) { sc.clock, sc.run = clock, run }

func (sc *scheduler) start() {
	sc.mu.Lock()
	sc.running = true
	sc.arm()
	sc.mu.Unlock()
}

func (sc *scheduler) stop() {
	sc.mu.Lock()
	sc.stopped = true
	if sc.stopT != nil {
		sc.stopT()
		sc.stopT = nil
	}
	sc.mu.Unlock()
}

// add schedules a session (its lock held or not yet shared).
func (sc *scheduler) add(s *Session) { sc.update(s) }

// update recomputes a session's next deadline; the caller holds its lock.
func (sc *scheduler) update(s *Session) {
	at, ok := s.m.Next()
	if s.gone.Load() {
		ok = false // unloaded: its new owner runs its timers
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	switch {
	case !ok && s.heapIdx >= 0:
		heap.Remove(&sc.q, s.heapIdx)
	case ok && s.heapIdx >= 0:
		s.due = at
		heap.Fix(&sc.q, s.heapIdx)
	case ok:
		s.due = at
		heap.Push(&sc.q, s)
	}
	sc.arm()
}

// retry schedules a session's timers again at at, after a write the log
// did not take (a full disk, a failed append: a failed session is reloaded
// then); the caller holds its lock.
func (sc *scheduler) retry(s *Session, at time.Time) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if s.gone.Load() {
		return
	}
	s.due = at
	if s.heapIdx >= 0 {
		heap.Fix(&sc.q, s.heapIdx)
	} else {
		heap.Push(&sc.q, s)
	}
	sc.arm()
}

// timerRetry is how long a firing the log refused waits to be tried again.
const timerRetry = time.Second

func (sc *scheduler) remove(s *Session) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if s.heapIdx >= 0 {
		heap.Remove(&sc.q, s.heapIdx)
	}
}

// arm sets the clock timer for the earliest deadline (mu held).
func (sc *scheduler) arm() {
	if !sc.running || sc.stopped || len(sc.q) == 0 {
		return
	}
	next := sc.q[0].due
	if sc.stopT != nil && !sc.armedAt.After(next) {
		return // already armed early enough
	}
	if sc.stopT != nil {
		sc.stopT()
	}
	d := next.Sub(sc.clock.Now())
	if d < 0 {
		d = 0
	}
	sc.armedAt = next
	sc.stopT = sc.clock.AfterFunc(d, sc.fire)
}

// fire runs the timers of every session due now, in parallel up to
// fireParallelism, and returns when they are written.
func (sc *scheduler) fire() {
	now := sc.clock.Now()
	sc.mu.Lock()
	sc.stopT = nil
	var due []*Session
	for len(sc.q) > 0 && !sc.q[0].due.After(now) && !sc.stopped {
		due = append(due, heap.Pop(&sc.q).(*Session))
	}
	sc.mu.Unlock()
	var wg sync.WaitGroup
	sem := make(chan struct{}, fireParallelism)
	for _, s := range due {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			sc.run(s)
		}()
	}
	wg.Wait()
	sc.mu.Lock()
	sc.arm()
	sc.mu.Unlock()
}

// dueHeap orders sessions by next deadline.
type dueHeap []*Session

func (q dueHeap) Len() int { return len(q) }

func (q dueHeap) Less(i, j int) bool { return q[i].due.Before(q[j].due) }

func (q dueHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].heapIdx, q[j].heapIdx = i, j
}

func (q *dueHeap) Push(x any) {
	s := x.(*Session)
	s.heapIdx = len(*q)
	*q = append(*q, s)
}

func (q *dueHeap) Pop() any {
	old := *q
	s := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	s.heapIdx = -1
	return s
}
