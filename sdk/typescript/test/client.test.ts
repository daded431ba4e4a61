// Every call of the client against the real hub: open with every option,
// the session types, listing, invites, every kind of send, the log, views,
// pending turns, subscribe, watch, follow and the raw client.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { credentials, Metadata, status } from "@grpc/grpc-js";
import {
  AgentHeader,
  autoAccepted,
  BadLifecycleTransitionError,
  CanceledError,
  Client,
  closeReason,
  DeadlineExceededError,
  ends,
  errorInfoFromMetadata,
  EventType,
  expect,
  HubClient,
  HubError,
  hubpb,
  invited,
  MalformedError,
  isLoopback,
  isTurn,
  newPacket,
  openRequest,
  Packet,
  PermissionDeniedError,
  PurgedError,
  ErasedError,
  roundRobin,
  sequence,
  SessionType,
  State,
  textOf,
  Transport,
  UnauthenticatedError,
  UnavailableError,
  ViewName,
  type Envelope,
  type Session,
} from "@hubd/sdk";

import { Hubd } from "./hub.js";

/** openPipeline opens alice → bob → carol with bob and carol auto-accepted. */
async function openPipeline(alice: Client): Promise<Session> {
  const s = await alice.open({ graph: sequence("alice", "bob", "carol"), participants: autoAccepted("bob", "carol") });
  assert.equal(s.state, State.Open);
  return s;
}

/** The JSON form of a message (proto field names), as the hub writes it. */
function js<T>(codec: { toJSON(m: T): unknown }, m: T | undefined): string {
  return JSON.stringify(m === undefined ? undefined : codec.toJSON(m));
}

let hub: Hubd;
let alice: Client, bob: Client, carol: Client;
before(async () => {
  hub = await Hubd.start();
  [alice, bob, carol] = await Promise.all(["alice", "bob", "carol"].map((n) => hub.connect(n)));
});
after(async () => {
  for (const c of [alice, bob, carol]) {
    c.close();
  }
  await hub.close();
});

describe("connect", { timeout: 20_000 }, () => {
  test("needs an identity, refuses a token in plaintext to a remote hub, and fails on an unreachable one", async () => {
    await assert.rejects(Client.connect(hub.addr, {}), /name, token or a client certificate is required/);
    await assert.rejects(Client.connect("hub.example.com:7420", { token: "secret-token-0123456789" }), /plaintext/);
    await assert.rejects(Client.connect("127.0.0.1:1", { name: "alice", timeoutMs: 200 }), (err) => {
      assert.ok(err instanceof DeadlineExceededError, String(err));
      assert.equal(err.op, "connect");
      return true;
    });
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(Client.connect(hub.addr, { name: "alice", signal: ac.signal }), CanceledError);
  });

  test("knows a loopback target", () => {
    for (const t of ["127.0.0.1:7420", "localhost:1", "[::1]:7420", "dns:///localhost:7420", "ipv4:127.0.0.2:1", "unix:/tmp/hubd.sock"]) {
      assert.ok(isLoopback(t), t);
    }
    for (const t of ["hub.example.com:7420", "10.0.0.1:7420", "[2001:db8::1]:1", "dns:///hub.example.com:443"]) {
      assert.ok(!isLoopback(t), t);
    }
  });

  test("the raw client shares the connection and credentials, and the name is the client's", async () => {
    assert.equal(alice.name, "alice");
    const s = await openPipeline(alice);
    const got = await new Promise<hubpb.SessionInfo>((res, rej) =>
      alice.raw.getSession(hubpb.GetSessionRequest.fromPartial({ sessionId: s.id }), new Metadata(), (err, r) => (err ? rej(err) : res(r))),
    );
    assert.equal(got.meta?.creator, "alice");
    assert.equal(got.state, State.Open);
  });
});

