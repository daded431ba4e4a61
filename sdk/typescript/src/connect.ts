// The agent's stream: agentsdk/connect.go.
//
// One bidirectional stream per agent connection carries its sends and
// opens, each with a ref the hub echoes in its ack (or in the error a Send
// or Open call would have returned), and, after one subscribe frame, its
// deliveries (with the turn view when asked).

import * as grpc from "@grpc/grpc-js";

import { CanceledError, DeadlineExceededError, hubError, streamError, UnavailableError } from "./errors.js";
import {
  AgentFrame,
  HubFrame,
  type Delivery,
  type Envelope,
  type OpenRequest,
  type OpenResponse,
  type SendResponse,
  type StreamAck,
  type SubscribeRequest,
} from "./gen/hub.js";
import { HubService, type HubClient } from "./gen/hub_service.js";
import { currentTrace, type TraceOptions } from "./trace.js";

/** The transports of ClientOptions.transport. */
export const Transport = {
  /**
   * Sends over the agent's stream (one bidirectional stream per
   * Client carries its sends and opens and their acks; serve's deliveries
   * and replies share a stream of its own), falling back to unary calls
   * against a hub without it (and to Open calls against a hub whose stream
   * takes no opens). The default.
   */
  Stream: "stream",
  /** One Send call per envelope and an Open call per open; serve reads a Subscribe stream. */
  Unary: "unary",
} as const;

/** A transport of ClientOptions.transport. */
export type TransportName = (typeof Transport)[keyof typeof Transport];

/**
 * The largest envelope (encoded) sent on an agent stream: a larger one is
 * sent with a Send call, which fails alone (TooLargeError) where a frame
 * over the hub's read limit would end the whole stream. The same limit
 * holds for an open's request (a larger one is an Open call).
 */
export const MaxStreamEnvelope = 1 << 20;

/** @internal The hub has no agent stream (UNIMPLEMENTED: an older hub); the caller falls back to unary calls. */
export class NoStreamError extends Error {
  constructor() {
    super("hubd: the hub has no agent stream");
  }
}

/** @internal How a stream is opened. */
export interface ConnectOptions {
  /** When set, subscribes the stream: its deliveries go to onDelivery (fields left out take their defaults). */
  subscribe?: Partial<SubscribeRequest>;
  /**
   * Called with each delivery, in order, on the stream's reader; while a
   * promise it returns is pending nothing more is read (acks neither). One
   * that throws or rejects is reported to onError and the stream reads on.
   */
  onDelivery?: (d: Delivery) => void | Promise<void>;
  /** Told what onDelivery threw or rejected with, and on which delivery. */
  onError?: (err: unknown, d: Delivery) => void;
  /** Waits for the hub while it is down, instead of failing at once. */
  waitForReady: boolean;
  /** Gives up opening after this long (DeadlineExceededError); unset: no limit. */
  setupMs?: number;
  /** Aborts the opening, and then ends the stream. */
  signal?: AbortSignal;
}

/**
 * The per-call options of a send or open; its trace context (the frame's
 * traceparent and tracestate) is traceparent when given, else the caller's
 * (currentTrace).
 */
interface SendCallOptions extends TraceOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

interface Waiter {
  /** What waits: "send" or "open" (the op of its errors). */
  op: string;
  resolve: (a: StreamAck) => void;
  reject: (err: unknown) => void;
}

/**
 * @internal An agent's stream. Sends and opens in flight are
 * answered in any order, each by its ref (one series for both). When the
 * stream breaks, every send or open in flight rejects with an
 * UnavailableError (its outcome unknown: send it again with the same
 * client message id, or open again with the same idempotency key, which
 * the hub deduplicates) and done resolves.
 */
export class AgentStream {
  /** The agent the hub knows the stream as. */
  agent = "";
  /** The hub takes opens on the stream (its ready frame said so): a hub without it ends the stream on one. */
  opens = false;
  private next = 0;
  private readonly waiting = new Map<number, Waiter>();
  /** Why the stream ended (a HubError); undefined while it runs. */
  err?: unknown;
  private status?: grpc.StatusObject;
  /** The hub's closing frame: why it ends the stream. */
  private closing?: unknown;
  private endedBy?: () => void;
  /** Resolves once the stream has ended (err says why). */
  readonly done: Promise<void>;
  private readonly onAbort = () => this.close();

  private constructor(
    private readonly call: grpc.ClientDuplexStream<AgentFrame, HubFrame>,
    private readonly onDelivery: ConnectOptions["onDelivery"],
    private readonly onError: ConnectOptions["onError"],
    private readonly signal?: AbortSignal,
  ) {
    this.done = new Promise((resolve) => (this.endedBy = resolve));
  }

