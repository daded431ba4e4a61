// Package conversation implements the "conversation@1" session type: two
// participants with free turns. Either may speak at any time; the one who
// did not speak last is the expected next speaker (for turn notices and
// turn_within timers), starting with the creator. It never closes itself:
// it ends by an explicit close, a finish packet, a timer or its TTL.
//
// The package is pure: no clock, no I/O, no goroutines, no map-order
// dependence.
package conversation
