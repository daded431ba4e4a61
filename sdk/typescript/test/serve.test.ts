// serve against the real hub: turns with views and packets, invites,
// stale turns, a kill -9 of hubd in the middle of a session, a slow
// subscriber, idempotent retries across a restart, and a clean stop.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import * as grpc from "@grpc/grpc-js";

import {
  anyOf,
  autoAccepted,
  Client,
  ends,
  fromSpeaker,
  Graph,
  invited,
  isTurn,
  newPacket,
  replyPacket,
  replyText,
  revertToInitiator,
  roundRobin,
  sequence,
  terminate,
  textOf,
  toAgent,
  toolCalled,
  turnMsgId,
  type Delivery,
  type Envelope,
  type Handler,
  type ServeOptions,
} from "@hubd/sdk";

import { deferred, Hubd, watchReceived, within } from "./hub.js";

/** Serving runs serve for each client until stopped; a serve that fails fails the test at stop. */
class Serving {
  private readonly ac = new AbortController();
  private readonly runs: Promise<unknown>[];

  constructor(clients: Client[], handler: (c: Client) => Handler, opts: ServeOptions = {}) {
    this.runs = clients.map((c) => c.serve(handler(c), { ...opts, signal: this.ac.signal }));
  }

  /** Stops every serve and waits for them; rejects with the first failure. */
  async stop(): Promise<void> {
    this.ac.abort();
    await Promise.all(this.runs);
  }
}

/** Follows a session to its end: its turns as "speaker: text" and its close reason. */
async function transcript(c: Client, sessionId: string): Promise<{ turns: string[]; reason: string }> {
  const turns: string[] = [];
  for await (const e of c.follow(sessionId)) {
    if (isTurn(e)) {
      turns.push(`${e.from}: ${textOf(e)}`);
    }
    if (ends(e)) {
      return { turns, reason: e.ended?.reason ?? "" };
    }
  }
  throw new Error("follow ended before the session did");
}

/** Collects a client's log lines and reports the first that says what. */
class Logs {
  lines: string[] = [];
  private waiters: { what: string; resolve: () => void }[] = [];
  log = (line: string): void => {
    this.lines.push(line);
    this.waiters = this.waiters.filter((w) => (line.includes(w.what) ? (w.resolve(), false) : true));
  };
  waitFor(what: string): Promise<void> {
    if (this.lines.some((l) => l.includes(what))) {
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push({ what, resolve }));
  }
}