describe("client options", { timeout: 20_000 }, () => {
  test("insecure lets a token go in plaintext to a remote hub (refused without it)", async () => {
    const remote = "10.255.255.1:7420";
    const token = "secret-token-0123456789";
    await assert.rejects(Client.connect(remote, { token, timeoutMs: 100 }), /plaintext/);
    // Allowed: the connect is tried, and connects or runs into its timeout
    // (what a remote address does depends on the machine's network).
    const err = await Client.connect(remote, { token, insecure: true, timeoutMs: 100 }).then(
      (c) => c.close(),
      (e: unknown) => e,
    );
    assert.ok(err === undefined || err instanceof DeadlineExceededError, String(err));
  });

  test("channelOptions reach the channel: a tiny send limit fails the call locally", async () => {
    // An Open call (unary: on the agent stream a frame over the limit
    // would end the stream, and the open fail as unavailable).
    const tiny = await Client.connect(hub.addr, { name: "alice", transport: Transport.Unary, channelOptions: { "grpc.max_send_message_length": 16 } });
    try {
      await assert.rejects(tiny.open({ type: SessionType.Conversation, participants: autoAccepted("bob") }), (err: unknown) => {
        assert.ok(err instanceof HubError && err.code === status.RESOURCE_EXHAUSTED, String(err));
        return true;
      });
    } finally {
      tiny.close();
    }
  });

  test("sendAttempts: a send to a stopped hub is tried that many times, each retry logged", async () => {
    const h = await Hubd.start();
    const lines: string[] = [];
    const twice = await h.connect("alice", { sendAttempts: 2, log: (l) => lines.push(l) });
    const once = await h.connect("alice", { sendAttempts: 1, log: (l) => lines.push(l) });
    try {
      const s = await twice.open({ type: SessionType.Conversation, participants: autoAccepted("bob") });
      await h.stop();
      await assert.rejects(twice.sendText(s.id, "hello"), UnavailableError);
      assert.equal(lines.filter((l) => l.includes("retrying (1/2)")).length, 1, lines.join("\n"));
      lines.length = 0;
      await assert.rejects(once.sendText(s.id, "hello"), UnavailableError);
      assert.deepEqual(lines, []);
    } finally {
      twice.close();
      once.close();
      await h.close();
    }
  });

  test("AgentHeader names the caller in development mode", async () => {
    assert.equal(AgentHeader, "x-hubd-agent");
    const plain = new HubClient(hub.addr, credentials.createInsecure());
    try {
      const list = (md: Metadata) =>
        new Promise<unknown>((res, rej) =>
          plain.listSessions(hubpb.ListSessionsRequest.fromPartial({}), md, (err, r) => (err ? rej(err) : res(r))),
        );
      const md = new Metadata();
      md.set(AgentHeader, "alice");
      await list(md);
      await assert.rejects(list(new Metadata()), (err: { code?: number }) => err.code === status.UNAUTHENTICATED);
      assert.ok(UnauthenticatedError);
    } finally {
      plain.close();
    }
  });
});

