// Command billing is the Go specialist of the three-language triage
// session (examples/threelang): it serves the agent "billing", answering
// each of its turns with its fix as a packet that records it in the
// session's context; the graph then hands the turn back to the router
// (Python), as examples/triage's billing does.
//
//	go run ./examples/threelang/billing --hub 127.0.0.1:7420 [--run threelang]
//
// It serves the sessions labelled example=RUN (the router's --run) until
// interrupted (SIGINT or SIGTERM); examples/threelang/run.sh starts it
// with the router and the TypeScript specialist and stops all three.
package main
