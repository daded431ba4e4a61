// The agent's stream against the real hub: serve, sends and opens
// go over it by default (the hub's /metrics counts them as transport
// "agent_stream"), the unary transport and a hub without the stream use Send
// and Open calls and a Subscribe stream, a hub whose stream takes no opens
// is opened on with Open calls, a client message id is written once
// however often it is sent (an open once per idempotency key), a send in
// flight when the hub dies is sent again on a new stream and written once,
// an open in flight then fails as unavailable, and a closed client leaves
// nothing running.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { get } from "node:http";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import * as grpc from "@grpc/grpc-js";
import {
  autoAccepted,
  Client,
  hubpb,
  HubService,
  ends,
  isTurn,
  MaxStreamEnvelope,
  Reason,
  sequence,
  SessionClosedError,
  SessionType,
  textOf,
  TooLargeError,
  Transport,
  UnavailableError,
  UnknownSessionTypeError,
  type ClientOptions,
  type Handler,
} from "@hubd/sdk";

import { freePort, Hubd, pkgDir, watchReceived, within } from "./hub.js";

/** A hub with its HTTP port (/metrics) on a free loopback port. */
async function hubWithMetrics(args: string[] = []): Promise<{ hub: Hubd; http: string }> {
  const http = `127.0.0.1:${await freePort()}`;
  return { hub: await Hubd.start({ args: ["--http", http, ...args] }), http };
}

/** The hub's metrics: sample ("name{labels}") → value. */
function scrape(http: string): Promise<Map<string, number>> {
  return new Promise((resolve, reject) => {
    get({ host: http.split(":")[0], port: Number(http.split(":")[1]), path: "/metrics", agent: false }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => {
        const m = new Map<string, number>();
        for (const line of body.split("\n")) {
          const i = line.lastIndexOf(" ");
          if (line.startsWith("hubd_") && i > 0) {
            m.set(line.slice(0, i), Number(line.slice(i + 1)));
          }
        }
        resolve(m);
      });
    }).on("error", reject);
  });
}

const sends = (transport: "agent_stream" | "grpc", code = "OK") => `hubd_requests_total{code="${code}",method="Send",transport="${transport}"}`;
const opens = (transport: "agent_stream" | "grpc", code = "OK") => `hubd_requests_total{code="${code}",method="Open",transport="${transport}"}`;

/** How much a sample grew between two scrapes. */
function grew(before: Map<string, number>, after: Map<string, number>, name: string): number {
  return (after.get(name) ?? 0) - (before.get(name) ?? 0);
}

/**
 * An interceptor that answers Connect as a hub without it does
 * (UNIMPLEMENTED, before any frame), passing every other call on: the
 * stand-in for an older hub, which the repository does not build.
 */
const withoutConnect: grpc.Interceptor = (options, nextCall) => {
  if (options.method_definition.path !== "/hubd.v1.Hub/AgentStream") {
    return new grpc.InterceptingCall(nextCall(options));
  }
  return new grpc.InterceptingCall(nextCall(options), {
    start(_md, listener) {
      setImmediate(() =>
        listener.onReceiveStatus({ code: grpc.status.UNIMPLEMENTED, details: "unknown method Connect for service hubd.v1.Hub", metadata: new grpc.Metadata() }),
      );
    },
    sendMessage() {},
    halfClose() {},
  });
};

/**
 * An interceptor that reads the agent stream's ready frame without its
 * opens flag, passing everything else on: the stand-in for a hub whose
 * stream takes no opens (one would end the stream on an open frame).
 */
const withoutOpens = watchReceived(["/hubd.v1.Hub/AgentStream"], (_method, m: { ready?: { opens: boolean } }) => {
  if (m.ready) {
    m.ready.opens = false;
  }
});

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