describe("serve", { timeout: 30_000 }, () => {
  let hub: Hubd;
  before(async () => {
    hub = await Hubd.start();
  });
  after(() => hub.close());

  test("a pipeline: invites acknowledged, each agent called once with its trigger and view", async () => {
    const names = ["researcher", "writer", "editor"];
    const clients = await Promise.all(names.map((n) => hub.connect(n)));
    const calls: string[] = [];
    const s = new Serving(clients, (c) => (turn) => {
      const seen = turn.view?.items.map((i) => i.from) ?? [];
      calls.push(`${c.name} after ${turn.trigger.type}(${turn.trigger.from}) seeing [${seen.join(" ")}]`);
      assert.equal(turn.client, c);
      return replyText(`notes from ${c.name}`);
    });
    try {
      const opened = await clients[0].openWorkflow(sequence(...names), ["writer", "editor"]);
      const { turns, reason } = await transcript(clients[0], opened.id);
      assert.deepEqual(turns, ["researcher: notes from researcher", "writer: notes from writer", "editor: notes from editor"]);
      assert.equal(reason, "sequence_complete");
      assert.deepEqual(calls, [
        "researcher after session_opened() seeing []",
        "writer after text(researcher) seeing [researcher]",
        "editor after text(writer) seeing [researcher writer]",
      ]);
      // Each reply was sent with the turn's client message id, answering its trigger.
      const log = await clients[0].readLog(opened.id);
      for (const e of log.filter(isTurn)) {
        const trigger = log.find((x) => x.id === e.causationId);
        assert.ok(trigger, `the trigger of seq ${e.seq}`);
        assert.equal(e.clientMsgId, turnMsgId(opened.id, trigger.seq));
      }
    } finally {
      await s.stop();
      clients.forEach((c) => c.close());
    }
  });

  test("handoffs: packets route by tool, revert to the router, set context, and finish", async () => {
    const clients = await Promise.all(["router", "billing", "tech"].map((n) => hub.connect(n)));
    const [router] = clients;
    const g = new Graph("router")
      .on(toolCalled("transfer_to_billing"), toAgent("billing"))
      .on(toolCalled("transfer_to_tech"), toAgent("tech"))
      .on(anyOf(fromSpeaker("billing"), fromSpeaker("tech")), revertToInitiator())
      .otherwise(terminate("triage_done"))
      .withMaxTurns(10);
    const s = new Serving(
      clients,
      (c) => (turn) => {
        if (c.name !== "router") {
          return newPacket(`${c.name} fixed it`).set(`${c.name}_done`, true);
        }
        switch (turn.trigger.from) {
          case "":
            return replyPacket(newPacket("billing first").handoff("transfer_to_billing", "", "refund"));
          case "billing":
            return { packet: newPacket("now tech").handoff("transfer_to_tech") };
        }
        return newPacket("all done").finish("resolved", "refund and fix");
      },
      { view: null },
    );
    try {
      const opened = await router.open({ graph: g, participants: invited("billing", "tech") });
      const { turns, reason } = await transcript(router, opened.id);
      assert.deepEqual(turns, ["router: billing first", "billing: billing fixed it", "router: now tech", "tech: tech fixed it", "router: all done"]);
      assert.equal(reason, "resolved");
      const got = await router.getSession(opened.id);
      assert.equal(got.var("billing_done"), true);
      assert.equal(got.var("tech_done"), true);
    } finally {
      await s.stop();
      clients.forEach((c) => c.close());
    }
  });

  test("an invites function that throws declines: the session closes invite_rejected with its message", async () => {
    const [alice, bob] = await Promise.all([hub.connect("alice"), hub.connect("bob")]);
    const s = new Serving([bob], () => () => assert.fail("never called"), {
      invites: (inv) => {
        assert.deepEqual(inv.invitees, ["bob"]);
        throw new Error("busy");
      },
    });
    try {
      const opened = await alice.openWorkflow(sequence("alice", "bob"), ["bob"]);
      assert.equal((await transcript(alice, opened.id)).reason, "invite_rejected");
      const [reject] = await bob.readLog(opened.id, 2, 1);
      assert.equal(reject.ended?.reason, "busy");
    } finally {
      await s.stop();
      alice.close();
      bob.close();
    }
  });

  test("sessionFilter: a session another client opened with the agent gets nothing from it", async () => {
    // Names of their own: the sessions left pending here would be others' turns.
    const [alice, bob, person] = await Promise.all(["sf-alice", "sf-bob", "sf-person"].map((n) => hub.connect(n)));
    const invitedOne = await person.openWorkflow(sequence("sf-person", "sf-bob"), ["sf-bob"]);
    const first = await person.open({ graph: sequence("sf-bob", "sf-person"), participants: autoAccepted("sf-bob") });
    const asked: string[] = [];
    let waiter: { ids: string[]; resolve: () => void } | undefined;
    const check = () => waiter?.ids.every((id) => asked.includes(id)) && waiter.resolve();
    const handled: string[] = [];
    const s = new Serving(
      [alice, bob],
      (c) => (turn) => {
        handled.push(`${c.name} in ${turn.sessionId}`);
        return `from ${c.name}`;
      },
      {
        sessionFilter: async (session) => {
          asked.push(session.id);
          check();
          return session.meta?.labels.run === "ours";
        },
      },
    );
    try {
      const later = await person.open({ graph: sequence("sf-bob", "sf-person"), participants: autoAccepted("sf-bob") });
      const ours = await alice.open({ graph: sequence("sf-alice", "sf-bob"), participants: invited("sf-bob"), labels: { run: "ours" } });
      const { turns, reason } = await transcript(alice, ours.id);
      assert.deepEqual(turns, ["sf-alice: from sf-alice", "sf-bob: from sf-bob"]);
      assert.equal(reason, "sequence_complete");
      // serve has seen the other sessions once the filter was asked about them.
      const foreign = [invitedOne.id, first.id, later.id];
      const all = deferred<void>();
      waiter = { ids: foreign, resolve: all.resolve };
      check();
      await within(all.promise, 10_000, "the filter asked about every foreign session");
      await s.stop();
      assert.deepEqual([...asked].sort(), [...foreign, ours.id, ours.id].sort());
      for (const id of foreign) {
        const acted = (await person.readLog(id)).filter((e) => e.from === "sf-bob");
        assert.deepEqual(acted, [], `sf-bob acted in ${id}, a session its filter refused`);
      }
      assert.deepEqual(handled.sort(), [`sf-alice in ${ours.id}`, `sf-bob in ${ours.id}`].sort());
      assert.equal((await person.getSession(invitedOne.id)).state, "PENDING");
    } finally {
      await s.stop();
      [alice, bob, person].forEach((c) => c.close());
    }
  });

  test("a stale reply is logged and dropped, and serving goes on", async () => {
    const bobLogs = new Logs();
    const [alice, carol] = await Promise.all([hub.connect("alice"), hub.connect("carol")]);
    const bob = await hub.connect("bob", { log: bobLogs.log });
    const calls: string[] = [];
    const s = new Serving(
      [alice, bob, carol],
      (c) => async (turn) => {
        calls.push(c.name);
        if (c.name === "bob") {
          // Bob answers by hand, so the reply serve posts is stale.
          await c.sendText(turn.sessionId, "by hand");
          return "too late";
        }
        if (c.name === "carol") {
          await bobLogs.waitFor("stale turn"); // only once bob's stale reply was refused
        }
        return `from ${c.name}`;
      },
      { view: null },
    );
    try {
      const opened = await alice.open({ graph: sequence("alice", "bob", "carol"), participants: autoAccepted("bob", "carol") });
      const { turns, reason } = await transcript(alice, opened.id);
      assert.deepEqual(turns, ["alice: from alice", "bob: by hand", "carol: from carol"]);
      assert.equal(reason, "sequence_complete");
      assert.deepEqual(calls, ["alice", "bob", "carol"]);
      const stale = bobLogs.lines.find((l) => l.includes("stale turn"));
      assert.ok(stale?.includes("OUT_OF_TURN"), bobLogs.lines.join("\n"));
    } finally {
      await s.stop();
      [alice, bob, carol].forEach((c) => c.close());
    }
  });

  test("turns of different sessions run concurrently; a session that ends aborts its running turn", async () => {
    const [alice, bob] = await Promise.all([hub.connect("alice"), hub.connect("bob")]);
    const first = await alice.open({ graph: sequence("bob", "alice"), participants: autoAccepted("bob") });
    const secondDone = deferred();
    const firstAborted = deferred();
    const calls: string[] = [];
    const s = new Serving(
      [bob],
      () => async (turn) => {
        calls.push(turn.sessionId === first.id ? "first" : "second");
        if (turn.sessionId !== first.id) {
          secondDone.resolve();
          return "second answered";
        }
        // The first session's turn waits for the second session's, which
        // can only run alongside it.
        await secondDone.promise;
        await alice.closeSession(first.id, "no_longer_needed");
        // The close may reach bob's stream before alice's call returns.
        if (!turn.signal.aborted) {
          await new Promise<void>((res) => turn.signal.addEventListener("abort", () => res(), { once: true }));
        }
        firstAborted.resolve();
        return "too late"; // posted with an aborted signal: dropped quietly
      },
      { view: null },
    );
    try {
      const second = await alice.open({ graph: sequence("bob", "alice"), participants: autoAccepted("bob") });
      await within(firstAborted.promise, 10_000, "the first turn aborted by the close");
      await s.stop();
      assert.deepEqual(calls.sort(), ["first", "second"]);
      assert.deepEqual((await alice.readLog(second.id)).filter(isTurn).map(textOf), ["second answered"]);
      assert.deepEqual((await alice.readLog(first.id)).filter(isTurn), []);
    } finally {
      await s.stop();
      alice.close();
      bob.close();
    }
  });

  test("a handler that returns nothing posts nothing: the turn stays the agent's", async () => {
    const [alice, bob] = await Promise.all([hub.connect("alice"), hub.connect("bob")]);
    const called = deferred();
    const s = new Serving([bob], () => () => {
      called.resolve();
      return undefined;
    });
    try {
      const opened = await alice.open({ graph: sequence("bob", "alice"), participants: autoAccepted("bob") });
      await within(called.promise, 10_000, "bob's turn");
      await s.stop();
      const got = await alice.getSession(opened.id);
      assert.equal(got.turn, 0);
      assert.deepEqual(got.expected, ["bob"]);
    } finally {
      await s.stop();
      alice.close();
      bob.close();
    }
  });

  test("stops cleanly on its signal: the running handler is aborted and awaited", async () => {
    const [alice, bob] = await Promise.all([hub.connect("alice"), hub.connect("bob")]);
    const started = deferred();
    let aborted = false;
    const ac = new AbortController();
    const run = bob.serve(
      async (turn) => {
        started.resolve();
        await new Promise<void>((res) => turn.signal.addEventListener("abort", () => res(), { once: true }));
        aborted = true;
        return "after the stop";
      },
      { signal: ac.signal, view: null },
    );
    try {
      const opened = await alice.open({ graph: sequence("bob", "alice"), participants: autoAccepted("bob") });
      await within(started.promise, 10_000, "bob's turn");
      ac.abort();
      await within(run, 10_000, "serve to return");
      assert.ok(aborted);
      const got = await alice.getSession(opened.id);
      assert.equal(got.turn, 0, "nothing was posted after the stop");
      // A serve whose signal has already aborted returns at once.
      await bob.serve(() => "never", { signal: ac.signal });
    } finally {
      alice.close();
      bob.close();
    }
  });
});

