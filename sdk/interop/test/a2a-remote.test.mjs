// An outside A2A agent written with others' SDK (@a2a-js/sdk's server) takes
// part in a hubd session: hubd, given it as a remote (serve --a2a), speaks
// A2A to it on its turns. A session delegates a task to it; the agent asks
// for input (TASK_STATE_INPUT_REQUIRED), which becomes a hubd question that
// a person answers with the real `hubd questions answer`; the agent's
// artifact comes back as the delegation's result.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { HUBD, startHubd } from "./hubd.mjs";
import { startTranslator } from "./a2a-translator.mjs";

const run = promisify(execFile);

// until polls f (a real hub and agent are at work) until it returns
// something, for at most 4 s.
async function until(what, f) {
  const deadline = Date.now() + 4000;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`no ${what} within 4 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const answer = (r) => {
  assert.equal(r.isError ?? false, false, r.content?.[0]?.text);
  return r.structuredContent;
};

test("a remote A2A agent takes a delegated task, asks a person through hubd, and answers with its artifact", async (t) => {
  const translator = await startTranslator();
  t.after(() => translator.stop());
  const dir = mkdtempSync(join(tmpdir(), "hubd-a2a-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const conf = join(dir, "a2a.json");
  writeFileSync(conf, JSON.stringify({ remote: [{ agent: "translator", card: translator.card }] }));
  const hub = await startHubd("--a2a", conf);
  t.after(() => hub.stop());

  // alice, a model host over MCP, opens a session and delegates to the remote's hubd name.
  const alice = new Client({ name: "delegating-host", version: "1.0.0" });
  await alice.connect(new StreamableHTTPClientTransport(new URL(`http://${hub.http}/mcp`),
    { requestInit: { headers: { "X-Hubd-Agent": "alice" } } }));
  t.after(() => alice.close());
  const opened = answer(await alice.callTool({ name: "open_session", arguments: {
    type: "conversation@1", participants: [{ name: "alice" }, { name: "bob", auto_accept: true }] } }));
  const parent = opened.session.meta.session_id;
  const delegated = answer(await alice.callTool({ name: "delegate", arguments: { session_id: parent,
    children: [{ type: "conversation@1", participants: [{ name: "translator", auto_accept: true }], task: "good morning" }] } }));
  const child = delegated.children[0].meta.session_id;

  // The agent's INPUT_REQUIRED is a question for alice (the root's creator), answered with the CLI.
  const cli = ["--hub", hub.grpc, "--as", "alice"];
  const q = await until("question", async () => {
    const { stdout } = await run(HUBD, ["questions", "list", "--output", "json", ...cli]);
    return stdout.trim() ? JSON.parse(stdout.trim().split("\n")[0]) : null;
  });
  assert.equal(q.session_id, child);
  assert.equal(q.asker, "translator");
  assert.equal(q.envelope.question.text, "Which language?");
  const qid = q.envelope.question.question_id;
  const { stdout: answered } = await run(HUBD, ["questions", "answer", qid, "--text", "French", ...cli]);
  assert.match(answered, new RegExp(qid));

  // The completed task's artifact is the child's finish, posted to the parent as its result.
  const result = await until("delegation result", async () => {
    const log = answer(await alice.callTool({ name: "read_log", arguments: { session_id: parent } }));
    return (log.envelopes ?? []).find((e) => e.type === "delegation_result")?.delegation_result;
  });
  assert.equal(result.child_session_id, child);
  assert.equal(result.reason, "finished");
  assert.equal(result.responder, "translator");
  assert.equal(result.summary, "[alice: good morning] in French");

  // The child's log holds the task's record and its progress.
  const childLog = answer(await alice.callTool({ name: "read_log", arguments: { session_id: child } }));
  const from = (type) => childLog.envelopes.filter((e) => e.from === "translator" && e.type === type);
  assert.equal(from("tool_call").length, 1, JSON.stringify(childLog));
  assert.equal(from("tool_call")[0].tool_call.name, "a2a");
  assert.ok(from("task_progress").some((e) => e.task_progress.detail === "TASK_STATE_INPUT_REQUIRED: Which language?"),
    JSON.stringify(from("task_progress")));
});
