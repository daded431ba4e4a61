// An MCP host written by others (@modelcontextprotocol/sdk's client)
// takes part in a hubd session: one over stdio (hubd mcp), one over the
// hub's streamable HTTP endpoint (/mcp).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { HUBD, startHubd } from "./hubd.mjs";

// bob speaks first, then alice, then the session ends.
const graph = {
  version: 1, initial_speaker: "bob",
  transitions: [{ when: { name: "from_speaker", args: { agent_id: "bob" } }, then: { name: "agent", args: { agent_id: "alice" } } }],
  default_target: { name: "terminate", args: { reason: "done" } }, max_turns: 2,
};

const answer = (r) => {
  assert.equal(r.isError ?? false, false, r.content?.[0]?.text);
  return r.structuredContent;
};

test("an MCP host takes turns over stdio and streamable HTTP", async (t) => {
  const hub = await startHubd();
  t.after(() => hub.stop());
  const bob = new Client({ name: "inspector-like-host", version: "1.0.0" });
  await bob.connect(new StdioClientTransport({ command: HUBD, args: ["mcp", "--hub", hub.grpc, "--as", "bob"] }));
  t.after(() => bob.close());
  const alice = new Client({ name: "inspector-like-host", version: "1.0.0" });
  await alice.connect(new StreamableHTTPClientTransport(new URL(`http://${hub.http}/mcp`),
    { requestInit: { headers: { "X-Hubd-Agent": "alice" } } }));
  t.after(() => alice.close());

  assert.equal(bob.getServerVersion().name, "hubd");
  const { tools } = await bob.listTools();
  const names = tools.map((x) => x.name);
  for (const n of ["pending_turns", "get_view", "send", "open_session", "list_questions", "answer_question", "delegate", "get_tree"]) {
    assert.ok(names.includes(n), `no tool ${n} in ${names}`);
  }
  const send = tools.find((x) => x.name === "send");
  assert.equal(send.inputSchema.type, "object");
  assert.ok(send.inputSchema.properties.envelope, "send takes an envelope");
  const { resourceTemplates } = await bob.listResourceTemplates();
  assert.deepEqual(resourceTemplates.map((r) => r.uriTemplate), ["hubd://sessions/{session_id}/transcript"]);

  const opened = answer(await bob.callTool({ name: "open_session", arguments: {
    type: "workflow@1", graph, participants: [{ name: "alice", auto_accept: true }] } }));
  const id = opened.session.meta.session_id;
  const text = (t) => ({ session_id: id, envelope: { type: "text", text: { text: t } } });

  const early = await alice.callTool({ name: "send", arguments: text("me first") });
  assert.equal(early.isError, true);
  assert.match(early.content[0].text, /^OUT_OF_TURN: /);
  answer(await bob.callTool({ name: "send", arguments: text("a question of taste") }));
  const turns = answer(await alice.callTool({ name: "pending_turns", arguments: {} }));
  assert.ok(JSON.stringify(turns).includes("a question of taste"), JSON.stringify(turns));
  answer(await alice.callTool({ name: "send", arguments: text("an answer of taste") }));
  const info = answer(await bob.callTool({ name: "get_session", arguments: { session_id: id } }));
  assert.equal(info.state, "CLOSED");
  assert.equal(info.close_reason, "done");

  const res = await bob.readResource({ uri: `hubd://sessions/${id}/transcript` });
  const lines = res.contents[0].text.trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(lines.filter((e) => e.type === "text").map((e) => e.text.text), ["a question of taste", "an answer of taste"]);
});

test("the HTTP endpoint refuses a host that names nobody", async (t) => {
  const hub = await startHubd();
  t.after(() => hub.stop());
  const nobody = new Client({ name: "inspector-like-host", version: "1.0.0" });
  await assert.rejects(nobody.connect(new StreamableHTTPClientTransport(new URL(`http://${hub.http}/mcp`))), /401|UNAUTHENTICATED/);
});