/**
 * An interceptor that records the deliveries a client's streams bring over
 * the wire (agent-stream frames and Subscribe messages alike), as "type" or
 * "type [your turn]", before the client reads them.
 */
function recording(into: string[]): grpc.Interceptor {
  return watchReceived(["/hubd.v1.Hub/AgentStream", "/hubd.v1.Hub/Subscribe"], (method, m: { delivery?: Delivery } & Delivery) => {
    const d = method === "/hubd.v1.Hub/AgentStream" ? m.delivery : m;
    if (d) {
      into.push(d.yourTurn ? `${d.envelope?.type} [your turn]` : `${d.envelope?.type}`);
    }
  });
}

describe("serve's terse stream", { timeout: 30_000 }, () => {
  let hub: Hubd;
  before(async () => {
    hub = await Hubd.start();
  });
  after(() => hub.close());

  // Without an observer, serve's stream brings the agent only what it acts
  // on (its turn and the session's end, not the invite that does not name
  // it, the opening, a note or the others' texts), over either transport;
  // onSessionEnd is told of the end; an observer brings everything
  // addressed to the agent.
  for (const tc of [
    { name: "stream", transport: "stream", observe: false, want: ["text [your turn]", "session_closed"] },
    { name: "unary", transport: "unary", observe: false, want: ["text [your turn]", "session_closed"] },
    {
      name: "observer",
      transport: "stream",
      observe: true,
      want: ["session_invite", "session_opened", "note", "text [your turn]", "text", "session_closed"],
    },
  ] as const) {
    test(`${tc.name}: bob's stream brings ${tc.want.join(", ")}`, async () => {
      const wire: string[] = [];
      const [alice, carol] = await Promise.all([hub.connect("alice"), hub.connect("carol")]);
      const bob = await hub.connect("bob", { transport: tc.transport, channelOptions: { interceptors: [recording(wire)] } });
      const ended = deferred<Envelope>();
      const observed: string[] = [];
      const opts: ServeOptions = { onSessionEnd: (e) => ended.resolve(e) };
      if (tc.observe) {
        opts.observer = (d) => {
          observed.push(d.envelope?.type ?? "");
        };
      }
      const reply = (c: Client) => () => `from ${c.name}`;
      const served = [new Serving([bob], reply, opts), new Serving([carol], reply)];
      try {
        const opened = await alice.open({ graph: sequence("alice", "bob", "carol"), participants: autoAccepted("bob", "carol") });
        await alice.sendEvent(opened.id, "note", Buffer.from("aside"));
        await alice.sendText(opened.id, "go");
        const e = await within(ended.promise, 10_000, "onSessionEnd");
        assert.equal(e.sessionId, opened.id);
        assert.equal(e.type, "session_closed");
        assert.deepEqual(wire, tc.want);
        if (tc.observe) {
          assert.deepEqual(observed, ["session_invite", "session_opened", "note", "text", "text", "session_closed"]);
        }
      } finally {
        await Promise.all(served.map((s) => s.stop()));
        [alice, bob, carol].forEach((c) => c.close());
      }
    });
  }
});

