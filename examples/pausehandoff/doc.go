// Command pausehandoff runs seed 003's three cases: agent_a pauses for a
// child's result (a blocking delegation to agent_b), pauses for a person's
// input (a question, answered with --answer or typed on stdin), and, in a
// child workflow the caller opened, passes the duty to answer the caller
// to agent_b (FinishAgentResult).
//
//	go run ./examples/pausehandoff --answer Thursday                       # with an in-process hub
//	go run ./examples/pausehandoff --hub 127.0.0.1:7420                    # against a running hubd; answer on stdin
package main