describe("open", { timeout: 20_000 }, () => {
  test("sends every option and reads them back; an idempotency key returns the same session", async () => {
    const parent = await openPipeline(alice);
    const opts = {
      type: SessionType.Workflow,
      participants: [
        { name: "bob", role: "reviewer", autoAccept: false },
        { name: "carol", role: "human", autoAccept: true },
      ],
      graph: roundRobin(["alice", "bob", "carol"], 5),
      knobs: { max_handoffs: 3, context: { topic: "wal" } },
      labels: { team: "storage" },
      ttlMs: 3_600_000,
      inviteTimeoutMs: 60_000,
      expectations: [expect("turn_within", 90_000, "warn")],
      parent: parent.id,
      idempotencyKey: "review-1",
    };
    const s = await alice.open(opts);
    const m = s.meta!;
    assert.equal(s.state, State.Pending);
    assert.equal(s.existing, false);
    assert.equal(s.ended, false);
    assert.equal(m.creator, "alice");
    assert.equal(m.type, "workflow@1");
    assert.equal(
      JSON.stringify(m.participants.map((p) => hubpb.Participant.toJSON(p))),
      '[{"name":"alice","role":"creator"},{"name":"bob","role":"reviewer"},{"name":"carol","role":"human","auto_accept":true}]',
    );
    assert.deepEqual(m.ttl, { seconds: 3600, nanos: 0 });
    assert.deepEqual(m.inviteTimeout, { seconds: 60, nanos: 0 });
    assert.deepEqual(m.labels, { team: "storage" });
    assert.equal(m.parentSessionId, parent.id);
    assert.equal(m.rootSessionId, parent.id);
    assert.equal(m.depth, 1);
    assert.deepEqual(m.expectations, [{ name: "turn_within", action: "warn", within: { seconds: 90, nanos: 0 } }]);
    assert.equal(m.knobs.max_handoffs, 3);
    assert.equal(s.var("topic"), "wal");
    assert.equal(s.var("nope"), undefined);

    const again = await alice.open(opts);
    assert.equal(again.existing, true);
    assert.equal(again.id, s.id);

    // Bob acks; the session opens and alice is expected.
    const ack = await bob.ackInvite(s.id);
    assert.equal(ack.seq, 2);
    const got = await bob.getSession(s.id);
    assert.equal(got.state, State.Open);
    assert.deepEqual(got.expected, ["alice"]);
    assert.equal(got.seq, 3);

    // No expectations at all.
    const none = await alice.open({ type: SessionType.Conversation, participants: autoAccepted("bob"), expectations: [] });
    assert.deepEqual(none.meta?.expectations, []);
  });

  test("refuses a value that is not JSON before the call, and has defaults", () => {
    assert.throws(() => openRequest({ knobs: { f: () => 1 } }), /knob "f"/);
    assert.throws(() => openRequest({ knobs: { n: Number.POSITIVE_INFINITY } }), /knob "n"/);
    const req = openRequest({});
    assert.equal(req.type, SessionType.Workflow);
    assert.equal(req.expectations, undefined);
    assert.equal(req.graph, undefined);
  });

  test("conversation, discussion and consulting sessions take their turns", async () => {
    const conv = await alice.open({ type: SessionType.Conversation, participants: invited("bob") });
    assert.equal(conv.state, State.Pending);
    await bob.ackInvite(conv.id);
    await alice.sendText(conv.id, "hello");
    await bob.sendText(conv.id, "hi");
    await alice.sendText(conv.id, "bye");
    assert.equal((await alice.getSession(conv.id)).turn, 3);

    const disc = await alice.open({ type: SessionType.Discussion, participants: autoAccepted("bob", "carol"), knobs: { max_turns: 3 } });
    assert.deepEqual(disc.expected, ["alice"]);
    await alice.sendText(disc.id, "one");
    await assert.rejects(carol.sendText(disc.id, "me"), /OUT_OF_TURN/);
    await bob.sendText(disc.id, "two");
    const last = await carol.sendText(disc.id, "three");
    assert.equal(last.closed, true);
    assert.equal(last.closeReason, "max_turns");

    const cons = await alice.open({ type: SessionType.Consulting, participants: autoAccepted("bob") });
    await alice.sendText(cons.id, "what is a WAL?");
    const answer = await bob.sendText(cons.id, "a log written first");
    assert.equal(answer.closed, true);
    const ended = await alice.getSession(cons.id);
    assert.equal(ended.ended, true);
    assert.equal(ended.closeReason, answer.closeReason);
  });
});

