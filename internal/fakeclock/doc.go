// Package fakeclock is a manual clock for tests: time moves only when the
// test calls Advance or Set, and timers armed with AfterFunc run, in
// deadline order, in the goroutine that moved time.
package fakeclock