describe("serve's hooks", { timeout: 60_000 }, () => {
  let hub: Hubd;
  before(async () => {
    hub = await Hubd.start();
  });
  after(() => hub.close());

  // An observer or onSessionEnd that throws or rejects is logged and serve
  // acts on the delivery as if it had returned, over either transport: the
  // turn is dispatched, the end aborts the session's running handler, and
  // serve goes on to serve the next session.
  for (const transport of ["stream", "unary"] as const) {
    for (const fails of [
      { observer: "throws", end: "rejects" },
      { observer: "rejects", end: "throws" },
    ] as const) {
      test(`${transport}: an observer that ${fails.observer} and an onSessionEnd that ${fails.end} are logged; serve goes on`, async () => {
        const logs = new Logs();
        const wire: string[] = [];
        const alice = await hub.connect("alice");
        const bob = await hub.connect("bob", { transport, log: logs.log, channelOptions: { interceptors: [recording(wire)] } });
        const observed: string[] = [];
        const called = new Map<string, ReturnType<typeof deferred<void>>>();
        const aborted = new Map<string, ReturnType<typeof deferred<void>>>();
        const ended = new Map<string, ReturnType<typeof deferred<void>>>();
        const get = (m: Map<string, ReturnType<typeof deferred<void>>>, id: string) => {
          let d = m.get(id);
          if (!d) {
            d = deferred();
            m.set(id, d);
          }
          return d;
        };
        const fail = (how: "throws" | "rejects", err: Error): Promise<void> => {
          if (how === "throws") {
            throw err;
          }
          return Promise.reject(err);
        };
        const ac = new AbortController();
        let running = true;
        const run = bob
          .serve(
            async (turn) => {
              get(called, turn.sessionId).resolve();
              if (!turn.signal.aborted) {
                await new Promise<void>((res) => turn.signal.addEventListener("abort", () => res(), { once: true }));
              }
              get(aborted, turn.sessionId).resolve();
              return undefined;
            },
            {
              signal: ac.signal,
              view: null,
              observer: (d) => {
                observed.push(d.yourTurn ? `${d.envelope?.type} [your turn]` : `${d.envelope?.type}`);
                return fail(fails.observer, new Error(`observer failed on ${d.envelope?.type} seq ${d.envelope?.seq}`));
              },
              onSessionEnd: (e) => {
                get(ended, e.sessionId).resolve();
                return fail(fails.end, new Error(`onSessionEnd failed for ${e.sessionId}`));
              },
            },
          )
          .finally(() => (running = false));
        try {
          for (const round of [1, 2]) {
            const opened = await alice.open({ graph: sequence("alice", "bob"), participants: autoAccepted("bob") });
            await alice.sendText(opened.id, "go");
            await within(get(called, opened.id).promise, 10_000, `round ${round}: bob's handler called for its turn`);
            await alice.closeSession(opened.id, "no_longer_needed");
            await within(get(ended, opened.id).promise, 10_000, `round ${round}: onSessionEnd`);
            await within(get(aborted, opened.id).promise, 10_000, `round ${round}: the ended session's handler aborted`);
            await within(logs.waitFor(`onSessionEnd failed for ${opened.id}`), 10_000, `round ${round}: onSessionEnd's error logged`);
            assert.ok(running, `round ${round}: serve still running`);
          }
          // The observer was called with every delivery, although each call failed.
          assert.deepEqual(observed, wire);
          assert.equal(observed.filter((o) => o === "text [your turn]").length, 2, observed.join(", "));
          assert.equal(observed.filter((o) => o === "session_closed").length, 2, observed.join(", "));
          const logged = logs.lines.filter((l) => l.includes("observer failed on"));
          assert.equal(logged.length, observed.length, logs.lines.join("\n"));
          assert.ok(logged.some((l) => l.includes("observer failed on text")), logs.lines.join("\n"));
        } finally {
          ac.abort();
          await run; // rejects if serve failed
          alice.close();
          bob.close();
        }
      });
    }
  }
});

