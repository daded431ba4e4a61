// The W3C trace context against the real hub: what the SDK sends carries
// the caller's trace (on the agent stream's frames and as the metadata of
// unary calls: a call's own traceparent, OpenTelemetry's active span,
// withTraceContext), and a served turn continues the trace of its trigger,
// so the envelopes the hub logs (read back with readLog) carry its trace id.

import assert from "node:assert/strict";
import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";

import { context, ROOT_CONTEXT, trace, type Context, type ContextManager } from "@opentelemetry/api";
import { autoAccepted, sequence, SessionType, Transport, withTraceContext, type Client, type Envelope, type Handler } from "@hubd/sdk";

import { Hubd } from "./hub.js";

/** A traceparent of a new trace. */
function newTraceparent(): string {
  return `00-${randomBytes(16).toString("hex")}-${randomBytes(8).toString("hex")}-01`;
}

function traceId(traceparent: string): string {
  const parts = traceparent.split("-");
  return parts.length === 4 ? parts[1] : "";
}

/** The trace id of each envelope of a session's log, as "type trace-id", in order. */
async function traces(c: Client, sessionId: string): Promise<string[]> {
  return (await c.readLog(sessionId)).map((e: Envelope) => `${e.type} ${traceId(e.traceparent)}`);
}

/** Follows a session to its end. */
async function untilEnd(c: Client, sessionId: string): Promise<void> {
  for await (const e of c.follow(sessionId, 1, { timeoutMs: 20_000 })) {
    void e;
  }
}

/**
 * The context manager an application registers with OpenTelemetry's SDK
 * (the API alone has none: nothing would be active), on AsyncLocalStorage
 * as @opentelemetry/context-async-hooks does.
 */
class StorageContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.storage.run(ctx, () => fn.call(thisArg, ...args));
  }
  bind<T>(_ctx: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.storage.disable();
    return this;
  }
}

describe("trace context", { timeout: 60_000 }, () => {
  let hub: Hubd;
  before(async () => {
    hub = await Hubd.start();
  });
  after(() => hub.close());

  for (const transport of [Transport.Stream, Transport.Unary]) {
    test(`${transport}: a served reply, and what its handler sends, continue the trace of the turn's trigger`, async () => {
      const alice = await hub.connect("alice");
      const bob = await hub.connect("bob", { transport });
      const ac = new AbortController();
      const handler: Handler = async (turn) => {
        await turn.client.sendEvent(turn.sessionId, "app.note", "thinking");
        return "done";
      };
      const run = bob.serve(handler, { signal: ac.signal, view: null });
      try {
        const s = await alice.open({ graph: sequence("alice", "bob"), participants: autoAccepted("bob") });
        const tp = newTraceparent();
        await alice.sendText(s.id, "work", { traceparent: tp });
        await untilEnd(alice, s.id);
        const got = (await traces(alice, s.id)).filter((t) => /^(text|app\.note|session_closed) /.test(t));
        const id = traceId(tp);
        assert.deepEqual(got, [`text ${id}`, `app.note ${id}`, `text ${id}`, `session_closed ${id}`]);
      } finally {
        ac.abort();
        await run;
        alice.close();
        bob.close();
      }
    });

    test(`${transport}: calls carry the trace given with withTraceContext or their own traceparent; nothing leaks outside`, async () => {
      const alice = await hub.connect("alice", { transport });
      try {
        const tp = newTraceparent();
        const own = newTraceparent();
        const closer = newTraceparent();
        const s = await withTraceContext({ traceparent: tp, tracestate: "vendor=opaque" }, async () => {
          const opened = await alice.open({ graph: sequence("alice", "bob", "alice"), participants: autoAccepted("bob") });
          await alice.sendText(opened.id, "first");
          await alice.setContext(opened.id, { stage: "draft" });
          await alice.sendEvent(opened.id, "app.own", "", { traceparent: own });
          return opened;
        });
        await alice.sendEvent(s.id, "app.after");
        await alice.closeSession(s.id, "no_longer_needed", { traceparent: closer });
        const got = await traces(alice, s.id);
        const id = traceId(tp);
        assert.deepEqual(
          got.filter((t) => /^(session_invite|session_opened|text|context_set|app\.own|session_closed) /.test(t)),
          [`session_invite ${id}`, `session_opened ${id}`, `text ${id}`, `context_set ${id}`, `app.own ${traceId(own)}`, `session_closed ${traceId(closer)}`],
          got.join("\n"),
        );
        assert.ok(!got.includes(`app.after ${id}`), got.join("\n"));
      } finally {
        alice.close();
      }
    });
  }

  test("withTraceContext refuses what is not a W3C traceparent", () => {
    for (const bad of ["00-abc-def-01", `00-${"0".repeat(32)}-00f067aa0ba902b7-01`, `ff-${"1".repeat(32)}-${"2".repeat(16)}-01`]) {
      assert.throws(() => withTraceContext({ traceparent: bad }, () => 1), TypeError, bad);
    }
    assert.equal(withTraceContext({ traceparent: newTraceparent() }, () => 42), 42);
    assert.equal(withTraceContext({ traceparent: "" }, () => 7), 7); // nothing to carry
  });
});

