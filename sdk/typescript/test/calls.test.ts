// Delegation, questions and the call tree against the real hub
// (agentsdk/calls_test.go is the Go twin): a parent delegating to children
// and waiting for their results, background tasks polled, messaged,
// cancelled and waited for, questions answered by the answerer and by an
// operator (and refused from anyone else), passing the caller, the tree,
// its feed, and a wait resumed by a new serve after the agent restarted.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  always,
  autoAccepted,
  awaitAll,
  awaitAny,
  BadAnswerError,
  CancelReason,
  Client,
  DelegateMode,
  DelegateNotAllowedError,
  ends,
  EventType,
  Graph,
  isTurn,
  MalformedError,
  newPacket,
  OutOfTurnError,
  PermissionDeniedError,
  RoutingKind,
  SessionType,
  State,
  TaskState,
  textOf,
  toNextInOrder,
  turnOf,
  TurnHeldError,
  WithdrawnError,
  type Envelope,
  type Handler,
  type OpenOptions,
  type Task,
  type Turn,
} from "@hubd/sdk";

import { Hubd } from "./hub.js";

/** Serving runs serve for each client until stopped. */
class Serving {
  private readonly ac = new AbortController();
  private readonly runs: Promise<unknown>[] = [];

  add(c: Client, h: Handler): this {
    this.runs.push(c.serve(h, { signal: this.ac.signal, view: null }));
    return this;
  }

  async stop(): Promise<void> {
    this.ac.abort();
    await Promise.all(this.runs);
  }
}

let unique = 0;
/** Agent names unique to one test. */
function namer(): (base: string) => string {
  const n = ++unique;
  return (base) => `${base}-${n}`;
}

/** Finishes every child with a summary of its task and some usage. */
const researcher = (turn: Turn) =>
  newPacket("done").finish("", `${turn.client.name} on ${turn.text()}`).withUsage({ inputTokens: 10, outputTokens: 5 });

/** A conversation child with agent, given task. */
function child(agent: string, task: string): OpenOptions {
  return { type: SessionType.Conversation, participants: autoAccepted(agent), task };
}

/** A conversation of user with main, in which user says text. */
async function askUser(user: Client, main: string, text: string) {
  const s = await user.open({ type: SessionType.Conversation, participants: autoAccepted(main) });
  await user.sendText(s.id, text);
  return s;
}

/** The next turn by `by` in a session from seq from. */
async function nextTurn(c: Client, sessionId: string, from: number, by: string): Promise<Envelope> {
  for await (const e of c.follow(sessionId, from, { timeoutMs: 20_000 })) {
    if (isTurn(e) && e.from === by) {
      return e;
    }
  }
  throw new Error(`no turn by ${by} in ${sessionId}`);
}

async function count(c: Client, sessionId: string, type: string): Promise<number> {
  return (await c.readLog(sessionId)).filter((e) => e.type === type).length;
}