describe("sessions", { timeout: 20_000 }, () => {
  test("listSessions filters and pages", async () => {
    const h = await Hubd.start();
    const [a, b] = await Promise.all([h.connect("alice"), h.connect("bob")]);
    try {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        ids.push((await openPipeline(a)).id);
      }
      await a.closeSession(ids[1], "done_here");
      const labelled = await b.open({ type: SessionType.Conversation, participants: autoAccepted("alice"), labels: { k: "v" } });
      const all: string[] = [];
      for (let token = ""; ; ) {
        const page = await a.listSessions({ pageSize: 2, pageToken: token });
        all.push(...page.sessions.map((s) => s.id));
        if (page.nextPageToken === "") {
          break;
        }
        token = page.nextPageToken;
      }
      assert.deepEqual(all, [...ids, labelled.id]);
      const cases: [Parameters<Client["listSessions"]>[0], string[]][] = [
        [{ state: State.Closed }, [ids[1]]],
        [{ creator: "bob" }, [labelled.id]],
        [{ participant: "carol" }, ids],
        [{ labels: { k: "v" } }, [labelled.id]],
      ];
      for (const [opts, want] of cases) {
        const { sessions } = await a.listSessions(opts);
        assert.deepEqual(
          sessions.map((s) => s.id),
          want,
          JSON.stringify(opts),
        );
        for (const s of sessions.filter((x) => x.id === ids[1])) {
          assert.ok(s.ended);
          assert.equal(s.closeReason, "done_here");
        }
      }
    } finally {
      a.close();
      b.close();
      await h.close();
    }
  });

  test("readLog reads page after page up to its limit, and stops where the log ends", async () => {
    // The hub answers a read in pages of at most 1000 envelopes.
    const s = await alice.open({ type: SessionType.Conversation, participants: autoAccepted("bob") });
    for (let i = 0; i < 1200; i++) {
      await alice.sendText(s.id, `t${i}`);
    }
    const total = 1202; // with the invite and the open
    const all = await alice.readLog(s.id, 0, 1500);
    assert.deepEqual(all.map((e) => Number(e.seq)), Array.from({ length: total }, (_, i) => i + 1));
    assert.equal((await alice.readLog(s.id, 0, 1100)).length, 1100);
    assert.equal((await alice.readLog(s.id)).length, 1000);
    assert.equal((await alice.readLog(s.id, 900, 5000)).length, total - 899);
  });

  test("a rejected invite closes the session with invite_rejected", async () => {
    const s = await alice.openWorkflow(sequence("alice", "bob"), ["bob"]);
    const ack = await bob.rejectInvite(s.id, "busy");
    assert.equal(ack.closed, true);
    assert.equal(ack.closeReason, "invite_rejected");
    const log = await bob.readLog(s.id);
    assert.deepEqual(
      log.map((e) => `${e.type}:${e.ended?.reason ?? ""}`),
      ["session_invite:", "session_invite_reject:busy", "session_closed:invite_rejected"],
    );
  });

  test("closeSession ends a session with its reason", async () => {
    const s = await openPipeline(alice);
    const ack = await alice.closeSession(s.id, "changed_my_mind");
    assert.equal(ack.closed, true);
    assert.equal(ack.closeReason, "changed_my_mind");
    assert.equal((await alice.getSession(s.id)).state, State.Closed);
    const byDefault = await openPipeline(alice);
    assert.equal((await alice.closeSession(byDefault.id)).closeReason, "explicit_close");
  });

  test("erase: an operator's, with a reason; reads then throw ErasedError with who and why", async () => {
    const op = await hub.connect("operator");
    try {
      const s = await openPipeline(alice);
      await assert.rejects(alice.erase({ sessionIds: [s.id], reason: "mine" }), PermissionDeniedError);
      const got = await op.erase({ sessionIds: [s.id], reason: "asked to be forgotten" });
      assert.deepEqual(got.map((e) => [e.sessionId, e.erasedBy, e.reason]), [[s.id, "operator", "asked to be forgotten"]]);
      await assert.rejects(alice.getSession(s.id), (err) => {
        assert.ok(err instanceof ErasedError, String(err));
        const info = errorInfoFromMetadata(err.metadata);
        assert.equal(info.metadata.erased_by, "operator");
        assert.equal(info.metadata.reason, "asked to be forgotten");
        return true;
      });
    } finally {
      op.close();
    }
  });

  test("purge: an operator's, refused while open and to an agent; reads then throw PurgedError", async () => {
    const op = await hub.connect("operator");
    try {
      const s = await openPipeline(alice);
      await assert.rejects(op.purge(s.id), BadLifecycleTransitionError);
      await alice.closeSession(s.id, "done");
      await assert.rejects(alice.purge(s.id), PermissionDeniedError);
      const got = await op.purge(s.id);
      assert.equal(got.sessionId, s.id);
      assert.match(got.archive, /^hubd-archive-\d{4}-\d{2}-\d{2}\.hubarc$/);
      await assert.rejects(alice.getSession(s.id), (err) => {
        assert.ok(err instanceof PurgedError, String(err));
        const info = errorInfoFromMetadata(err.metadata);
        assert.equal(info.metadata.archive, got.archive);
        assert.ok(info.metadata.purged_at);
        return true;
      });
      await assert.rejects(alice.readLog(s.id), PurgedError);
    } finally {
      op.close();
    }
  });

  test("importSessions: an operator's; the purged session reads again, labelled imported_from", async () => {
    const op = await hub.connect("operator");
    try {
      const s = await openPipeline(alice);
      await alice.closeSession(s.id, "done");
      const n = (await alice.readLog(s.id)).length;
      const purged = await op.purge(s.id);
      await assert.rejects(alice.importSessions(purged.archive, [s.id]), PermissionDeniedError);
      await assert.rejects(op.importSessions("../" + purged.archive, [s.id]), MalformedError);
      const got = await op.importSessions(purged.archive, [s.id]);
      assert.deepEqual(
        got.map((i) => [i.sessionId, Number(i.envelopes), i.archive]),
        [[s.id, n, purged.archive]],
      );
      const info = await alice.getSession(s.id);
      assert.equal(info.state, "CLOSED");
      assert.equal(info.meta?.labels.imported_from, purged.archive);
      assert.equal((await alice.readLog(s.id)).length, n);
      await assert.rejects(op.importSessions(purged.archive, [s.id]), BadLifecycleTransitionError);
    } finally {
      op.close();
    }
  });
});

