// Package huba2a serves hubd agents to outside A2A clients (the
// Agent2Agent protocol, version 1.0, JSON-RPC binding): an operator
// exposes some of its agents (a2aconf.Exposed), and a client written
// against any A2A SDK discovers each by its agent card and sends it
// messages inside tasks.
//
// A task is a hubd session: the caller (authenticated as any hubd agent
// is) opens it with the exposed agent, its message is the caller's turn,
// and the agent's reply, logged like any envelope, is the task's artifact
// and message. The task's id is the session's id and its context id the
// session's thread key, so a message with the context of an earlier task
// opens the thread's next session; a hubd question to the caller is
// TASK_STATE_INPUT_REQUIRED, answered by the caller's next message; the
// terminal states come from the session's close reason (see TaskState).
// Everything is read back from the log: a task outlives a restart of the
// hub and a client that went away, and a stream resumed with
// SubscribeToTask starts with the task as the log has it, then every
// change after it, with no gap and no duplicate.
//
// The routes, on the hub's HTTP address:
//
//	GET  /.well-known/agent-card.json                 the hub's card: its agents as skills, one interface each
//	POST /a2a                                         JSON-RPC, the agent named by the request's tenant
//	GET  /a2a/agents/{agent}/.well-known/agent-card.json  an exposed agent's own card
//	POST /a2a/agents/{agent}                          JSON-RPC to that agent
package huba2a
