// An A2A client written by others (@a2a-js/sdk's) reaches a hubd agent:
// it discovers the agent's card, sends it a message with a stream,
// answers its question (TASK_STATE_INPUT_REQUIRED), cancels a task,
// continues a context, and picks a task up again after the hub
// restarted. The hubd agent ("writer") is played through the hub's HTTP
// JSON API.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";
import { startHubd } from "./hubd.mjs";

const config = {
  expose: [{
    agent: "writer", description: "Writes short poems on request.",
    skills: [{ id: "poem", name: "Poems", description: "A short poem on a theme.", tags: ["writing", "poetry"], examples: ["a haiku about tides"] }],
  }],
};

// client is an A2A client of the writer, as alice (development mode:
// her name in the X-Hubd-Agent header).
async function client(hub, who = "alice") {
  const fetchImpl = (url, init = {}) => fetch(url, { ...init, headers: { ...(init.headers ?? {}), "X-Hubd-Agent": who } });
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  }));
  return factory.createFromUrl(`http://${hub.http}/a2a/agents/writer/`);
}

const text = (t, extra = {}) => ({ message: { messageId: randomUUID(), role: Role.ROLE_USER, parts: [{ content: { $case: "text", value: t } }], ...extra } });
const textOf = (m) => (m?.parts ?? []).map((p) => p.content?.value).join("");

