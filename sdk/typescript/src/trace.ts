// The W3C trace context the SDK carries to the hub: agentsdk/trace.go.
//
// Every frame of the agent's stream (StreamSend, StreamOpen) and
// every unary call (as the "traceparent" and "tracestate" metadata) carries
// the caller's trace context: the call's own CallOptions.traceparent, else
// OpenTelemetry's active span when @opentelemetry/api is installed (an
// optional peer: the SDK does not depend on it) and a span is active, else
// the one given with withTraceContext. serve runs each turn in the trace of
// the envelope that began it, so the reply and every call the handler makes
// continue that trace.

import { AsyncLocalStorage } from "node:async_hooks";
import { createRequire } from "node:module";

/** A W3C trace context: a traceparent ("00-<trace id>-<span id>-<flags>") and its tracestate. */
export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

/** The per-call trace options (CallOptions carries them). */
export interface TraceOptions {
  traceparent?: string;
  tracestate?: string;
}

const traceparentPattern = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** Whether s is a W3C traceparent that names a trace (ids not all zero, version not ff). */
export function validTraceparent(s: string): boolean {
  const m = traceparentPattern.exec(s);
  return m !== null && m[1] !== "ff" && !/^0+$/.test(m[2]) && !/^0+$/.test(m[3]);
}

/** The trace context given with withTraceContext (or by serve for a turn), per async context. */
const given = new AsyncLocalStorage<TraceContext>();

/** The parts of @opentelemetry/api the SDK uses. */
interface OtelSpanContext {
  traceId: string;
  spanId: string;
  traceFlags: number;
  isRemote?: boolean;
  traceState?: { serialize(): string };
}
interface OtelApi {
  context: { active(): unknown; with<R>(ctx: unknown, fn: () => R): R };
  trace: {
    getSpanContext(ctx: unknown): OtelSpanContext | undefined;
    isSpanContextValid(sc: OtelSpanContext): boolean;
    setSpanContext(ctx: unknown, sc: OtelSpanContext): unknown;
  };
  createTraceState?: (raw?: string) => { serialize(): string };
}

/** @opentelemetry/api when the application has it, loaded once; null when it has not. */
let otelApi: OtelApi | null | undefined;

function otel(): OtelApi | null {
  if (otelApi === undefined) {
    try {
      otelApi = createRequire(import.meta.url)("@opentelemetry/api") as OtelApi;
    } catch {
      otelApi = null;
    }
  }
  return otelApi;
}

/** The active OpenTelemetry span's trace context, when there is a valid one. */
function otelActive(): TraceContext | undefined {
  const api = otel();
  const sc = api?.trace.getSpanContext(api.context.active());
  if (!api || !sc || !api.trace.isSpanContextValid(sc)) {
    return undefined;
  }
  const flags = (sc.traceFlags & 0xff).toString(16).padStart(2, "0");
  return { traceparent: `00-${sc.traceId}-${sc.spanId}-${flags}`, tracestate: sc.traceState?.serialize() || undefined };
}

/**
 * The trace context a call made now carries: its own (opts.traceparent),
 * else OpenTelemetry's active span, else the one given with
 * withTraceContext; undefined when there is none.
 */
export function currentTrace(opts: TraceOptions = {}): TraceContext | undefined {
  if (opts.traceparent) {
    return { traceparent: opts.traceparent, tracestate: opts.tracestate };
  }
  return otelActive() ?? given.getStore();
}

/**
 * Runs fn with tc as the trace context of every call and send it makes
 * (in its async context: what it awaits and the promises it starts): the
 * hub's spans continue it and the envelopes it writes carry it. With
 * @opentelemetry/api and a context manager registered, tc is also the
 * active span context there (a remote parent), so spans started inside
 * are its children. Returns what fn returns.
 *
 *     await withTraceContext({ traceparent }, () => client.sendText(id, "findings"));
 *
 * An empty traceparent leaves the context as it is. Throws a TypeError
 * when tc.traceparent is not a W3C traceparent.
 */
export function withTraceContext<R>(tc: TraceContext, fn: () => R): R {
  if (tc.traceparent === "") {
    return fn();
  }
  if (!validTraceparent(tc.traceparent)) {
    throw new TypeError(
      `hubd: traceparent ${JSON.stringify(tc.traceparent)}: want 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`,
    );
  }
  const run = () => given.run({ traceparent: tc.traceparent, tracestate: tc.tracestate }, fn);
  const api = otel();
  if (!api) {
    return run();
  }
  const [, traceId, spanId, flags] = tc.traceparent.split("-");
  const sc: OtelSpanContext = { traceId, spanId, traceFlags: parseInt(flags, 16), isRemote: true };
  if (tc.tracestate && api.createTraceState) {
    sc.traceState = api.createTraceState(tc.tracestate);
  }
  return api.context.with(api.trace.setSpanContext(api.context.active(), sc), run);
}

/** @internal Runs fn in the trace of a traceparent the hub wrote (a turn's trigger's); as it is when there is none. */
export function continueTrace<R>(traceparent: string, fn: () => R): R {
  return validTraceparent(traceparent) ? withTraceContext({ traceparent }, fn) : fn();
}
