// Package consulting implements the "consulting@1" session type: one
// question, one answer. The creator asks (one turn), the other participant
// answers (one turn), and the session closes with "consulting_complete".
// Exactly two participants.
//
// The package is pure: no clock, no I/O, no goroutines, no map-order
// dependence.
package consulting
