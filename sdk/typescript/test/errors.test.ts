// Every stable reason the hub sends in normal use, constructed for real and
// read back as its error class; every Reason value has a class.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Metadata, status } from "@grpc/grpc-js";
import {
  autoAccepted,
  BadHandoffTargetError,
  BadLifecycleTransitionError,
  CanceledError,
  Client,
  DeadlineExceededError,
  DepthExceededError,
  DrainingError,
  errorClasses,
  errorInfoFromMetadata,
  googleRpc,
  HubError,
  hubError,
  HubOnlyEventError,
  ImpersonationError,
  InvalidGraphError,
  LimitReachedError,
  MalformedError,
  newPacket,
  NotParticipantError,
  OutOfTurnError,
  PermissionDeniedError,
  Reason,
  reasonOf,
  retryable,
  sequence,
  SessionClosedError,
  SessionNotOpenError,
  SessionType,
  SlowSubscriberError,
  TooLargeError,
  Transport,
  UnavailableError,
  UnknownSessionError,
  UnknownSessionTypeError,
  type Session,
  type TransportName,
} from "@hubd/sdk";

const { ErrorInfo, Status } = googleRpc;
import { Hubd, within } from "./hub.js";

type ErrorClass = abstract new (...args: never[]) => HubError;

/** checkErr asserts err is a HubError of cls with the reason, code and a message that says msg. */
function checkErr(err: unknown, cls: ErrorClass, reason: string, code: status, msg: string | RegExp): true {
  assert.ok(err instanceof cls, `got ${String(err)}, want a ${cls.name}`);
  assert.ok(err instanceof HubError);
  assert.equal(err.reason, reason);
  assert.equal(err.code, code, `code ${status[err.code]}, want ${status[code]}`);
  assert.equal(reasonOf(err), reason === "" ? undefined : reason);
  if (typeof msg === "string") {
    assert.ok(err.detail.includes(msg), `detail ${JSON.stringify(err.detail)} does not say ${JSON.stringify(msg)}`);
  } else {
    assert.match(err.detail, msg);
  }
  assert.ok(err.message.includes(err.detail) && err.message.includes(reason || status[code]), err.message);
  return true;
}

/** openPipeline opens alice → bob → carol with bob and carol auto-accepted. */
async function openPipeline(alice: Client): Promise<Session> {
  const s = await alice.open({ graph: sequence("alice", "bob", "carol"), participants: autoAccepted("bob", "carol") });
  assert.equal(s.state, "OPEN");
  return s;
}

/** Both transports of a send: a refusal is the same error over either. */
const transports: TransportName[] = [Transport.Stream, Transport.Unary];

