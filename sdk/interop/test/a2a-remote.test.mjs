// An outside A2A agent written with others' SDK (@a2a-js/sdk's server) takes
// part in a hubd session: hubd, given it as a remote (serve --a2a), speaks
// A2A to it on its turns. A session delegates a task to it; the agent asks
// for input (TASK_STATE_INPUT_REQUIRED), which becomes a hubd question that
// a person answers with the real `hubd questions answer`; the agent's
// artifact comes back as the delegation's result.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
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

// serve starts hubd on a data directory and address of the test's choosing
// (so that it can be started again on them), with the A2A file conf.
async function serve(data, listen, conf) {
  const proc = spawn(HUBD, ["serve", "--listen", listen, "--http", "127.0.0.1:0", "--data", data, "--a2a", conf,
    "--log-format", "json"], { stdio: ["ignore", "ignore", "pipe"] });
  const log = [];
  const addrs = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("hubd did not start within 20 s:\n" + log.join("\n"))), 20000);
    proc.on("exit", (code) => { clearTimeout(timer); reject(new Error(`hubd exited ${code}:\n` + log.join("\n"))); });
    createInterface({ input: proc.stderr }).on("line", (line) => {
      log.push(line);
      try {
        const l = JSON.parse(line);
        if (l.message === "hubd listening") { clearTimeout(timer); resolve({ grpc: l.listen, http: l.http }); }
      } catch { /* not JSON */ }
    });
  });
  return {
    ...addrs,
    log,
    async stop() {
      if (proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGTERM");
      await exited;
    },
  };
}

async function mcpAs(hub, name) {
  const c = new Client({ name: "delegating-host", version: "1.0.0" });
  await c.connect(new StreamableHTTPClientTransport(new URL(`http://${hub.http}/mcp`),
    { requestInit: { headers: { "X-Hubd-Agent": name } } }));
  return c;
}

test("a hub restart while the remote A2A agent works resumes its task by id, without sending the message again", async (t) => {
  const translator = await startTranslator({ hold: true });
  t.after(() => translator.stop());
  const dir = mkdtempSync(join(tmpdir(), "hubd-a2a-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const conf = join(dir, "a2a.json");
  writeFileSync(conf, JSON.stringify({ remote: [{ agent: "translator", card: translator.card }] }));
  const data = join(dir, "data");

  let hub = await serve(data, "127.0.0.1:0", conf);
  t.after(() => hub.stop());
  let alice = await mcpAs(hub, "alice");
  const opened = answer(await alice.callTool({ name: "open_session", arguments: {
    type: "conversation@1", participants: [{ name: "alice" }, { name: "bob", auto_accept: true }] } }));
  const parent = opened.session.meta.session_id;
  const delegated = answer(await alice.callTool({ name: "delegate", arguments: { session_id: parent,
    children: [{ type: "conversation@1", participants: [{ name: "translator", auto_accept: true }], task: "good night" }] } }));
  const child = delegated.children[0].meta.session_id;
  const cli = () => ["--hub", hub.grpc, "--as", "alice"];
  const q = await until("question", async () => {
    const { stdout } = await run(HUBD, ["questions", "list", "--output", "json", ...cli()]);
    return stdout.trim() ? JSON.parse(stdout.trim().split("\n")[0]) : null;
  });
  await run(HUBD, ["questions", "answer", q.envelope.question.question_id, "--text", "Italian", ...cli()]);
  await until("the remote working on the answer", async () => {
    const log = answer(await alice.callTool({ name: "read_log", arguments: { session_id: child } }));
    return log.envelopes.some((e) => e.task_progress?.detail === "TASK_STATE_WORKING: translating");
  });

  await alice.close();
  const listen = hub.grpc;
  await hub.stop();
  hub = await serve(data, listen, conf);
  alice = await mcpAs(hub, "alice");
  t.after(() => alice.close());
  translator.release();

  const result = await until("delegation result", async () => {
    const log = answer(await alice.callTool({ name: "read_log", arguments: { session_id: parent } }));
    return (log.envelopes ?? []).find((e) => e.type === "delegation_result")?.delegation_result;
  });
  assert.equal(result.summary, "[alice: good night] in Italian");
  assert.equal(translator.received.length, 2, `the agent received ${JSON.stringify(translator.received)}`);
  assert.ok(hub.log.some((l) => l.includes("resuming the recorded task")), hub.log.join("\n"));
});