// writer plays the hubd agent through the JSON API.
function writer(hub) {
  const api = (path, body) => fetch(`http://${hub.http}/v1${path}`, {
    method: body ? "POST" : "GET",
    headers: { "X-Hubd-Agent": "writer", "Content-Type": "application/json" },
    body: body && JSON.stringify(body),
  }).then(async (r) => { const j = await r.json(); if (!r.ok) throw new Error(JSON.stringify(j)); return j; });
  return {
    // turn waits until it is the writer's turn in the session.
    async turn(id) {
      for (let i = 0; i < 200; i++) {
        const { turns = [] } = await api("/turns");
        if (turns.some((t) => t.envelope?.session_id === id)) return;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error(`no turn of writer's in ${id}`);
    },
    say: (id, t) => api(`/sessions/${id}/envelopes`, { type: "text", text: { text: t } }),
    ask: (id, t) => api(`/sessions/${id}/envelopes`, { type: "question", question: { question_id: "tone", text: t, answerer: "alice" } }),
  };
}

async function writeConfig() {
  const dir = mkdtempSync(join(tmpdir(), "hubd-a2a-"));
  const file = join(dir, "a2a.json");
  writeFileSync(file, JSON.stringify(config));
  return file;
}

test("an A2A client discovers, streams, answers, cancels and resumes a hubd agent's tasks", async (t) => {
  const hub = await startHubd("--a2a", await writeConfig());
  t.after(() => hub.stop());

  const hubCard = await (await fetch(`http://${hub.http}/.well-known/agent-card.json`)).json();
  assert.deepEqual(hubCard.skills.map((s) => s.id), ["writer"]);
  assert.deepEqual(hubCard.supportedInterfaces, [{ url: `http://${hub.http}/a2a`, protocolBinding: "JSONRPC", tenant: "writer", protocolVersion: "1.0" }]);

  let alice = await client(hub);
  const card = alice.agentCard;
  assert.equal(card.name, "writer");
  assert.equal(card.capabilities.streaming, true);
  assert.deepEqual(card.skills.map((s) => s.id), ["poem"]);

  // A streamed message: the task, then input required with the writer's question.
  const w = writer(hub);
  const events = [];
  const asking = (async () => {
    for (;;) {
      const { sessions = [] } = await fetch(`http://${hub.http}/v1/sessions?participant=writer`, { headers: { "X-Hubd-Agent": "writer" } }).then((r) => r.json());
      if (sessions.length) { await w.turn(sessions[0].meta.session_id); return w.ask(sessions[0].meta.session_id, "Which tone: calm or stormy?"); }
      await new Promise((r) => setTimeout(r, 25));
    }
  })();
  for await (const e of alice.sendMessageStream(text("a haiku about tides"))) events.push(e);
  await asking;
  assert.equal(events[0].payload.$case, "task");
  const task = events[0].payload.value;
  const last = events.at(-1).payload;
  assert.equal(last.$case, "statusUpdate");
  assert.equal(last.value.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  assert.equal(textOf(last.value.status.message), "Which tone: calm or stormy?");

  // The answer, blocking: the writer replies, the task completes with the poem as its artifact.
  const replying = (async () => { await w.turn(task.id); await w.say(task.id, "Tides breathe in, breathe out"); })();
  const done = await alice.sendMessage(text("calm", { taskId: task.id, contextId: task.contextId }));
  await replying;
  assert.equal(done.status.state, TaskState.TASK_STATE_COMPLETED);
  assert.equal(textOf(done.artifacts[0]), "Tides breathe in, breathe out");
  assert.deepEqual(done.history.map(textOf), ["a haiku about tides", "Which tone: calm or stormy?", "calm", "Tides breathe in, breathe out"]);
  await assert.rejects(alice.sendMessage(text("more", { taskId: task.id })), (e) => e.name === "UnsupportedOperationError");

  // A task canceled; canceling it again is refused.
  const second = await alice.sendMessage({ ...text("a limerick"), configuration: { returnImmediately: true } });
  assert.equal(second.status.state, TaskState.TASK_STATE_WORKING);
  const canceled = await alice.cancelTask({ id: second.id });
  assert.equal(canceled.status.state, TaskState.TASK_STATE_CANCELED);
  await assert.rejects(alice.cancelTask({ id: second.id }), (e) => e.name === "TaskNotCancelableError");
  await assert.rejects(alice.getTask({ id: randomUUID() }), (e) => e.name === "TaskNotFoundError");

  // The context continued: a new task in the first one's context, which
  // the hub then restarts under; the client picks it up from the log.
  const third = await alice.sendMessage({ ...text("another, stormy", { contextId: task.contextId }), configuration: { returnImmediately: true } });
  assert.equal(third.contextId, task.contextId);
  assert.notEqual(third.id, task.id);
  await hub.restart();
  alice = await client(hub);
  assert.equal((await alice.getTask({ id: third.id })).status.state, TaskState.TASK_STATE_WORKING);
  const resumed = [];
  let finishing;
  for await (const e of alice.resubscribeTask({ id: third.id })) {
    resumed.push(e);
    // Once the stream has the task, the writer answers it.
    finishing ??= (async () => { await writer(hub).turn(third.id); await writer(hub).say(third.id, "Waves shout at the rocks"); })();
  }
  await finishing;
  assert.deepEqual(resumed.map((e) => e.payload.$case), ["task", "artifactUpdate", "statusUpdate"]);
  assert.equal(textOf(resumed[1].payload.value.artifact), "Waves shout at the rocks");
  assert.equal(resumed[2].payload.value.status.state, TaskState.TASK_STATE_COMPLETED);

  const listed = await alice.listTasks({ contextId: task.contextId });
  assert.deepEqual(listed.tasks.map((x) => x.id).sort(), [task.id, third.id].sort());
  assert.equal(listed.nextPageToken, "");
});

test("the A2A side answers A2A's own errors", async (t) => {
  const hub = await startHubd("--a2a", await writeConfig());
  t.after(() => hub.stop());
  const rpc = (body, headers = { "A2A-Version": "1.0" }) => fetch(`http://${hub.http}/a2a/agents/writer`, {
    method: "POST", headers: { "Content-Type": "application/json", "X-Hubd-Agent": "alice", ...headers }, body: JSON.stringify(body),
  }).then((r) => r.json());
  const noVersion = await rpc({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: randomUUID() } }, {});
  assert.equal(noVersion.error.code, -32009);
  const push = await rpc({ jsonrpc: "2.0", id: 2, method: "CreateTaskPushNotificationConfig", params: { taskId: "x", url: "http://example.com" } });
  assert.equal(push.error.code, -32003);
  const unknown = await rpc({ jsonrpc: "2.0", id: 3, method: "message/send", params: {} });
  assert.equal(unknown.error.code, -32601);
  const file = await rpc({ jsonrpc: "2.0", id: 4, method: "SendMessage", params: { message: { messageId: "m", role: "ROLE_USER", parts: [{ url: "http://example.com/a.png", mediaType: "image/png" }] } } });
  assert.equal(file.error.code, -32005);
  const nobody = await fetch(`http://${hub.http}/a2a/agents/writer`, { method: "POST", headers: { "Content-Type": "application/json", "A2A-Version": "1.0" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 5, method: "GetTask", params: { id: randomUUID() } }) });
  assert.equal(nobody.status, 401);
  assert.equal((await fetch(`http://${hub.http}/a2a/agents/nobody/.well-known/agent-card.json`)).status, 404);
});