describe("the agent stream", { timeout: 60_000 }, () => {
  let hub: Hubd;
  let http: string;
  before(async () => {
    ({ hub, http } = await hubWithMetrics());
  });
  after(() => hub.close());

  // stream: sends go on agent streams; opened: so does the open; older:
  // the clients fall back from the stream (and say so once each).
  const cases: { name: string; opts: Partial<ClientOptions>; stream: boolean; opened: boolean; older?: boolean }[] = [
    { name: "the stream (default)", opts: {}, stream: true, opened: true },
    { name: "transport unary", opts: { transport: Transport.Unary }, stream: false, opened: false },
    { name: "a hub without AgentStream", opts: { channelOptions: { interceptors: [withoutConnect] } }, stream: false, opened: false, older: true },
    { name: "a hub whose stream takes no opens", opts: { channelOptions: { interceptors: [withoutOpens] } }, stream: true, opened: false },
  ];
  for (const tc of cases) {
    test(`a served pipeline over ${tc.name}: each agent sees its view; /metrics counts the sends and the open by transport`, async () => {
      const names = ["researcher", "writer", "editor"];
      const lines: string[] = [];
      const clients = await Promise.all(names.map((n) => hub.connect(n, { ...tc.opts, log: (l) => lines.push(l) })));
      const calls: string[] = [];
      const ac = new AbortController();
      const handler = (c: Client): Handler => (turn) => {
        calls.push(`${c.name} seeing ${turn.view?.items.length}`);
        return `notes from ${c.name}`;
      };
      const runs = clients.map((c) => c.serve(handler(c), { signal: ac.signal }));
      const before = await scrape(http);
      try {
        const opened = await clients[0].openWorkflow(sequence(...names), ["writer", "editor"]);
        const { turns, reason } = await within(transcript(clients[0], opened.id), 20_000, "the pipeline's end");
        assert.deepEqual(turns, ["researcher: notes from researcher", "writer: notes from writer", "editor: notes from editor"]);
        assert.equal(reason, "sequence_complete");
        assert.deepEqual(calls, ["researcher seeing 0", "writer seeing 1", "editor seeing 2"]);
        // A send outside serve goes the same way, and is refused the same way.
        await assert.rejects(clients[1].sendText(opened.id, "after the end"), SessionClosedError);
        const during = await scrape(http);
        const connect = grew(before, during, sends("agent_stream")) + grew(before, during, sends("agent_stream", "FailedPrecondition"));
        const unary = grew(before, during, sends("grpc")) + grew(before, during, sends("grpc", "FailedPrecondition"));
        if (tc.opened) {
          assert.equal(grew(before, during, opens("agent_stream")), 1, "the open on researcher's stream");
          assert.equal(grew(before, during, opens("grpc")), 0, "no Open call");
        } else {
          assert.equal(grew(before, during, opens("grpc")), 1, "the open as an Open call");
          assert.equal(grew(before, during, opens("agent_stream")), 0, "no open on an agent stream");
        }
        if (tc.stream) {
          assert.equal(connect, 4, "three replies and the refused send on agent streams");
          assert.equal(unary, 0, "no Send call");
          // Researcher's own stream is opened for its open (which tells
          // whether the hub takes opens there).
          assert.equal(during.get('hubd_subscribers{kind="agent_stream"}'), 5, "serve's three streams, researcher's own and writer's own");
          assert.equal(during.get('hubd_subscribers{kind="subscribe"}') ?? 0, 0, "no Subscribe stream");
          assert.equal(clients[0].transport, Transport.Stream);
        } else {
          assert.equal(unary, 4, "three replies and the refused send as Send calls");
          assert.equal(connect, 0, "nothing on an agent stream");
          assert.equal(during.get('hubd_subscribers{kind="subscribe"}'), 3, "serve's Subscribe streams");
          assert.equal(clients[0].transport, Transport.Unary);
        }
        assert.equal(
          lines.filter((l) => l.includes("no agent stream")).length,
          tc.older ? names.length : 0,
          `each client says once that it falls back: ${lines.join("\n")}`,
        );
      } finally {
        ac.abort();
        await Promise.all(runs);
        clients.forEach((c) => c.close());
      }
      // The streams are gone once the clients are closed (the hub counts a
      // stream until its handler has seen the cancellation: a moment).
      let left = -1;
      for (const deadline = Date.now() + 5000; left !== 0 && Date.now() < deadline; await new Promise((r) => setTimeout(r, 20))) {
        left = (await scrape(http)).get('hubd_subscribers{kind="agent_stream"}') ?? 0;
      }
      assert.equal(left, 0, "agent streams left after close");
    });
  }

  test("sends of one client share its stream; a client message id is written once, however often and concurrently it is sent", async () => {
    const [alice, bob] = await Promise.all([hub.connect("alice"), hub.connect("bob")]);
    const before = await scrape(http);
    try {
      const s = await alice.open({ type: SessionType.Conversation, participants: autoAccepted("bob") });
      const acks = await Promise.all(Array.from({ length: 10 }, () => alice.sendEvent(s.id, "note", "same", { clientMsgId: "dup-1" })));
      const firsts = acks.filter((a) => !a.duplicate);
      assert.equal(firsts.length, 1, "one write");
      for (const a of acks) {
        assert.equal(a.seq, firsts[0].seq);
        assert.equal(a.id, firsts[0].id);
        assert.equal(a.clientMsgId, "dup-1");
      }
      // Other envelopes in flight together are each acknowledged with their own seq.
      const many = await Promise.all(Array.from({ length: 20 }, (_, i) => alice.sendEvent(s.id, "note", `n${i}`)));
      assert.equal(new Set(many.map((a) => a.seq)).size, 20);
      assert.equal((await alice.readLog(s.id)).filter((e) => e.clientMsgId === "dup-1").length, 1);
      const after = await scrape(http);
      assert.equal(grew(before, after, sends("agent_stream")), 30);
      assert.equal(grew(before, after, sends("grpc")), 0);
      assert.equal(after.get('hubd_subscribers{kind="agent_stream"}'), 1, "alice's one stream (bob sent nothing)");
    } finally {
      alice.close();
      bob.close();
    }
  });

  test("opens go on the client's stream: made by the agent, once per idempotency key, refused as an Open call is, the stream going on", async () => {
    const [alice, unary] = await Promise.all([hub.connect("alice"), hub.connect("alice", { transport: Transport.Unary })]);
    const before = await scrape(http);
    try {
      const o = { type: SessionType.Conversation, participants: autoAccepted("bob"), idempotencyKey: "open-once" };
      const s = await alice.open(o);
      assert.equal(s.meta?.creator, "alice");
      assert.equal(s.existing, false);
      assert.ok(s.id);
      const st = (alice as unknown as { main?: { ended: boolean; opens: boolean } }).main;
      assert.ok(st, "the open opened the client's stream");
      assert.equal(st.opens, true, "the hub takes opens on its stream");
      // Again with the same key, concurrently: the same session, existing.
      const again = await Promise.all([alice.open(o), alice.open(o)]);
      for (const a of again) {
        assert.equal(a.id, s.id);
        assert.equal(a.existing, true);
        assert.equal(a.meta?.creator, "alice");
      }
      // An unknown session type is refused with what an Open call rejects with.
      const onStream = await alice.open({ type: "nosuch@1" }).then(
        () => assert.fail("an unknown session type was opened on the stream"),
        (err: unknown) => err,
      );
      const byCall = await unary.open({ type: "nosuch@1" }).then(
        () => assert.fail("an unknown session type was opened with an Open call"),
        (err: unknown) => err,
      );
      assert.ok(onStream instanceof UnknownSessionTypeError, String(onStream));
      assert.ok(byCall instanceof UnknownSessionTypeError, String(byCall));
      for (const k of ["op", "code", "reason", "detail", "message"] as const) {
        assert.equal(onStream[k], byCall[k], k);
      }
      assert.equal(onStream.reason, "UNKNOWN_SESSION_TYPE");
      assert.equal(onStream.code, grpc.status.INVALID_ARGUMENT);
      // The stream goes on: a send after the refusal on the same stream.
      const ack = await alice.sendText(s.id, "after the refusal");
      assert.ok(ack.seq > 0);
      assert.equal((alice as unknown as { main?: unknown }).main, st, "the same stream");
      assert.equal(st.ended, false);
      const after = await scrape(http);
      assert.equal(grew(before, after, opens("agent_stream")), 3, "three opens on the stream");
      assert.equal(grew(before, after, opens("agent_stream", "InvalidArgument")), 1, "the refused open on the stream");
      assert.equal(grew(before, after, opens("grpc")), 0, "no Open call made by the stream's client");
      assert.equal(grew(before, after, opens("grpc", "InvalidArgument")), 1, "the unary client's refused Open call");
      assert.equal(grew(before, after, sends("agent_stream")), 1);
      assert.equal(after.get('hubd_subscribers{kind="agent_stream"}'), 1, "alice's one stream");
      const listed = await alice.listSessions({ creator: "alice" });
      assert.equal(listed.sessions.filter((x) => x.id === s.id).length, 1);
    } finally {
      alice.close();
      unary.close();
    }
  });

  test("against a hub whose stream takes no opens, an open is an Open call and sends stay on the stream", async () => {
    const alice = await hub.connect("alice", { channelOptions: { interceptors: [withoutOpens] } });
    const before = await scrape(http);
    try {
      const o = { type: SessionType.Conversation, participants: autoAccepted("bob"), idempotencyKey: "open-by-call" };
      const s = await alice.open(o);
      assert.equal(s.meta?.creator, "alice");
      assert.equal(s.existing, false);
      const again = await alice.open(o);
      assert.equal(again.id, s.id);
      assert.equal(again.existing, true);
      await assert.rejects(alice.open({ type: "nosuch@1" }), (err: unknown) => err instanceof UnknownSessionTypeError && err.reason === "UNKNOWN_SESSION_TYPE");
      await alice.sendText(s.id, "on the stream");
      const after = await scrape(http);
      assert.equal(grew(before, after, opens("grpc")), 2, "the opens as Open calls");
      assert.equal(grew(before, after, opens("grpc", "InvalidArgument")), 1, "the refused one too");
      assert.equal(grew(before, after, opens("agent_stream")) + grew(before, after, opens("agent_stream", "InvalidArgument")), 0, "no open on the stream");
      assert.equal(grew(before, after, sends("agent_stream")), 1, "the send on the stream");
      assert.equal(alice.transport, Transport.Stream);
    } finally {
      alice.close();
    }
  });

  test("an envelope over MaxStreamEnvelope goes as a Send call: refused alone, the stream goes on", async () => {
    const alice = await hub.connect("alice");
    const before = await scrape(http);
    try {
      const s = await alice.open({ type: SessionType.Conversation, participants: autoAccepted("bob") });
      await alice.sendEvent(s.id, "note", "small");
      await assert.rejects(alice.sendEvent(s.id, "note", Buffer.alloc(MaxStreamEnvelope + 1, "x")), TooLargeError);
      await alice.sendEvent(s.id, "note", "small again");
      const after = await scrape(http);
      assert.equal(grew(before, after, sends("agent_stream")), 2);
      assert.equal(grew(before, after, sends("grpc", "ResourceExhausted")), 1);
    } finally {
      alice.close();
    }
  });

  test("a transport that is neither stream nor unary is refused", async () => {
    await assert.rejects(hub.connect("alice", { transport: "carrier pigeon" as never }), /transport "carrier pigeon"/);
  });
});

