// Package discussion implements the "discussion@1" session type: two or
// more participants speak in strict round robin, starting with the creator
// and following the participant order from there. A sender out of order is
// rejected with adapters.ErrOutOfTurn. Knob "max_turns" (optional integer
// >= 1) closes the session with "max_turns" once that many turns were
// taken; a finish packet closes it with its reason.
//
// The package is pure: no clock, no I/O, no goroutines, no map-order
// dependence.
package discussion