describe("serve across hub crashes", { timeout: 60_000 }, () => {
  test("kill -9 in the middle of a round robin: every agent resumes, no turn is answered twice", async () => {
    const hub = await Hubd.start();
    const names = ["a", "b", "c"];
    const clients = await Promise.all(names.map((n) => hub.connect(n)));
    const calls: string[] = [];
    const reconnects: string[] = [];
    const held = deferred();
    const release = deferred();
    const s = new Serving(
      clients,
      (c) => async (turn) => {
        calls.push(`${c.name}@${turn.trigger.seq}`);
        const n = calls.length;
        if (n === 5) {
          // b's second turn waits until the hub is gone.
          held.resolve();
          await release.promise;
        }
        return `turn ${n}`;
      },
      { onReconnect: (err) => reconnects.push(String(err)), backoff: { baseMs: 20, maxMs: 500 } },
    );
    try {
      const opened = await clients[0].openWorkflow(roundRobin(names, 9), ["b", "c"]);
      await within(held.promise, 10_000, `a fifth turn (calls ${calls.join(" ")})`);
      await hub.kill9();
      release.resolve(); // b's reply now fails to post, and is retried with the same id
      await hub.run(); // the same address and data directory
      const { turns, reason } = await within(transcript(clients[0], opened.id), 20_000, "the session's end");
      assert.deepEqual(
        turns,
        Array.from({ length: 9 }, (_, i) => `${names[i % 3]}: turn ${i + 1}`),
      );
      assert.equal(reason, "max_turns");
      // Triggers: the open (seq 4, after the invite and two acks), then each turn's seq.
      assert.deepEqual(calls, ["a@4", "b@5", "c@6", "a@7", "b@8", "c@9", "a@10", "b@11", "c@12"]);
      assert.ok(reconnects.length >= names.length, `every agent's stream should have broken: ${reconnects.join("; ")}`);
      const log = await clients[0].readLog(opened.id);
      assert.equal(log.filter(isTurn).length, 9, "each turn once in the log");
    } finally {
      await s.stop();
      clients.forEach((c) => c.close());
      await hub.close();
    }
  });

  test("a send retried with its client message id after kill -9 and a restart is the original", async () => {
    const hub = await Hubd.start();
    const alice = await hub.connect("alice");
    try {
      const opened = await alice.open({ graph: sequence("alice", "bob", "carol"), participants: autoAccepted("bob", "carol") });
      const id = turnMsgId(opened.id, 2);
      const first = await alice.sendText(opened.id, "findings", { clientMsgId: id });
      assert.equal(first.duplicate, false);
      await hub.kill9();
      await hub.run();
      const again = await alice.sendText(opened.id, "findings", { clientMsgId: id });
      assert.equal(again.duplicate, true);
      assert.equal(again.seq, first.seq);
      assert.equal(again.id, first.id);
      assert.equal(again.acceptedAt?.getTime(), first.acceptedAt?.getTime());
      assert.equal(again.clientMsgId, id);
      assert.equal((await alice.readLog(opened.id)).filter(isTurn).length, 1);
    } finally {
      alice.close();
      await hub.close();
    }
  });

  test("a send made while the hub is down for three seconds goes through once it is back, written once", async () => {
    const hub = await Hubd.start();
    const alice = await hub.connect("alice");
    try {
      const opened = await alice.open({ graph: sequence("alice", "bob", "carol"), participants: autoAccepted("bob", "carol") });
      await hub.kill9();
      const sent = alice.sendText(opened.id, "during the outage", { clientMsgId: "outage-1" });
      await new Promise((r) => setTimeout(r, 3000)); // the hub stays down longer than three tries a second apart
      await hub.run();
      const ack = await within(sent, 15_000, "the send across the outage");
      assert.equal(ack.duplicate, false);
      assert.equal((await alice.readLog(opened.id)).filter((e) => e.clientMsgId === "outage-1").length, 1);
    } finally {
      alice.close();
      await hub.close();
    }
  });

  test("a slow subscriber is cut off, resubscribes from its cursor, sees everything once and takes its turn", async () => {
    const hub = await Hubd.start({ args: ["--subscriber-buffer", "1"] });
    const [alice, bob] = await Promise.all([hub.connect("alice"), hub.connect("bob")]);
    const blocked = deferred();
    const release = deferred();
    const ended = deferred();
    const seen: Delivery[] = [];
    const reconnects: string[] = [];
    const calls: number[] = [];
    const s = new Serving(
      [bob],
      () => (turn) => {
        calls.push(turn.trigger.seq);
        return `got ${turn.text()}`;
      },
      {
        view: null,
        onReconnect: (err) => reconnects.push(String(err)),
        observer: async (d) => {
          seen.push(d);
          if (ends(d.envelope)) {
            ended.resolve();
          }
          if (d.envelope?.type === "note" && d.envelope.custom?.length === 1) {
            blocked.resolve();
            await release.promise; // bob stops reading
          }
        },
      },
    );
    try {
      const opened = await alice.open({ graph: sequence("alice", "bob"), participants: autoAccepted("bob") });
      await alice.sendEvent(opened.id, "note", Buffer.from([1]));
      await within(blocked.promise, 10_000, "bob reading the first note");
      const big = Buffer.alloc(32 << 10, "x");
      for (let i = 0; i < 40; i++) {
        await alice.sendEvent(opened.id, "note", big);
      }
      await alice.sendText(opened.id, "the report");
      await within(hub.waitFor("slow subscriber cut off"), 10_000, "the hub cutting bob off");
      release.resolve();
      const { turns, reason } = await within(transcript(alice, opened.id), 20_000, "the session's end");
      await within(ended.promise, 10_000, "bob seeing the close");
      assert.deepEqual(turns, ["alice: the report", "bob: got the report"]);
      assert.equal(reason, "sequence_complete");
      assert.equal(calls.length, 1, `handler calls ${calls.join(" ")}`);
      assert.match(reconnects[0] ?? "", /SLOW_SUBSCRIBER/);
      // Every envelope bob may see, once, in order (a turn may be re-told).
      const want = (await bob.readLog(opened.id)).filter((e) => e.from !== "bob").map((e) => e.seq);
      const have: number[] = [];
      for (const d of seen.filter((x) => x.envelope?.sessionId === opened.id)) {
        const seq = d.envelope!.seq;
        if (have.length > 0 && seq <= have[have.length - 1]) {
          assert.ok(d.yourTurn, `seq ${seq} delivered again after ${have[have.length - 1]}`);
          continue;
        }
        have.push(seq);
      }
      assert.deepEqual(have, want);
    } finally {
      release.resolve();
      await s.stop();
      alice.close();
      bob.close();
      await hub.close();
    }
  });
});
