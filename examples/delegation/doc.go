// Command delegation runs seed 002's main agent and its sub-agents: the
// user asks MainAgent for an account review; MainAgent calls
// ResearchAgent and TasksAgent (a blocking call and a background task it
// polls, messages and cancels), may call only the delegates the session
// declared, asks the user a question with fixed options, and answers with
// the usage of its run. The program prints MainAgent's timeline across the
// call tree, then the tree with each session's state, turns and usage.
//
//	go run ./examples/delegation                       # with an in-process hub
//	go run ./examples/delegation --hub 127.0.0.1:7420  # against a running hubd
package main
