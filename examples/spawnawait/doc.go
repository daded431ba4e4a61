// Command spawnawait runs seed 001's spawn and await: a planner fans one
// question out to three child workflows (a researcher and a writer each,
// one topic per child), waits for all of them, and answers with their
// results and the tokens they used; the call tree is printed with each
// session's usage and the sum over the tree.
//
//	go run ./examples/spawnawait                       # with an in-process hub
//	go run ./examples/spawnawait --hub 127.0.0.1:7420  # against a running hubd
package main
