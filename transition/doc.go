// Package transition is the workflow orchestrator script: a [Graph] of
// transitions (a condition and a target each, with a priority) that picks
// the next speaker of a workflow session, or terminates it, after each
// accepted turn.
//
// Evaluation order, stated plainly because the source documents contradict
// each other on it: transitions are sorted by Priority ascending (0 before
// 1), ties keep their list order; the first transition whose condition holds
// and whose target resolves decides; when none does, the DefaultTarget
// decides; a graph without a default target terminates with "after_work".
//
// Conditions and targets are named values with JSON args, built by a
// [Registry] instance (there is no global table). Custom ones register by
// name and round-trip through the JSON form, which is the shape of the
// source system's TransitionGraph.to_dict():
//
//	{"version": 1,
//	 "initial_speaker": "alice",
//	 "transitions": [{"when": {"name": "from_speaker", "args": {"agent_id": "alice"}},
//	                  "then": {"name": "agent", "args": {"agent_id": "bob"}}, "priority": 0}],
//	 "default_target": {"name": "terminate", "args": {"reason": "sequence_complete"}},
//	 "max_turns": 3}
//
// Invariant: the package is pure. It reads no clock, draws no randomness,
// starts no goroutine and never depends on map iteration order; a Graph is
// immutable once built and safe to share between sessions.
package transition