describe("a connection at its stream limit", { timeout: 20_000 }, () => {
  test("sends and opens with Send and Open calls when the hub refuses it another stream (LIMIT_REACHED)", async () => {
    const { hub, http } = await hubWithMetrics(["--max-streams-per-conn", "1"]);
    const lines: string[] = [];
    const alice = await hub.connect("alice", { log: (l) => lines.push(l) });
    // Opened on another connection: alice's open would take her
    // connection's one stream with her agent stream.
    const opener = await hub.connect("alice", { transport: Transport.Unary });
    try {
      const s = await opener.open({ type: SessionType.Conversation, participants: autoAccepted("bob") });
      const w = alice.watch(s.id);
      assert.ok(await w.recv(), "the watch holds the connection's one stream");
      const before = await scrape(http);
      const ack = await alice.sendText(s.id, "hello");
      assert.ok(ack.seq > 0);
      const after = await scrape(http);
      assert.equal(grew(before, after, sends("grpc")), 1);
      assert.ok(lines.some((l) => l.includes("LIMIT_REACHED") && l.includes("Send call")), lines.join("\n"));
      // An open too: an Open call, as the stream cannot be opened.
      const before2 = await scrape(http);
      const s2 = await alice.open({ type: SessionType.Conversation, participants: autoAccepted("bob") });
      assert.equal(s2.meta?.creator, "alice");
      const after2 = await scrape(http);
      assert.equal(grew(before2, after2, opens("grpc")), 1);
      w.close();
    } finally {
      alice.close();
      opener.close();
      await hub.close();
    }
  });
});

