// Command shape measures how a Go package's rooms hold together: which of
// its files use what another file declares (a reference between files),
// how many of those references run back up its own layering, how many
// fields a type has, and how many lines of hand-written Go each package
// holds.
//
//	go run ./bench/shape                  # the hub package and the tree
//	go run ./bench/shape -pkg ./hub -type Hub
//
// The layering is the order of the package's files that makes fewest
// references run backwards: a file using another's declarations sits
// above it. It is found with the greedy heuristic of Eades, Lin and Smyth
// (sinks last, sources first, else the file whose uses outnumber its
// users most), ties broken by name, so the figure is the same for the
// same code; a reference running back up means two files use each other,
// directly or round a cycle.
package main