async function eventually<T>(what: string, f: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const v = await f();
    if (v !== undefined) {
      return v;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("delegation, questions and the call tree", { timeout: 60_000 }, () => {
  let hub: Hubd;
  const clients: Client[] = [];
  const dial = async (name: string) => {
    const c = await hub.connect(name);
    clients.push(c);
    return c;
  };
  before(async () => {
    hub = await Hubd.start();
  });
  after(async () => {
    clients.forEach((c) => c.close());
    await hub.close();
  });

  test("turn.delegateAll: two children, both results to the same handler call; the tree, its feed, replay", async () => {
    const n = namer();
    const [user, main, research, legal, op] = await Promise.all(
      [n("user"), n("main"), n("research"), n("legal"), "operator"].map(dial),
    );
    const calls: string[] = [];
    const sv = new Serving()
      .add(research, researcher)
      .add(legal, researcher)
      .add(main, async (turn) => {
        calls.push(`${turn.trigger.type}@${turn.trigger.seq}`);
        const rs = await turn.delegateAll([child(n("research"), "acme"), child(n("legal"), "acme")]);
        return rs.map((r) => r.summary).sort().join("; ");
      });
    try {
      const s = await askUser(user, n("main"), "what about acme?");
      const reply = await nextTurn(user, s.id, 1, n("main"));
      assert.equal(textOf(reply), `${n("legal")} on acme; ${n("research")} on acme`);
      assert.deepEqual(calls, ["text@3"]);
      assert.equal(await count(main, s.id, EventType.DelegationResult), 2);
      const info = await user.getSession(s.id);
      assert.deepEqual([info.treeUsage?.inputTokens, info.treeUsage?.outputTokens], [20, 10]);
      assert.deepEqual([info.openChildren, info.holds.length], [[], 0]);

      const tree = await main.tree(s.id);
      assert.equal(tree.session?.meta?.sessionId, s.id);
      assert.deepEqual(tree.children.map((c) => c.session?.state), [State.Closed, State.Closed]);
      assert.equal(tree.children.reduce((sum, c) => sum + (c.usage?.inputTokens ?? 0), 0), 20);

      await user.closeSession(s.id, "thanks");
      for (const [verbose, sessions] of [[true, 3], [false, 1]] as const) {
        const seen = new Map<string, number[]>();
        let rootEnd: Envelope | undefined;
        for await (const e of main.followTree(s.id, { verbose, timeoutMs: 20_000 })) {
          assert.equal(e.call?.depth === 0, e.sessionId === s.id, `${e.sessionId}#${e.seq} at depth ${e.call?.depth}`);
          seen.set(e.sessionId, [...(seen.get(e.sessionId) ?? []), e.seq]);
          if (e.sessionId === s.id && ends(e)) {
            rootEnd = e;
          }
        }
        assert.equal(rootEnd?.ended?.reason, "thanks");
        assert.equal(seen.size, sessions, `verbose=${verbose}: ${JSON.stringify([...seen])}`);
        for (const seqs of seen.values()) {
          assert.deepEqual(seqs, seqs.map((_, i) => i + 1));
        }
      }
      const rep = await op.replay(s.id);
      assert.ok(rep.equal, rep.detail);
      assert.equal(rep.steps[0]?.envelope?.seq, 1);
      await assert.rejects(user.replay(s.id), PermissionDeniedError);
    } finally {
      await sv.stop();
    }
  });

  test("background tasks: cancel, poll, message, messageAndWait, wait, rebuilt from the id", async () => {
    const n = namer();
    const [main, worker] = await Promise.all([n("main"), n("tasks")].map(dial));
    const sv = new Serving().add(worker, async (turn) => {
      await worker.send(turn.sessionId, {
        type: EventType.TaskProgress,
        taskProgress: { task: "count", percent: 50, detail: "half way" },
      });
      if (turn.text() === "stop") {
        return newPacket("stopped").finish("", "counted to 2");
      }
      return `working on: ${turn.text()}`;
    });
    try {
      const p = await main.open({ type: SessionType.Conversation, participants: autoAccepted(n("user")) });
      const [counting, doomed] = await main.delegate(p.id, {
        mode: DelegateMode.Background,
        children: [child(n("tasks"), "count to 2"), child(n("tasks"), "never mind")],
      });
      assert.equal(counting.parent, p.id);
      assert.equal(counting.mode, DelegateMode.Background);
      assert.ok(counting.delegationId);
      await doomed.cancel();
      await doomed.cancel(); // over already: not an error
      const r = await doomed.wait({ timeoutMs: 20_000 });
      assert.deepEqual([r.reason, r.state], [CancelReason, State.Closed]);
      let st = await doomed.poll();
      assert.deepEqual([st.state, st.done, st.result?.reason], [TaskState.Cancelled, true, CancelReason]);

      await nextTurn(main, counting.id, 1, n("tasks")); // its answer to the task: now main may speak
      const reply = await counting.messageAndWait("status?", { timeoutMs: 20_000 });
      assert.deepEqual([reply.from, textOf(reply)], [n("tasks"), "working on: status?"]);
      st = await counting.poll();
      assert.deepEqual([st.state, st.done, st.result], [TaskState.Running, false, undefined]);
      assert.equal(st.progress[0]?.detail, "half way");
      await counting.message("stop");
      const done = await counting.wait({ timeoutMs: 20_000 });
      assert.deepEqual([done.summary, done.reason], ["counted to 2", "finished"]);
      st = await counting.poll();
      assert.deepEqual([st.state, st.result?.summary], [TaskState.Closed, "counted to 2"]);

      const again = await main.task(counting.id);
      assert.deepEqual([again.parent, again.delegationId], [p.id, counting.delegationId]);
      assert.equal((await again.wait()).summary, "counted to 2");
      await assert.rejects(main.task(p.id), MalformedError);
      const all = await awaitAll([counting, doomed], { timeoutMs: 20_000 });
      assert.deepEqual(all.map((x) => x.childSessionId).sort(), [counting.id, doomed.id].sort());
      assert.deepEqual((await main.getSession(p.id)).expected, [n("main")]);
      await assert.rejects(awaitAny([]), MalformedError);
    } finally {
      await sv.stop();
    }
  });

  test("turn.ask: refused from a stranger, a wrong option and a second answer (BAD_ANSWER); answered by the answerer and by an operator", async () => {
    const n = namer();
    const [user, main, person, stranger, op] = await Promise.all(
      [n("user"), n("main"), n("person"), n("stranger"), "operator"].map(dial),
    );
    const calls: string[] = [];
    const sv = new Serving().add(main, async (turn) => {
      calls.push(`${turn.trigger.type}@${turn.trigger.seq}`);
      const a = await turn.ask("Deploy now?", { options: [{ id: "yes", label: "Yes" }, "no"], answerer: n("person") });
      return `person said ${a.optionIds.join(",")}${a.by ? ` (by ${a.by})` : ""}`;
    });
    try {
      const s = await askUser(user, n("main"), "deploy the release");
      const [pq] = await eventually("the question", async () => {
        const qs = await person.listQuestions();
        return qs.length ? qs : undefined;
      });
      const q = pq.envelope?.question;
      assert.deepEqual([pq.sessionId, pq.asker, q?.text], [s.id, n("main"), "Deploy now?"]);
      assert.deepEqual(q?.options.map((o) => o.id), ["yes", "no"]);
      const qid = q?.questionId ?? "";
      assert.deepEqual((await op.listQuestions({ answerer: n("person"), root: s.id })).map((x) => x.sessionId), [s.id]);

      await assert.rejects(person.answerQuestion(s.id, { questionId: qid, optionIds: ["maybe"] }), (err: unknown) => {
        assert.ok(err instanceof BadAnswerError);
        assert.match(err.detail, /yes, no/);
        return true;
      });
      await assert.rejects(stranger.answerQuestion(s.id, { questionId: qid, optionIds: ["yes"] }), BadAnswerError);
      const ack = await person.answerQuestion(s.id, { questionId: qid, optionIds: ["yes"] });
      assert.ok(ack.seq > 0 && ack.clientMsgId);
      assert.equal(textOf(await nextTurn(user, s.id, 1, n("main"))), "person said yes");
      assert.deepEqual(calls, ["text@3"]);
      await assert.rejects(person.answerQuestion(s.id, { questionId: qid, optionIds: ["no"] }), BadAnswerError);

      // An operator answers on the person's behalf.
      const asked = await user.sendText(s.id, "and the hotfix?");
      const [pq2] = await eventually("the second question", async () => {
        const qs = await op.listQuestions({ answerer: n("person"), root: s.id });
        return qs.length ? qs : undefined;
      });
      await op.answerQuestion(s.id, { questionId: pq2.envelope?.question?.questionId ?? "", optionIds: ["no"] });
      assert.equal(textOf(await nextTurn(user, s.id, asked.seq + 1, n("main"))), "person said no (by operator)");
      assert.deepEqual(calls, ["text@3", `text@${asked.seq}`]);
    } finally {
      await sv.stop();
    }
  });

  test("turn.passCaller: the colleague's finish answers the parent; delegateAny; refusals; an idempotent delegate", async () => {
    const n = namer();
    const [user, main, triage, hotels, fast, slow, boss] = await Promise.all(
      [n("user"), n("main"), n("triage"), n("hotels"), n("fast"), n("slow"), n("boss")].map(dial),
    );
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const sv = new Serving()
      .add(triage, (turn) => turn.passCaller(n("hotels")))
      .add(hotels, researcher)
      .add(fast, researcher)
      .add(slow, async (turn) => {
        await released;
        return researcher(turn);
      })
      .add(main, async (turn) => {
        if (turn.text() === "race") {
          const r = await turn.delegateAny([child(n("slow"), "x"), child(n("fast"), "x")]);
          return `first: ${r.summary}`;
        }
        const g = new Graph(n("triage")).on(always(), toNextInOrder());
        const r = await turn.delegate({ graph: g, participants: autoAccepted(n("triage"), n("hotels")), task: "a room in Oslo" });
        return `${r.responder}: ${r.summary}`;
      });
    try {
      const s = await askUser(user, n("main"), "plan a trip");
      assert.equal(textOf(await nextTurn(user, s.id, 1, n("main"))), `${n("hotels")}: ${n("hotels")} on `);
      const childId = (await main.tree(s.id)).children[0]?.session?.meta?.sessionId ?? "";
      const kinds = (await main.readLog(childId)).filter((e) => e.type === EventType.Packet).map((e) => e.packet?.routing?.kind);
      assert.deepEqual(kinds, [RoutingKind.PassCaller, RoutingKind.Finish]);

      const race = await user.sendText(s.id, "race");
      assert.equal(textOf(await nextTurn(user, s.id, race.seq + 1, n("main"))), `first: ${n("fast")} on x`);

      // By hand, as boss (who does not serve: main would take the turns of
      // sessions it opened). While a blocking delegation holds boss's turn,
      // nobody speaks.
      const q = await boss.open({ type: SessionType.Conversation, participants: autoAccepted(n("user")) });
      const [waiting] = await boss.delegate(q.id, { children: [child(n("slow"), "z")] });
      for (const who of [user, boss]) {
        await assert.rejects(who.sendText(q.id, "hello?"), (err: unknown) => {
          assert.ok(err instanceof TurnHeldError, String(err));
          assert.ok(err.detail.includes(waiting.id), err.detail);
          return true;
        });
      }
      release();

      // An allow-list, off-turn, and a retried delegation.
      const p = await boss.open({ type: SessionType.Discussion, participants: autoAccepted(n("user")), delegates: [n("fast")] });
      await assert.rejects(boss.delegate(p.id, { children: [child(n("slow"), "x")] }), (err: unknown) => {
        assert.ok(err instanceof DelegateNotAllowedError);
        assert.ok(err.detail.includes(n("fast")), err.detail);
        return true;
      });
      await assert.rejects(user.delegate(p.id, { children: [child(n("fast"), "x")] }), OutOfTurnError);
      const [t]: Task[] = await boss.delegate(p.id, { children: [child(n("fast"), "y")], clientMsgId: "d-1" });
      const [again] = await boss.delegate(p.id, { children: [child(n("fast"), "y")], clientMsgId: "d-1" });
      assert.equal(again.id, t.id);
      const r = await awaitAny([t], { timeoutMs: 20_000 });
      assert.deepEqual([r.summary, r.responder], [`${n("fast")} on y`, n("fast")]);
    } finally {
      release();
      await sv.stop();
    }
  });

  test("turn.spawn with turnOnResult: the result gives the delegator a turn", async () => {
    const n = namer();
    const [user, main, worker] = await Promise.all([n("user"), n("main"), n("tasks")].map(dial));
    let spawned: Task | undefined;
    const sv = new Serving()
      .add(worker, (turn) => newPacket("").finish("", `did ${turn.text()}`))
      .add(main, async (turn) => {
        if (turn.trigger.type === EventType.DelegationResult) {
          assert.ok(turn.resumed());
          return `notified: ${turn.trigger.delegationResult?.summary}`;
        }
        spawned = await turn.spawn(child(n("tasks"), "the count"), { turnOnResult: true });
        return "spawned";
      });
    try {
      const s = await askUser(user, n("main"), "go");
      const first = await nextTurn(user, s.id, 1, n("main"));
      assert.equal(textOf(first), "spawned");
      const notified = await nextTurn(user, s.id, first.seq + 1, n("main"));
      assert.equal(textOf(notified), "notified: did the count");
      assert.equal(spawned?.mode, DelegateMode.Background);
      assert.equal((await spawned?.poll())?.state, TaskState.Closed);
    } finally {
      await sv.stop();
    }
  });
});

describe("a question withdrawn", { timeout: 30_000 }, () => {
  test("the asker's wait rejects with WithdrawnError when the session ends first (a turn of turnOf, outside serve)", async () => {
    const hub = await Hubd.start();
    const [user, main] = await Promise.all(["user", "main"].map((x) => hub.connect(x)));
    try {
      const s = await askUser(user, "main", "hi");
      const [trigger] = await main.readLog(s.id, 3, 1);
      const asked = turnOf(main, trigger).ask("Still there?", { answerer: "user", timeoutMs: 20_000 });
      asked.catch(() => {}); // settled below
      await eventually("the question", async () => ((await user.listQuestions({ root: s.id })).length ? true : undefined));
      await user.closeSession(s.id, "bye");
      await assert.rejects(asked, (err: unknown) => {
        assert.ok(err instanceof WithdrawnError, String(err));
        assert.match(err.detail, /withdrawn/);
        return true;
      });
    } finally {
      user.close();
      main.close();
      await hub.close();
    }
  });
});

describe("threads, budgets and tool envelopes", { timeout: 30_000 }, () => {
  test("threadKey returns the thread's open session, then links the next; a budget closes the tree; tool_call and tool_result are logged", async () => {
    const hub = await Hubd.start();
    const alice = await hub.connect("alice");
    try {
      const conv = { type: SessionType.Conversation, participants: autoAccepted("bob") };
      const first = await alice.open({ ...conv, threadKey: "chat-1" });
      const again = await alice.open({ ...conv, threadKey: "chat-1" });
      assert.equal(again.id, first.id);
      assert.ok(again.existing);
      await alice.closeSession(first.id, "done");
      const next = await alice.open({ ...conv, threadKey: "chat-1" });
      assert.notEqual(next.id, first.id);
      assert.deepEqual([next.meta?.threadKey, next.meta?.previousSessionId], ["chat-1", first.id]);

      await alice.send(next.id, { type: EventType.ToolCall, toolCall: { callId: "c1", name: "search", arguments: { q: "acme" } } });
      await alice.send(next.id, { type: EventType.ToolResult, toolResult: { callId: "c1", name: "search", result: 3, error: "" } });
      const log = await alice.readLog(next.id);
      assert.deepEqual(log.slice(-2).map((e) => e.type), [EventType.ToolCall, EventType.ToolResult]);
      assert.deepEqual([log[log.length - 2].toolCall?.arguments, log[log.length - 1].toolResult?.result], [{ q: "acme" }, 3]);
      assert.equal((await alice.getSession(next.id)).turn, 0);

      const b = await alice.open({ ...conv, budget: { maxTokens: 10 } });
      const ack = await alice.sendPacket(b.id, newPacket("expensive").withUsage({ inputTokens: 8, outputTokens: 4 }));
      assert.deepEqual([ack.closed, ack.closeReason], [true, "budget_exceeded"]);
      assert.equal((await alice.getSession(b.id)).closeReason, "budget_exceeded");
    } finally {
      alice.close();
      await hub.close();
    }
  });
});

describe("a wait across an agent restart", { timeout: 60_000 }, () => {
  test("serve stops while the handler waits in turn.delegate; a new serve gets the turn back, resumed, once", async () => {
    const hub = await Hubd.start();
    const [user, main, research] = await Promise.all(["user", "main", "research"].map((x) => hub.connect(x)));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let held!: () => void;
    const isHeld = new Promise<void>((r) => (held = r));
    const calls: string[] = [];
    const handler: Handler = async (turn) => {
      calls.push(`${turn.trigger.type}@${turn.trigger.seq}`);
      if (turn.resumed()) {
        return `resumed with ${turn.trigger.delegationResult?.summary}`;
      }
      const r = await turn.delegate(child("research", turn.text()));
      return `got ${r.summary}`;
    };
    const agents = new Serving().add(research, async (turn) => {
      held();
      await released;
      return researcher(turn);
    });
    const first = new Serving().add(main, handler);
    let second: Serving | undefined;
    try {
      const s = await askUser(user, "main", "globex");
      await isHeld;
      await first.stop(); // the agent is gone while it waits
      release();
      let result: Envelope | undefined;
      for await (const e of main.follow(s.id, 1, { timeoutMs: 20_000 })) {
        if (e.type === EventType.DelegationResult) {
          result = e;
          break;
        }
      }
      assert.ok(result);
      second = new Serving().add(main, handler);
      const reply = await nextTurn(user, s.id, result.seq, "main");
      assert.equal(textOf(reply), "resumed with research on globex");
      assert.deepEqual(calls, ["text@3", `delegation_result@${result.seq}`]);
      assert.equal(await count(main, s.id, EventType.DelegationResult), 1);
    } finally {
      release();
      await agents.stop();
      await second?.stop();
      [user, main, research].forEach((c) => c.close());
      await hub.close();
    }
  });
});
