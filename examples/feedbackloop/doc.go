// Command feedbackloop runs a drafter and a reviewer taking turns until the
// reviewer approves: its packet sets the context variable approved = true,
// which a context_equals rule sees on the same turn and terminates the
// session with "approved". A cap of max_turns stops a loop that never
// converges.
//
//	go run ./examples/feedbackloop
//	go run ./examples/feedbackloop --hub 127.0.0.1:7420
package main
