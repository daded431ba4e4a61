// Package hubmcp serves hubd to a Model Context Protocol host (an IDE
// assistant, a desktop chat application): the host's model takes part in
// sessions as one hubd agent, through tools that call the hub's RPCs.
//
// Each tool is one RPC of hubsvc.Hub: its input is the RPC's request
// message and its structured output the answer, both in the JSON form of
// hubpb.MarshalJSON, and both schemas are JSON Schema generated from the
// messages' descriptors (see [Schema]), so that they follow hub.proto. A
// refusal of the hub is a tool result with isError set, whose text is the
// hub's stable reason and message, for the model to read and act on. A
// session's transcript is a resource, hubd://sessions/{session_id}/transcript.
//
// The tools call the hub as the client they are given: `hubd mcp` (over
// stdio) dials the hub with the agent's token; the hub's HTTP address
// serves the same tools at /mcp (streamable HTTP) for the caller the
// request authenticates, exactly as its JSON API would. Every tool is
// therefore limited to what that agent may do.
package hubmcp