describe("the agent stream across a hub crash", { timeout: 60_000 }, () => {
  test("a send in flight when the hub dies is sent again on a new stream, with its client message id, and written once", async () => {
    const hub = await Hubd.start();
    const lines: string[] = [];
    const alice = await hub.connect("alice", { log: (l) => lines.push(l) });
    try {
      // A try whose send the hub answered before it stopped (seen under a
      // loaded machine) proves nothing: try again with a new send.
      let tries = 0;
      for (;;) {
        tries++;
        const id = `flight-${tries}`;
        const s = await alice.open({ graph: sequence("alice", "bob"), participants: autoAccepted("bob") });
        await alice.setContext(s.id, { warm: true }); // the stream is open
        lines.length = 0;
        await hub.pause(); // the hub reads nothing more: the next send stays in flight
        const sent = alice.sendText(s.id, "in flight", { clientMsgId: id });
        let answered = false;
        void sent.then(
          () => (answered = true),
          () => {},
        );
        await new Promise((r) => setTimeout(r, 200));
        const inFlight = !answered;
        await hub.kill9();
        await hub.run();
        const ack = await within(sent, 15_000, "the send in flight");
        if (!inFlight) {
          assert.ok(tries < 3, "the hub answered while stopped three times");
          // The connection comes back after the restart.
          for (let i = 0; i < 50 && !(await alice.listSessions().then(() => true, () => false)); i++) {
            await new Promise((r) => setTimeout(r, 100));
          }
          continue;
        }
        assert.equal(ack.clientMsgId, id);
        assert.equal(ack.duplicate, false, "the stopped hub never read it");
        assert.ok(
          lines.some((l) => l.includes("retrying (1/") && l.includes("agent stream")),
          `the broken stream's send was retried: ${lines.join("\n")}`,
        );
        const log = await alice.readLog(s.id);
        assert.equal(log.filter((e) => e.clientMsgId === id).length, 1);
        assert.equal(log.find((e) => e.clientMsgId === id)?.seq, ack.seq);
        break;
      }
    } finally {
      alice.close();
      await hub.close();
    }
  });
});