  /**
   * Opens a stream on client and waits for the hub's ready frame. Rejects
   * with NoStreamError against a hub without AgentStream, else with the
   * HubError of the failed opening.
   */
  static open(client: HubClient, opts: ConnectOptions): Promise<AgentStream> {
    if (opts.signal?.aborted) {
      return Promise.reject(new CanceledError("connect", grpc.status.CANCELLED, "", "the stream was cancelled before it opened"));
    }
    const m = HubService.agentStream;
    const call = client.makeBidiStreamRequest<AgentFrame, HubFrame>(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      new grpc.Metadata({ waitForReady: opts.waitForReady }),
      {},
    );
    const st = new AgentStream(call, opts.onDelivery, opts.onError, opts.signal);
    return new Promise<AgentStream>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let settled = false;
      const setup = (err?: unknown) => {
        if (settled) {
          return;
        }
        settled = true;
        clearTimeout(timer);
        opts.signal?.removeEventListener("abort", onAbort);
        if (err === undefined) {
          opts.signal?.addEventListener("abort", st.onAbort, { once: true });
          resolve(st);
          return;
        }
        call.cancel();
        reject(err);
      };
      const onAbort = () => setup(new CanceledError("connect", grpc.status.CANCELLED, "", "the stream was cancelled before it opened"));
      opts.signal?.addEventListener("abort", onAbort, { once: true });
      if (opts.setupMs !== undefined) {
        timer = setTimeout(
          () => setup(new DeadlineExceededError("connect", grpc.status.DEADLINE_EXCEEDED, "", `the hub did not open the stream within ${opts.setupMs} ms`)),
          opts.setupMs,
        );
      }
      // The call's status comes with its end ('error' first when it
      // failed); the stream ends on 'end', once every frame it brought
      // has been read (acks included), as Go's reader ends on Recv's error.
      const failed = (s: grpc.StatusObject) => {
        st.status ??= s;
        if (s.code === grpc.status.UNIMPLEMENTED) {
          setup(new NoStreamError());
        } else if (s.code !== grpc.status.OK) {
          setup(hubError("connect", Object.assign(new Error(s.details), s)));
        }
      };
      call.on("error", (err: grpc.ServiceError) => failed(err));
      call.on("status", (s: grpc.StatusObject) => failed(s));
      call.on("end", () => {
        setup(new UnavailableError("connect", grpc.status.UNAVAILABLE, "", "the hub ended the stream before it was ready"));
        st.fail();
      });
      call.on("data", (f: HubFrame) => {
        if (!settled) {
          st.agent = f.ready?.agent ?? "";
          st.opens = f.ready?.opens ?? false;
          if (opts.subscribe) {
            call.write(AgentFrame.fromPartial({ subscribe: opts.subscribe }));
          }
          setup();
          return;
        }
        st.frame(f);
      });
    });
  }

  /** Acts on one frame of the hub. */
  private frame(f: HubFrame): void {
    if (f.closing) {
      // The hub ends the stream: close this side; its status follows.
      this.closing = streamError("connect", f.closing);
      this.call.end();
      return;
    }
    if (f.ack) {
      const w = this.waiting.get(f.ack.ref);
      this.waiting.delete(f.ack.ref);
      w?.resolve(f.ack);
      return;
    }
    if (f.delivery) {
      this.deliver(f.delivery);
    }
  }

  /**
   * Hands a delivery to onDelivery. What it throws or rejects with goes to
   * onError, never further: the stream reads on, its sends are answered,
   * and the client lives on (a throw here would leave the stream's event
   * handler, uncaught).
   */
  private deliver(d: Delivery): void {
    if (!this.onDelivery) {
      return;
    }
    let r: void | Promise<void>;
    try {
      r = this.onDelivery(d);
    } catch (err) {
      this.failed(err, d);
      return;
    }
    if (r !== undefined && r !== null && typeof r.then === "function") {
      // The observer holds the reader back (gRPC's flow control then
      // holds the hub's sends back, as Subscribe does).
      this.call.pause();
      r.then(
        () => this.call.resume(),
        (err: unknown) => {
          this.failed(err, d);
          this.call.resume();
        },
      );
    }
  }

  /** Reports a failed delivery to onError, which must not fail in turn. */
  private failed(err: unknown, d: Delivery): void {
    try {
      this.onError?.(err, d);
    } catch {
      // A reporter that fails too: nothing more to tell, the stream goes on.
    }
  }

  /** Ends the stream with why (from the call's status when unset): sends in flight fail. */
  private fail(why?: unknown): void {
    if (this.err !== undefined) {
      return;
    }
    const s = this.status;
    if (why === undefined && this.closing !== undefined && s?.code === grpc.status.CANCELLED) {
      why = this.closing; // the hub cancelled a stream not closed in time
    }
    this.err =
      why ??
      (s && s.code !== grpc.status.OK
        ? hubError("connect", Object.assign(new Error(s.details), s))
        : new UnavailableError("connect", grpc.status.UNAVAILABLE, "", "the hub ended the stream"));
    this.signal?.removeEventListener("abort", this.onAbort);
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const w of waiting) {
      w.reject(this.broken(w.op));
    }
    this.endedBy?.();
  }

  /** Whether the stream has ended. */
  get ended(): boolean {
    return this.err !== undefined;
  }

  /** Ends the stream; sends and opens in flight fail (UnavailableError). */
  close(): void {
    if (this.err === undefined) {
      this.fail(new CanceledError("connect", grpc.status.CANCELLED, "", "the stream was closed"));
    }
    this.call.cancel();
  }

  /**
   * Sends e in sessionId once and resolves with the hub's acknowledgement;
   * rejects with the HubError a Send call would have rejected with, or with
   * an UnavailableError when the stream breaks before the answer (send it
   * again with the same client message id). e must not change until then.
   */
  async send(sessionId: string, e: Envelope, opts: SendCallOptions = {}): Promise<SendResponse> {
    const tc = currentTrace({ traceparent: e.traceparent || opts.traceparent, tracestate: opts.tracestate });
    const a = await this.roundTrip(
      "send",
      (ref) => ({ send: { ref, sessionId, envelope: e, traceparent: tc?.traceparent ?? "", tracestate: tc?.tracestate ?? "" } }),
      opts,
    );
    if (a.error) {
      throw streamError("send", a.error);
    }
    return a.response as SendResponse;
  }

  /**
   * Opens the session of req once (its creator the stream's agent) and
   * resolves with the hub's OpenResponse; rejects with the HubError an Open
   * call would have rejected with, or with an UnavailableError when the
   * stream breaks before the answer (open again with the same idempotency
   * key). Only for a stream whose hub takes opens (this.opens): a hub
   * without them ends the whole stream on one.
   */
  async open(req: OpenRequest, opts: SendCallOptions = {}): Promise<OpenResponse> {
    const tc = currentTrace(opts);
    const a = await this.roundTrip(
      "open",
      (ref) => ({ open: { ref, request: req, traceparent: tc?.traceparent ?? "", tracestate: tc?.tracestate ?? "" } }),
      opts,
    );
    if (a.error) {
      throw streamError("open", a.error);
    }
    return a.opened ?? { session: undefined, existing: false };
  }

  /**
   * Writes the frame made with a new ref and resolves with that ref's ack
   * (errors included); rejects with an UnavailableError (for op) when the
   * stream breaks first, a CanceledError or DeadlineExceededError when
   * opts abort it or its time runs out.
   */
  private roundTrip(op: string, frame: (ref: number) => AgentFrame, opts: SendCallOptions): Promise<StreamAck> {
    if (opts.signal?.aborted) {
      return Promise.reject(new CanceledError(op, grpc.status.CANCELLED, "", "the call was cancelled before it started"));
    }
    // After the hub's closing frame this side is closed: a write would end
    // the call with "write after end" in place of the hub's status.
    if (this.err !== undefined || this.closing !== undefined) {
      return Promise.reject(this.broken(op));
    }
    const ref = ++this.next;
    return new Promise<StreamAck>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const settle = () => {
        clearTimeout(timer);
        opts.signal?.removeEventListener("abort", onAbort);
      };
      const give = (err: unknown) => {
        this.waiting.delete(ref);
        settle();
        reject(err);
      };
      const onAbort = () => give(new CanceledError(op, grpc.status.CANCELLED, "", "the call was cancelled"));
      this.waiting.set(ref, {
        op,
        resolve: (a) => {
          settle();
          resolve(a);
        },
        reject: (err) => {
          settle();
          reject(err);
        },
      });
      opts.signal?.addEventListener("abort", onAbort, { once: true });
      if (opts.timeoutMs !== undefined) {
        timer = setTimeout(
          () => give(new DeadlineExceededError(op, grpc.status.DEADLINE_EXCEEDED, "", `deadline exceeded after ${opts.timeoutMs} ms`)),
          opts.timeoutMs,
        );
      }
      this.call.write(frame(ref));
    });
  }

  /**
   * The error of a send or open (op) the stream could not answer:
   * unavailable, so that it is tried again (with its client message id or
   * idempotency key).
   */
  private broken(op: string): UnavailableError {
    const why =
      this.err instanceof Error
        ? this.err.message
        : this.closing instanceof Error
          ? `the hub is ending the stream: ${this.closing.message}`
          : "the stream broke";
    return new UnavailableError(op, grpc.status.UNAVAILABLE, "", `agent stream: ${why}`);
  }
}