describe("the hub's refusals", { timeout: 20_000 }, () => {
  let hub: Hubd;
  /** alice, bob, carol and mallory per transport. */
  const agents = new Map<TransportName, Client[]>();
  let alice: Client;
  before(async () => {
    hub = await Hubd.start();
    for (const transport of transports) {
      agents.set(transport, await Promise.all(["alice", "bob", "carol", "mallory"].map((n) => hub.connect(n, { transport }))));
    }
    alice = agents.get(Transport.Stream)![0];
  });
  after(async () => {
    for (const c of [...agents.values()].flat()) {
      c.close();
    }
    await hub.close();
  });

  for (const transport of transports) {
    test(`each reason is its class, with the hub's code, message and ErrorInfo (sends over ${transport})`, () => refusals(transport));
  }

  async function refusals(transport: TransportName): Promise<void> {
    const [alice, bob, carol, mallory] = agents.get(transport)!;
    const open = (await openPipeline(alice)).id;
    const closed = (await openPipeline(alice)).id;
    await alice.closeSession(closed);
    const pending = await alice.openWorkflow(sequence("alice", "bob"), ["bob"]);
    const acked = await alice.openWorkflow(sequence("alice", "bob"), ["bob"]);
    await bob.ackInvite(acked.id);

    const cases: [string, () => Promise<unknown>, ErrorClass, string, status, string | RegExp][] = [
      ["out of turn", () => carol.sendText(open, "me first"), OutOfTurnError, "OUT_OF_TURN", status.FAILED_PRECONDITION, 'workflow expects "alice" to speak, got "carol"'],
      ["session closed", () => alice.sendText(closed, "late"), SessionClosedError, "SESSION_CLOSED", status.FAILED_PRECONDITION, "explicit_close"],
      ["not open", () => alice.sendText(pending.id, "early"), SessionNotOpenError, "SESSION_NOT_OPEN", status.FAILED_PRECONDITION, "waiting for invite acks from bob"],
      ["not participant", () => mallory.sendText(open, "hi"), NotParticipantError, "NOT_PARTICIPANT", status.PERMISSION_DENIED, "mallory"],
      ["bad handoff target", () => alice.sendPacket(open, newPacket("over").handoff("", "zed")), BadHandoffTargetError, "BAD_HANDOFF_TARGET", status.INVALID_ARGUMENT, "valid targets: bob, carol"],
      ["invalid graph", () => alice.openWorkflow(sequence("alice", "zed"), ["bob"]), InvalidGraphError, "INVALID_GRAPH", status.INVALID_ARGUMENT, "zed"],
      ["unknown type", () => alice.open({ type: "nosuch@1" }), UnknownSessionTypeError, "UNKNOWN_SESSION_TYPE", status.INVALID_ARGUMENT, "nosuch"],
      ["ack twice", () => bob.ackInvite(acked.id), BadLifecycleTransitionError, "BAD_LIFECYCLE_TRANSITION", status.FAILED_PRECONDITION, "session_invite_ack"],
      ["hub only", () => alice.send(open, { type: "session_opened" }), HubOnlyEventError, "HUB_ONLY_EVENT", status.PERMISSION_DENIED, "session_opened"],
      ["malformed", () => alice.getSession("not-a-uuid"), MalformedError, "MALFORMED", status.INVALID_ARGUMENT, "session_id"],
      ["unknown session", () => alice.getSession("01900000-0000-7000-8000-000000000000"), UnknownSessionError, "UNKNOWN_SESSION", status.NOT_FOUND, ""],
      ["permission denied", () => bob.closeSession(open), PermissionDeniedError, "PERMISSION_DENIED", status.PERMISSION_DENIED, 'only the creator "alice"'],
      ["impersonation", () => alice.send(open, { from: "bob", type: "text", text: { text: "it is me, bob" } }), ImpersonationError, "IMPERSONATION", status.PERMISSION_DENIED, 'caller is "alice"'],
      ["send to an unknown session", () => alice.sendText("01900000-0000-7000-8000-000000000000", "anyone?"), UnknownSessionError, "UNKNOWN_SESSION", status.NOT_FOUND, ""],
      ["send to a malformed id", () => alice.sendText("not-a-uuid", "hi"), MalformedError, "MALFORMED", status.INVALID_ARGUMENT, "session_id"],
    ];
    for (const [name, call, cls, reason, code, msg] of cases) {
      await assert.rejects(
        call(),
        (err) => checkErr(err, cls, reason, code, msg) && errorInfoFromMetadata((err as HubError).metadata).reason === reason,
        name,
      );
    }
    for (const c of [alice, bob, carol, mallory]) {
      assert.equal(c.transport, transport, `${c.name} sent over ${c.transport}`);
    }
  }

  test("a child too deep is DEPTH_EXCEEDED", async () => {
    // The hub's default limit is depth 8: the ninth nested child is refused.
    let parent = (await openPipeline(alice)).id;
    for (let depth = 1; depth <= 8; depth++) {
      const child = await alice.open({ type: SessionType.Conversation, participants: autoAccepted("bob"), parent });
      assert.equal(child.meta?.depth, depth);
      parent = child.id;
    }
    await assert.rejects(alice.open({ type: SessionType.Conversation, participants: autoAccepted("bob"), parent }), (err) =>
      checkErr(err, DepthExceededError, "DEPTH_EXCEEDED", status.FAILED_PRECONDITION, "depth 9"),
    );
  });

  test("a cancelled call is CanceledError, a deadline DeadlineExceededError", async () => {
    const early = new AbortController();
    early.abort();
    await assert.rejects(alice.listSessions({ signal: early.signal }), (err) =>
      checkErr(err, CanceledError, "", status.CANCELLED, "cancelled"),
    );
    await assert.rejects(alice.sendText((await openPipeline(alice)).id, "never", { signal: early.signal }), (err) =>
      checkErr(err, CanceledError, "", status.CANCELLED, "cancelled"),
    );
    const midway = new AbortController();
    const call = alice.listSessions({ signal: midway.signal });
    midway.abort();
    await assert.rejects(call, (err) => checkErr(err, CanceledError, "", status.CANCELLED, /cancel/i));
    const s = await openPipeline(alice);
    const w = alice.watch(s.id, 0, { timeoutMs: 200 });
    await assert.rejects(
      (async () => {
        for await (const _ of w) {
          // the session stays quiet until the deadline
        }
      })(),
      // The client's timer or the hub's (its status then carries the reason): both expire at 200 ms, and on a
      // loaded machine either can be first.
      (err) =>
        checkErr(
          err,
          DeadlineExceededError,
          err instanceof HubError && err.reason !== "" ? "DEADLINE_EXCEEDED" : "",
          status.DEADLINE_EXCEEDED,
          /deadline/i,
        ),
    );
    // A stream closed by its reader ends without an error.
    const sub = alice.subscribe();
    sub.close();
    assert.equal(await sub.recv(), undefined);
  });
});