describe("an open on the agent stream across a hub crash", { timeout: 60_000 }, () => {
  test("an open in flight when the hub dies fails as unavailable (not retried); opened again with its idempotency key, the session is made once", async () => {
    const hub = await Hubd.start();
    const lines: string[] = [];
    const alice = await hub.connect("alice", { log: (l) => lines.push(l) });
    try {
      await alice.open({ type: SessionType.Conversation, participants: autoAccepted("bob") }); // the stream is open
      await hub.pause(); // the hub reads nothing more: the next open stays in flight
      const o = { type: SessionType.Conversation, participants: autoAccepted("bob"), idempotencyKey: "in-flight", labels: { probe: "in-flight" } };
      const opening = alice.open(o);
      const failed = opening.then(
        () => undefined,
        (err: unknown) => err,
      );
      await new Promise((r) => setTimeout(r, 200));
      await hub.kill9();
      const err = await within(failed, 10_000, "the open in flight");
      assert.ok(err instanceof UnavailableError, `the open in flight: ${String(err)}`);
      assert.equal(err.op, "open");
      assert.match(err.detail, /agent stream/);
      assert.ok(!lines.some((l) => l.includes("retrying")), `an open is not retried: ${lines.join("\n")}`);
      await hub.run();
      // Opened again with the same key, on a new stream: one session.
      let s;
      for (let i = 0; ; i++) {
        try {
          s = await alice.open(o);
          break;
        } catch (e) {
          if (!(e instanceof UnavailableError) || i >= 50) {
            throw e;
          }
          await new Promise((r) => setTimeout(r, 100)); // the connection comes back
        }
      }
      assert.equal(s.meta?.creator, "alice");
      const again = await alice.open(o);
      assert.equal(again.id, s.id);
      assert.equal(again.existing, true);
      const listed = await alice.listSessions({ labels: { probe: "in-flight" } });
      assert.deepEqual(
        listed.sessions.map((x) => x.id),
        [s.id],
      );
    } finally {
      alice.close();
      await hub.close();
    }
  });
});