describe("sending and reading", { timeout: 20_000 }, () => {
  let id: string;
  let textAck: { id: string };

  test("every kind of send, acknowledged with its seq", async () => {
    id = (await openPipeline(alice)).id; // seq 1 invite, 2 opened

    const turns = (await alice.pendingTurns()).filter((d) => d.envelope?.sessionId === id);
    assert.equal(turns.length, 1);
    assert.equal(turns[0].yourTurn, true);
    assert.equal(turns[0].envelope?.type, EventType.Opened);
    assert.equal(turns[0].envelope?.seq, 2);

    let ack = await bob.setContext(id, { topic: "wal", n: 1 }); // seq 3, not a turn
    assert.equal(ack.seq, 3);
    assert.match(ack.clientMsgId, /^m-/);

    ack = await alice.sendText(id, "findings", { clientMsgId: "r1", traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" }); // seq 4
    assert.equal(ack.seq, 4);
    assert.equal(ack.duplicate, false);
    assert.equal(ack.clientMsgId, "r1");
    assert.ok(ack.id !== "" && ack.acceptedAt instanceof Date && ack.acceptedAt.getTime() > 0);
    textAck = ack;
    const dup = await alice.sendText(id, "findings again", { clientMsgId: "r1" });
    assert.equal(dup.duplicate, true);
    assert.equal(dup.seq, 4);
    assert.equal(dup.id, ack.id);

    const p = newPacket("draft").set("approved", false).set("score", 0.5).delete("n").withUsage({ inputTokens: 10, outputTokens: 3, costUsd: 0.01 });
    ack = await bob.sendPacket(id, p, { causationId: textAck.id }); // seq 5
    assert.equal(ack.seq, 5);
    ack = await carol.sendEvent(id, "note", Buffer.from("psst"), { audience: ["alice"] }); // seq 6
    assert.equal(ack.seq, 6);
    ack = await carol.updateContext(id, { delete: ["topic"] }); // seq 7
    assert.equal(ack.seq, 7);
    ack = await carol.sendPacket(id, newPacket("edited").finish("", "all good")); // seq 8, closes at 9
    assert.equal(ack.seq, 8);
    assert.equal(ack.closed, true);
    assert.equal(ack.closeReason, "finished");

    const s = await alice.getSession(id);
    assert.equal(s.state, State.Closed);
    assert.ok(s.ended);
    assert.equal(s.closeReason, "finished");
    assert.equal(s.turn, 3);
    assert.equal(s.seq, 9);
    assert.equal(js(hubpb.Usage, s.usage), '{"input_tokens":10,"output_tokens":3,"cost_usd":0.01}');
    assert.deepEqual(s.context, { approved: false, score: 0.5 });
  });

  test("readLog shows what each agent may see", async () => {
    const log = await alice.readLog(id, 4, 3);
    assert.equal(log.length, 3);
    const [text, packet, note] = log;
    assert.equal(textOf(text), "findings");
    assert.equal(text.from, "alice");
    assert.equal(text.clientMsgId, "r1");
    assert.notEqual(text.traceparent, "");
    assert.ok(isTurn(text));
    assert.equal(textOf(packet), "draft");
    assert.equal(packet.causationId, text.id);
    assert.deepEqual(JSON.parse(js(hubpb.Packet, packet.packet)), {
      body: "draft",
      context_updates: { delete: ["n"], set: { approved: false, score: 0.5 } },
      usage: { input_tokens: 10, output_tokens: 3, cost_usd: 0.01 },
    });
    assert.equal(note.type, "note");
    assert.equal(note.custom?.toString(), "psst");
    assert.deepEqual(note.audience?.names, ["alice"]);
    assert.ok(!isTurn(note));
    // Bob may not see carol's note to alice.
    const blog = await bob.readLog(id, 6, 1);
    assert.equal(blog.length, 1);
    assert.equal(blog[0].seq, 7);
    assert.deepEqual(blog[0].contextSet?.delete, ["topic"]);
  });

  test("view gives the transcript by name", async () => {
    const v = await bob.view(id, { name: ViewName.Windowed, window: 1 });
    assert.equal(v.name, "windowed");
    assert.equal(v.items.length, 1);
    assert.equal(v.items[0].text, "edited");
    assert.equal(v.olderTotal, 2);
    assert.equal(v.older.length, 2);
    const full = await bob.view(id, { name: ViewName.Full });
    assert.deepEqual(
      full.items.map((i) => `${i.from}: ${i.text}`),
      ["alice: findings", "bob: draft", "carol: edited"],
    );
    const last = await bob.view(id, { name: ViewName.Last });
    assert.deepEqual(
      last.items.map((i) => i.text),
      ["edited"],
    );
    assert.ok((await bob.view(id)).items.length > 0);
  });

  test("subscribe with a view: a turn notice carries the caller's view, other deliveries none", async () => {
    const s = await alice.open({ graph: sequence("alice", "bob"), participants: autoAccepted("bob") });
    await alice.sendText(s.id, "findings");
    const want = await bob.view(s.id, { name: ViewName.Last });
    const got: string[] = [];
    for (const view of [{ name: ViewName.Last }, undefined]) {
      const sub = bob.subscribe({ cursors: { [s.id]: 0 }, view });
      for await (const d of sub) {
        if (d.envelope?.sessionId !== s.id) {
          continue;
        }
        if (!d.yourTurn) {
          assert.equal(d.view, undefined, `a delivery that is not a turn carries a view: ${d.envelope.type}`);
          continue;
        }
        if (view) {
          assert.deepEqual(d.view, want);
          got.push(`turn with ${d.view?.items.map((i) => i.text).join(",")}`);
        } else {
          assert.equal(d.view, undefined);
          got.push("turn without a view");
        }
        break;
      }
      sub.close();
    }
    assert.deepEqual(got, ["turn with findings", "turn without a view"]);
  });

  test("subscribe resumes after a cursor, terse or not; watch shows what the caller may read", async () => {
    const sub = bob.subscribe({ cursors: { [id]: 6 } });
    const seqs: number[] = [];
    for await (const d of sub) {
      if (d.envelope?.sessionId !== id) {
        continue;
      }
      seqs.push(d.envelope.seq);
      if (ends(d.envelope)) {
        break;
      }
    }
    assert.deepEqual(seqs, [7, 8, 9]);

    // A terse stream brings bob only what asks him to act or ends his work:
    // of carol's context set, her finishing packet and the close, the close.
    const terse = bob.subscribe({ cursors: { [id]: 6 }, terse: true });
    const terseSeqs: number[] = [];
    for await (const d of terse) {
      if (d.envelope?.sessionId !== id) {
        continue;
      }
      terseSeqs.push(d.envelope.seq);
      if (ends(d.envelope)) {
        break;
      }
    }
    assert.deepEqual(terseSeqs, [9]);

    // Ended sessions without a cursor come only with includeEnded.
    const ended = bob.subscribe({ cursors: new Map(), includeEnded: true });
    for await (const d of ended) {
      if (d.envelope?.sessionId === id) {
        assert.equal(d.envelope.seq, 1);
        break;
      }
    }

    const w = bob.watch(id, 5);
    const watched: number[] = [];
    for (let d = await w.recv(); d; d = await w.recv()) {
      watched.push(d.envelope!.seq);
      if (ends(d.envelope)) {
        assert.equal(closeReason(d.envelope), "finished");
        assert.equal(d.yourTurn, false);
        break;
      }
    }
    w.close();
    assert.deepEqual(watched, [5, 7, 8, 9]);
  });

  test("follow yields every envelope once, the ending one last", async () => {
    const seen: Envelope[] = [];
    for await (const e of alice.follow(id)) {
      seen.push(e);
    }
    assert.deepEqual(
      seen.map((e) => e.seq),
      [1, 2, 3, 4, 5, 6, 7, 8, 9],
    );
    assert.equal(closeReason(seen.at(-1)), "finished");
    const from = [];
    for await (const e of alice.follow(id, 8)) {
      from.push(e.seq);
    }
    assert.deepEqual(from, [8, 9]);
  });

  test("follow waits for a live session and stops on its signal", async () => {
    const s = await openPipeline(alice);
    const ac = new AbortController();
    const seen: number[] = [];
    for await (const e of alice.follow(s.id, 1, { signal: ac.signal })) {
      seen.push(e.seq);
      if (e.seq === 2) {
        await alice.sendText(s.id, "findings");
      }
      if (e.seq === 3) {
        ac.abort();
      }
    }
    assert.deepEqual(seen, [1, 2, 3]);
    // timeoutMs bounds the whole follow.
    await assert.rejects(
      (async () => {
        for await (const _ of alice.follow(s.id, 1, { timeoutMs: 300 })) {
          // the session stays open
        }
      })(),
      DeadlineExceededError,
    );
  });

  test("send takes any envelope and leaves it alone; values that are not JSON fail before the call", async () => {
    const s = await alice.open({ type: SessionType.Conversation, participants: autoAccepted("bob") });
    const env = { type: EventType.TaskProgress, taskProgress: { task: "index", percent: 50, detail: "" } };
    const ack = await alice.send(s.id, env, { clientMsgId: "p1" });
    assert.deepEqual(env, { type: EventType.TaskProgress, taskProgress: { task: "index", percent: 50, detail: "" } });
    const log = await alice.readLog(s.id, ack.seq, 1);
    assert.equal(log[0].taskProgress?.percent, 50);
    assert.equal(log[0].clientMsgId, "p1");
    await assert.rejects(alice.setContext(s.id, { f: () => 1 }), TypeError);
    await assert.rejects(alice.sendPacket(s.id, newPacket("x").set("n", Number.NaN)), TypeError);
  });

  test("an escalation hands the turn to the supervisor", async () => {
    const s = await openPipeline(alice);
    await alice.sendText(s.id, "go");
    await bob.sendPacket(s.id, newPacket("stuck").escalate("need a decision"));
    const got = await bob.getSession(s.id);
    assert.deepEqual(got.expected, ["alice"]);
    assert.equal(got.ended, false);
  });
});

describe("packets", { timeout: 20_000 }, () => {
  test("the builders write the hub's message, and proto() leaves the builder reusable", () => {
    const cases: [Packet, string][] = [
      [newPacket("hi"), '{"body":"hi"}'],
      [newPacket("over").handoff("transfer_to_b", "b", "why"), '{"body":"over","routing":{"kind":"handoff","tool":"transfer_to_b","target":"b","reason":"why"}}'],
      [newPacket("bye").finish("", "sum"), '{"body":"bye","routing":{"kind":"finish","reason":"finished","summary":"sum"}}'],
      [newPacket("help").escalate("stuck"), '{"body":"help","routing":{"kind":"escalate","reason":"stuck"}}'],
      [newPacket().set("k", { a: [1] }).delete("x", "y"), '{"context_updates":{"delete":["x","y"],"set":{"k":{"a":[1]}}}}'],
      [new Packet("t").set("when", new Date(0)), '{"body":"t","context_updates":{"set":{"when":"1970-01-01T00:00:00.000Z"}}}'],
    ];
    for (const [p, want] of cases) {
      const pb = p.proto();
      assert.equal(js(hubpb.Packet, pb), want);
      pb.body = "changed";
      pb.contextUpdates?.delete.push("z");
      assert.equal(js(hubpb.Packet, p.proto()), want);
    }
  });
});