describe("refusals of a hub with small limits", { timeout: 20_000 }, () => {
  let hub: Hubd;
  before(async () => {
    hub = await Hubd.start({ args: ["--max-envelope-bytes", "40000", "--max-open-per-agent", "2", "--subscriber-buffer", "1"] });
  });
  after(() => hub.close());

  for (const transport of transports) {
    test(`an envelope over the limit is TOO_LARGE (sent over ${transport})`, async () => {
      const alice = await hub.connect("alice", { transport });
      try {
        const s = await openPipeline(alice);
        await assert.rejects(alice.sendText(s.id, "x".repeat(50_000)), (err) =>
          checkErr(err, TooLargeError, "TOO_LARGE", status.RESOURCE_EXHAUSTED, "40000"),
        );
        assert.equal(alice.transport, transport);
        await alice.closeSession(s.id); // the hub allows two open per agent
      } finally {
        alice.close();
      }
    });
  }

  for (const transport of transports) {
    test(`a request over gRPC's own cap on one message is TooLargeError naming the size and the limit (${transport})`, async () => {
      // gRPC refuses it before the hub sees it: RESOURCE_EXHAUSTED, no ErrorInfo.
      // (Up to twice the hub's request limit, the hub refuses it with TOO_LARGE.)
      const alice = await hub.connect("alice", { transport });
      const big = 9 << 20; // over twice the hub's default request limit of 4 MiB + 64 KiB
      const overCap = /^the message is (\d+) bytes, over gRPC's limit of (\d+) bytes per message \(.*larger than max/;
      try {
        const s = await openPipeline(alice);
        await assert.rejects(alice.sendEvent(s.id, "app.big", Buffer.alloc(5 << 20, "x")), (err) =>
          checkErr(err, TooLargeError, "TOO_LARGE", status.RESOURCE_EXHAUSTED, "(--max-request-bytes)"),
        );
        let limit = 0;
        await assert.rejects(alice.sendEvent(s.id, "app.big", Buffer.alloc(big, "x")), (err) => {
          checkErr(err, TooLargeError, "", status.RESOURCE_EXHAUSTED, overCap);
          const [, size, max] = overCap.exec((err as HubError).detail) ?? [];
          limit = Number(max);
          assert.ok(Number(size) > big && big > limit && limit >= 4 << 20, (err as HubError).detail);
          return true;
        });
        await assert.rejects(alice.open({ type: SessionType.Conversation, participants: autoAccepted("bob"), task: "x".repeat(big) }), (err) =>
          checkErr(err, TooLargeError, "", status.RESOURCE_EXHAUSTED, `over gRPC's limit of ${limit} bytes`),
        );
        await alice.sendEvent(s.id, "app.small"); // the client goes on
        await alice.closeSession(s.id);
      } finally {
        alice.close();
      }
    });
  }

  test("a request over the client's own cap on one message is TooLargeError naming the limit", async () => {
    const tiny = await hub.connect("alice", { transport: Transport.Unary, channelOptions: { "grpc.max_send_message_length": 1024 } });
    try {
      await assert.rejects(tiny.listSessions({ labels: { big: "x".repeat(2048) } }), (err) =>
        checkErr(err, TooLargeError, "", status.RESOURCE_EXHAUSTED, /^the message is over gRPC's limit of 1024 bytes per message/),
      );
    } finally {
      tiny.close();
    }
  });

  test("more open sessions than the agent may have is LIMIT_REACHED", async () => {
    const opener = await hub.connect("opener");
    try {
      for (let i = 0; i < 2; i++) {
        await opener.open({ graph: sequence("opener", "bob"), participants: autoAccepted("bob") });
      }
      await assert.rejects(opener.open({ graph: sequence("opener", "bob"), participants: autoAccepted("bob") }), (err) =>
        checkErr(err, LimitReachedError, "LIMIT_REACHED", status.RESOURCE_EXHAUSTED, "the limit is 2"),
      );
    } finally {
      opener.close();
    }
  });

  test("a subscriber that stops reading is cut off: SLOW_SUBSCRIBER, after what it was sent", async () => {
    const [carl, dora] = await Promise.all([hub.connect("carl"), hub.connect("dora")]);
    try {
      const s = await carl.open({ type: SessionType.Conversation, participants: autoAccepted("dora") });
      const sub = dora.subscribe();
      const first = await sub.recv(); // the stream is up; now dora stops reading
      assert.equal(first?.envelope?.sessionId, s.id);
      const big = Buffer.alloc(32 << 10, "x");
      for (let i = 0; i < 40; i++) {
        await carl.sendEvent(s.id, "note", big);
      }
      await within(hub.waitFor("slow subscriber cut off"), 10_000, "the hub cutting dora off");
      let seen = 1;
      await assert.rejects(
        (async () => {
          for await (const _ of sub) {
            seen++;
          }
        })(),
        (err) => {
          assert.ok(retryable(err));
          return checkErr(err, SlowSubscriberError, "SLOW_SUBSCRIBER", status.RESOURCE_EXHAUSTED, "buffer");
        },
      );
      assert.ok(seen > 1 && seen < 40, `dora read ${seen} deliveries before the cut`);
    } finally {
      carl.close();
      dora.close();
    }
  });
});

describe("a hub that stops", { timeout: 20_000 }, () => {
  for (const transport of transports) {
    test(`ends streams with DRAINING, and a send to it then is UNAVAILABLE (over ${transport})`, async () => {
      const hub = await Hubd.start();
      // A short retry budget: the send gives up within a second, not ten.
      const alice = await hub.connect("alice", { transport, retryBudgetMs: 500 });
      try {
        const s = await openPipeline(alice);
        await alice.setContext(s.id, { up: true }); // over the stream, open until the hub stops
        const w = alice.watch(s.id);
        assert.ok(await w.recv()); // the stream is up
        await hub.stop();
        await assert.rejects(
          (async () => {
            for await (const _ of w) {
              // the rest of the session's log
            }
          })(),
          (err) => {
            assert.ok(err instanceof UnavailableError && retryable(err));
            return checkErr(err, DrainingError, "DRAINING", status.UNAVAILABLE, "");
          },
        );
        await assert.rejects(alice.sendText(s.id, "anyone?"), (err) => {
          assert.ok(err instanceof UnavailableError, String(err));
          assert.equal(err.reason, "");
          assert.equal(err.code, status.UNAVAILABLE);
          assert.equal(reasonOf(err), undefined);
          return true;
        });
      } finally {
        alice.close();
        await hub.close();
      }
    });
  }
});

describe("reading the reason", { timeout: 20_000 }, () => {
  /** A gRPC error as @grpc/grpc-js reports one, with an ErrorInfo of reason in its trailer. */
  function serviceError(code: status, reason: string, domain = "hubd") {
    const md = new Metadata();
    const info = ErrorInfo.encode({ reason, domain, metadata: {} }).finish();
    const st = Status.encode({
      code,
      message: "the hub's words",
      details: [
        { typeUrl: "type.googleapis.com/google.rpc.DebugInfo", value: Buffer.from([10, 1, 120]) },
        { typeUrl: "type.googleapis.com/google.rpc.ErrorInfo", value: Buffer.from(info) },
      ],
    }).finish();
    md.set("grpc-status-details-bin", Buffer.from(st));
    return Object.assign(new Error(`${code} ${status[code]}: the hub's words`), { code, details: "the hub's words", metadata: md });
  }

  test("every Reason value has its class, read from the grpc-status-details-bin trailer", () => {
    const names = Object.keys(Reason).filter((k) => Number.isNaN(Number(k)) && k !== "REASON_UNSPECIFIED" && k !== "UNRECOGNIZED");
    assert.deepEqual(names.sort(), Object.keys(errorClasses).sort());
    for (const name of names) {
      const cls = errorClasses[name as keyof typeof errorClasses];
      const err = hubError("send", serviceError(status.FAILED_PRECONDITION, name));
      assert.ok(err instanceof cls, name);
      assert.equal((err as HubError).reason, name);
      assert.equal((err as HubError).name, cls.name);
      assert.equal((err as HubError).detail, "the hub's words");
    }
    const seen = new Set(Object.values(errorClasses));
    assert.equal(seen.size, names.length, "one class per reason");
  });

  test("an unknown reason, another domain, or none keeps the code", () => {
    const future = hubError("send", serviceError(status.FAILED_PRECONDITION, "SOMETHING_NEW")) as HubError;
    assert.equal(future.constructor, HubError);
    assert.equal(future.reason, "SOMETHING_NEW");
    const other = hubError("send", serviceError(status.UNAVAILABLE, "OUT_OF_TURN", "example.com")) as HubError;
    assert.ok(other instanceof UnavailableError && !(other instanceof OutOfTurnError));
    assert.equal(other.reason, "");
    const plain = hubError("open", Object.assign(new Error("14 UNAVAILABLE"), { code: status.UNAVAILABLE, details: "No connection established", metadata: new Metadata() }));
    assert.ok(plain instanceof UnavailableError && retryable(plain));
    const local = new TypeError("not a gRPC error");
    assert.equal(hubError("open", local), local);
  });

  test("gRPC's texts of a message over its size cap name the size and the limit first", () => {
    const cases: [string, string][] = [
      ["grpc: received message larger than max (5242995 vs. 4194304)", "the message is 5242995 bytes, over gRPC's limit of 4194304 bytes per message"],
      ["Received message larger than max (300 vs 200)", "the message is 300 bytes, over gRPC's limit of 200 bytes per message"],
      ["Attempted to send message with a size larger than 16", "the message is over gRPC's limit of 16 bytes per message"],
    ];
    for (const [text, want] of cases) {
      const err = hubError("send", Object.assign(new Error(text), { code: status.RESOURCE_EXHAUSTED, details: text, metadata: new Metadata() }));
      assert.ok(err instanceof TooLargeError && err.reason === "", String(err));
      assert.equal(err.detail, `${want} (${text})`);
    }
    // The hub's own refusals keep their words.
    const limit = hubError("open", serviceError(status.RESOURCE_EXHAUSTED, "LIMIT_REACHED")) as HubError;
    assert.ok(limit instanceof LimitReachedError && limit.detail === "the hub's words");
  });
});
