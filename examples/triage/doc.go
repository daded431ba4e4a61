// Command triage runs a router that hands a customer's problems to
// specialists with transfer_to_<name> handoff packets; each specialist
// answers and the turn reverts to the router, which finishes the session
// with a finish packet ("resolved"). The graph is built with the SDK's
// builders (the same graph as examples/graphs/triage.json).
//
//	go run ./examples/triage
//	go run ./examples/triage --hub 127.0.0.1:7420
package main
