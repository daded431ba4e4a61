// Command supervisor runs seed 000's supervisor team in one workflow
// session: the user talks to a router, who hands off to billing and tech
// with transfer_to_<name>; a specialist asks the router for help or
// escalates to it (the graph's supervisor); an @mention goes straight to
// an agent. The session is printed in seed 000's event names (message,
// ai_message, tool_usage, tool_response, done) and closes with the user's
// finish, "resolved".
//
//	go run ./examples/supervisor                       # with an in-process hub
//	go run ./examples/supervisor --hub 127.0.0.1:7420  # against a running hubd
package main
