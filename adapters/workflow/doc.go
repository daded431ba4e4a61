// Package workflow implements the "workflow@1" session type: a declarative
// transition graph (package transition) picks who speaks after each turn or
// terminates the session.
//
// Knobs: "graph" (required, the graph's JSON form), "max_handoffs" (optional
// integer >= 1: the most handoff or escalate packets the session honours;
// the next one closes it with "max_handoffs"), "supervisor" (optional: the
// participant escalations go to; the creator by default), "max_turns"
// (optional integer >= 1: the most turns, over the graph's max_turns).
// [Adapter.DefaultKnobs] gives max_turns [DefaultMaxTurns] to a session
// nothing else caps (no graph max_turns, no max_handoffs): the hub adds it
// to the metadata at open, so loops stop loudly and replays stay the same.
//
// The fold of a turn (a text or packet envelope), in this order:
//
//  1. apply the packet's context updates (so conditions in this same fold
//     see them);
//  2. record the speaker, count the turn, add the usage;
//  3. decide: a finish packet closes with its reason (default "finished");
//     a handoff with a target goes to that target; an escalate goes to the
//     supervisor; anything else (text, a handoff without a target) is
//     decided by the graph, whose tool_called conditions see the packet's
//     tool;
//  4. a handoff or escalate packet counts against max_handoffs and makes
//     the next speaker the active agent;
//  5. after the decision: a terminate decision closes with its reason;
//     else a handoff past max_handoffs closes with "max_handoffs"; else
//     reaching max_turns closes with "max_turns". A graph's own terminate
//     reason wins over max_turns on the same turn.
//
// Context sets fold at any time from any participant and are not turns.
// The package is pure: no clock, no I/O, no goroutines, no map-order
// dependence.
package workflow