describe("a closed client", { timeout: 30_000 }, () => {
  for (const transport of [Transport.Stream, Transport.Unary]) {
    test(`leaves nothing that keeps node running: its streams end, and its serve resolves (${transport})`, async () => {
      const hub = await Hubd.start();
      try {
        const child = spawn(process.execPath, [join(pkgDir, "build", "test", "close-exits.js"), hub.addr, transport], {
          stdio: ["ignore", "pipe", "pipe"],
        });
        let out = "";
        child.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
        child.stderr.setEncoding("utf8").on("data", (c: string) => (out += c));
        const code = await within(
          new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c))),
          15_000,
          "the process to exit on its own after close",
        ).catch((err: unknown) => {
          child.kill("SIGKILL");
          throw err;
        });
        assert.equal(code, 0, out);
        assert.match(out, new RegExp(`served and closed over ${transport}`));
      } finally {
        await hub.close();
      }
    });
  }
});

describe("a hub ending the stream", { timeout: 30_000 }, () => {
  // A scripted hub: its agent stream sends ready, then a closing frame,
  // and ends with the frame's status once the agent has closed its side and
  // the test releases it. The real hub ends the stream as soon as the agent
  // closes its side, so a send in that window is a race there.
  test("after the closing frame a send fails UNAVAILABLE at once and the stream ends with the hub's status", async () => {
    let halfClosed!: () => void;
    const sawEnd = new Promise<void>((resolve) => (halfClosed = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const server = new grpc.Server();
    server.addService(HubService, {
      agentStream: (call: grpc.ServerDuplexStream<hubpb.AgentFrame, hubpb.HubFrame>) => {
        call.write(hubpb.HubFrame.fromPartial({ ready: { agent: "alice", maxInFlight: 8, opens: true } }));
        call.write(
          hubpb.HubFrame.fromPartial({ closing: { code: grpc.status.UNAVAILABLE, message: "the hub is closing", reason: Reason.DRAINING } }),
        );
        call.on("data", () => {});
        call.on("end", () => {
          halfClosed();
          void released.then(() => call.emit("error", { code: grpc.status.UNAVAILABLE, details: "the hub is closing" }));
        });
      },
    } as unknown as grpc.UntypedServiceImplementation);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    const alice = await Client.connect(`127.0.0.1:${port}`, { name: "alice" });
    try {
      const st = await alice.connectStream({ waitForReady: false, setupMs: 10_000 });
      assert.ok(st, "no stream");
      await within(sawEnd, 10_000, "the agent closing its side");
      const e = hubpb.Envelope.fromPartial({ type: "text", text: { text: "late" }, clientMsgId: "late-1" });
      await assert.rejects(
        within(st.send("0194d1a0-0000-7000-8000-0000000000aa", e), 5_000, "the send's answer"),
        (err: unknown) => err instanceof UnavailableError && /the hub is closing/.test(err.message),
      );
      release();
      await within(st.done, 10_000, "the stream's end");
      const err = st.err as { code?: number };
      assert.equal(err.code, grpc.status.UNAVAILABLE, String(st.err));
    } finally {
      alice.close();
      server.forceShutdown();
    }
  });

  test("a stopping hub's closing frame half-closes the stream, which ends DRAINING, not cancelled", async () => {
    const hub = await Hubd.start();
    const alice = await hub.connect("alice");
    try {
      const s = await alice.open({ type: SessionType.Conversation, participants: autoAccepted("bob") });
      await alice.sendText(s.id, "the stream is open");
      // The client's own stream, opened by that send.
      const st = (alice as unknown as { main?: { done: Promise<void>; err?: unknown } }).main;
      assert.ok(st, "the client has no stream after a send");
      await hub.stop();
      await within(st.done, 10_000, "the stream's end");
      const err = st.err as { reason?: string; code?: number };
      assert.equal(err.code, grpc.status.UNAVAILABLE, String(st.err));
      assert.equal(err.reason, "DRAINING", String(st.err));
    } finally {
      alice.close();
    }
  });
});