describe("trace context from OpenTelemetry", { timeout: 60_000 }, () => {
  let hub: Hubd;
  before(async () => {
    context.setGlobalContextManager(new StorageContextManager());
    hub = await Hubd.start();
  });
  after(async () => {
    context.disable();
    await hub.close();
  });

  test("the active span is carried; in a served turn the trigger's trace is active, and a span the handler makes wins", async () => {
    const alice = await hub.connect("alice");
    const bob = await hub.connect("bob");
    const ac = new AbortController();
    const inHandler: string[] = [];
    const own = randomBytes(16).toString("hex");
    const handler: Handler = async (turn) => {
      inHandler.push(trace.getSpanContext(context.active())?.traceId ?? "none");
      const span = trace.wrapSpanContext({ traceId: own, spanId: randomBytes(8).toString("hex"), traceFlags: 1 });
      await context.with(trace.setSpan(context.active(), span), () => turn.client.sendEvent(turn.sessionId, "app.own"));
      return "done";
    };
    const run = bob.serve(handler, { signal: ac.signal, view: null });
    try {
      const s = await alice.open({ graph: sequence("alice", "bob"), participants: autoAccepted("bob") });
      const active = randomBytes(16).toString("hex");
      const span = trace.wrapSpanContext({ traceId: active, spanId: randomBytes(8).toString("hex"), traceFlags: 1 });
      await context.with(trace.setSpan(context.active(), span), () => alice.sendText(s.id, "work"));
      await untilEnd(alice, s.id);
      assert.deepEqual(inHandler, [active]);
      const got = (await traces(alice, s.id)).filter((t) => /^(text|app\.own) /.test(t));
      assert.deepEqual(got, [`text ${active}`, `app.own ${own}`, `text ${active}`]);
    } finally {
      ac.abort();
      await run;
      alice.close();
      bob.close();
    }
  });

  test("withTraceContext makes its trace the active span context (a remote parent)", async () => {
    const tp = newTraceparent();
    const seen = withTraceContext({ traceparent: tp }, () => trace.getSpanContext(context.active()));
    assert.equal(seen?.traceId, traceId(tp));
    assert.equal(seen?.isRemote, true);
    const alice = await hub.connect("alice");
    try {
      const s = await alice.open({ type: SessionType.Conversation, participants: autoAccepted("bob") });
      await withTraceContext({ traceparent: tp }, () => alice.sendText(s.id, "traced"));
      assert.ok((await traces(alice, s.id)).includes(`text ${traceId(tp)}`));
    } finally {
      alice.close();
    }
  });
});
