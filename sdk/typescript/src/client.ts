// The client: agentsdk/client.go, session.go, send.go, read.go, stream.go.

import { randomBytes } from "node:crypto";
import { isIP } from "node:net";

import * as grpc from "@grpc/grpc-js";

import { backoffDelay, sleep } from "./backoff.js";
import { DelegateMode, Task, type DelegateOptions } from "./calls.js";
import { AgentStream, MaxStreamEnvelope, NoStreamError, Transport, type ConnectOptions, type TransportName } from "./connect.js";
import { CanceledError, DeadlineExceededError, hubError, LimitReachedError, MalformedError, retryable, UnavailableError } from "./errors.js";
import { contextUpdateProto, type ContextUpdate, ends, EventType, jsonValues, Packet } from "./envelope.js";
import {
  AnswerRequest,
  CloseRequest,
  DelegateRequest,
  Delivery,
  Delta,
  type DeltaResponse,
  Envelope,
  Expectation,
  GetSessionRequest,
  GetTreeRequest,
  GetViewRequest,
  InviteRequest,
  ListQuestionsRequest,
  ListSessionsRequest,
  OpenRequest,
  Participant,
  PendingTurnsRequest,
  ReadLogRequest,
  PurgeRequest,
  EraseRequest,
  ImportRequest,
  ReplayRequest,
  SendRequest,
  SendResponse,
  SessionInfo,
  SubscribeRequest,
  View,
  WatchRequest,
  type Answer,
  type OpenResponse,
  type PurgeResponse,
  type ErasedSession,
  type ImportedSession,
  type PendingQuestion,
  type ReplayResponse,
  type TreeNode,
} from "./gen/hub.js";
import { HubClient } from "./gen/hub_service.js";
import { forkRequest, steerRequest, type ForkEdits, type SteerAction } from "./ops.js";
import { Graph } from "./graph.js";
import { describe, guardLog } from "./report.js";
import { currentTrace } from "./trace.js";
import { serve, type Handler, type ServeOptions } from "./serve.js";
import { DeliveryStream } from "./stream.js";

/** The metadata key that names the caller to a hub in development mode (no tokens, loopback only). */
export const AgentHeader = "x-hubd-agent";

/** Session types served by a stock hub ("kind@version"). */
export const SessionType = {
  /** A transition graph picks the next speaker. */
  Workflow: "workflow@1",
  /** Two participants, free turns. */
  Conversation: "conversation@1",
  /** Strict round robin from the creator. */
  Discussion: "discussion@1",
  /** A question, then its answer. */
  Consulting: "consulting@1",
} as const;

/** The lifecycle states (SessionInfo.state): PENDING until every invitee has acknowledged, then OPEN, then CLOSED or EXPIRED. */
export const State = {
  Pending: "PENDING",
  Open: "OPEN",
  Closed: "CLOSED",
  Expired: "EXPIRED",
} as const;

/** The named views of a session (Client.view). */
export const ViewName = {
  /** The session type's: windowed over two rounds for workflow and discussion, full otherwise. */
  Default: "default",
  /** The whole transcript the caller may see. */
  Full: "full",
  /** The last `window` items, older ones counted per speaker. */
  Windowed: "windowed",
  /** The latest item only. */
  Last: "last",
} as const;

/** TLS settings: PEM contents (not file names). */
export interface TLSOptions {
  /** The CA that signed the hub's certificate; default: the system's roots. */
  ca?: Buffer | string;
  /** A client certificate (mTLS): the hub names the agent by its common name. */
  cert?: Buffer | string;
  /** The client certificate's key. */
  key?: Buffer | string;
  /** The name the hub's certificate must have, when it is not the target's host. */
  serverName?: string;
}

/** Options of Client.connect. Only name (or token, or a client certificate) is required. */
export interface ClientOptions {
  /**
   * The agent's name. Without a token it is sent as the x-hubd-agent
   * metadata (the hub's development mode, loopback only). With a token the
   * hub knows the agent from the token; name may then be left empty, or must
   * be the token's agent (serve uses it to recognise its invites).
   */
  name?: string;
  /** When set, sent as "authorization: Bearer <token>" on every call. */
  token?: string;
  /**
   * When set, secures the connection; unset means plaintext, which carries a
   * token only to a loopback address unless insecure is set.
   */
  tls?: TLSOptions;
  /** Allows a token over plaintext to a non-loopback target (a trusted network). */
  insecure?: boolean;
  /** Channel credentials of your own, instead of tls (for example with a custom checkServerIdentity). */
  credentials?: grpc.ChannelCredentials;
  /** gRPC channel options, over the client's own. */
  channelOptions?: grpc.ClientOptions;
  /**
   * How many times a send is tried when the hub is unavailable, always with
   * the same client message id so a retry never duplicates; default 3, 1
   * disables retries.
   */
  sendAttempts?: number;
  /**
   * How long, in milliseconds, a send keeps being retried while the hub is
   * unavailable, from its first try; between tries it waits within this
   * budget for the connection to be ready again. Default 10 s.
   */
  retryBudgetMs?: number;
  /** Receives the client's diagnostics (reconnects, stale turns, ignored errors), one line per call. */
  log?: (line: string) => void;
  /** How long connect waits for the hub; default 10 s. */
  timeoutMs?: number;
  /** Aborts connect. */
  signal?: AbortSignal;
  /**
   * How the client sends: Transport.Stream ("stream", the default) sends
   * and opens over one agent stream per client (each send or open
   * acknowledged by its ref on the stream; serve reads its deliveries, with
   * the turn's view, and posts its replies on an agent stream of its own),
   * Transport.Unary ("unary") makes a Send call per envelope and an Open
   * call per open, and serve reads a Subscribe stream. Either way a refused
   * send or open rejects with the same HubError. Sends and opens go unary
   * anyway for an envelope or open request over MaxStreamEnvelope (1 MiB),
   * and against a hub that answers UNIMPLEMENTED for Connect (an older
   * hub); opens also against a hub whose stream takes no opens.
   */
  transport?: TransportName;
}

/** Options of one call: the equivalent of a Go context. */
export interface CallOptions {
  /** Cancels the call (CanceledError). */
  signal?: AbortSignal;
  /** A deadline, in milliseconds from now (DeadlineExceededError). */
  timeoutMs?: number;
  /**
   * The W3C traceparent of the call: sent as its "traceparent" metadata, or
   * in its frame on the agent stream, so that the hub's span of the call
   * continues it and the envelopes it writes carry it; a send's envelope
   * carries it as its own. Unset: OpenTelemetry's active span (with
   * @opentelemetry/api installed), else the trace given with
   * withTraceContext (or, in a serve handler, the trace of the turn's
   * trigger), else none.
   */
  traceparent?: string;
  /** The W3C tracestate that goes with traceparent. */
  tracestate?: string;
}

/** Options of one send. */
export interface SendOptions extends CallOptions {
  /**
   * The envelope's idempotency key: a send repeated with the same key is
   * answered with the original's seq (ack.duplicate) and writes nothing.
   * Without it the SDK generates a random key per call.
   */
  clientMsgId?: string;
  /** The id of the envelope this one answers. */
  causationId?: string;
  /** Delivers the envelope to these participants only ([]: log only). Unset: every participant but the sender. */
  audience?: string[];
}

/** A durable write: the hub's SendResponse and the idempotency key the envelope was sent with. */
export interface Ack extends SendResponse {
  /** The idempotency key the envelope was sent with ("" for invites and closes). */
  clientMsgId: string;
}

/** Participants who must acknowledge their invite, one per name. */
export function invited(...names: string[]): Participant[] {
  return names.map((name) => ({ name, role: "", autoAccept: false }));
}

/** Participants who need not acknowledge, one per name. */
export function autoAccepted(...names: string[]): Participant[] {
  return names.map((name) => ({ name, role: "", autoAccept: true }));
}

/**
 * One timer of a session: name is "turn_within", "reply_within",
 * "max_silence" or "acks_within"; action is "warn", "notify" or
 * "auto_close".
 */
export function expect(name: string, withinMs: number, action: string): Expectation {
  return { name, action, within: duration(withinMs) };
}

function duration(ms: number) {
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.round((ms - seconds * 1000) * 1e6) };
}

/** A new session. The caller is its creator and first participant. */
export interface OpenOptions extends CallOptions {
  /** The session type, "kind@version"; default SessionType.Workflow. */
  type?: string;
  /** Participants in session order (invited, autoAccepted); the caller is added first when missing. */
  participants?: Participant[];
  /** A workflow session's transition graph: a Graph, or its JSON as an object. */
  graph?: Graph | Record<string, unknown>;
  /** Other settings of the session type: "max_handoffs": 3, "supervisor": "lead", "context": {...}. */
  knobs?: Record<string, unknown>;
  /** Labels for listing. */
  labels?: Record<string, string>;
  /** The session's lifetime in milliseconds; 0 or unset: none. */
  ttlMs?: number;
  /** How long invitees have to acknowledge, in milliseconds; unset: the hub's default. */
  inviteTimeoutMs?: number;
  /** Timers replacing the session type's defaults (expect); unset keeps the defaults, [] means none. */
  expectations?: Expectation[];
  /** Makes this a child of a session the caller takes part in. */
  parent?: string;
  /** Makes the open idempotent: the same caller and key return the same session (session.existing). */
  idempotencyKey?: string;
  /**
   * The session's first input from its creator (a delegated child's task):
   * the creator's first turn when the session type expects the creator to
   * speak first (a conversation), else a message its first speaker sees in
   * its view. Every participant must then be autoAccepted.
   */
  task?: string;
  /** The agents the session may delegate to; unset or empty: any. */
  delegates?: string[];
  /** Bounds the usage of the session's whole tree (a root's). */
  budget?: { maxTokens?: number; maxCost?: number };
  /**
   * Continues a conversation thread: while a session the caller opened with
   * this key is open, open returns it; otherwise the new session links the
   * thread's previous one.
   */
  threadKey?: string;
}

/** The hub's open request for options (what Client.open sends). */
export function openRequest(o: OpenOptions): OpenRequest {
  const req = OpenRequest.fromPartial({
    type: o.type || SessionType.Workflow,
    participants: o.participants ?? [],
    labels: { ...o.labels },
    parentSessionId: o.parent ?? "",
    idempotencyKey: o.idempotencyKey ?? "",
    knobs: jsonValues("knob", o.knobs),
    task: o.task ?? "",
    delegates: [...(o.delegates ?? [])],
    threadKey: o.threadKey ?? "",
  });
  if (o.budget) {
    req.budget = { maxTokens: o.budget.maxTokens ?? 0, maxCost: o.budget.maxCost ?? 0 };
  }
  if (o.graph) {
    req.graph = o.graph instanceof Graph ? o.graph.toJSON() : o.graph;
  }
  if (o.ttlMs && o.ttlMs > 0) {
    req.ttl = duration(o.ttlMs);
  }
  if (o.inviteTimeoutMs && o.inviteTimeoutMs > 0) {
    req.inviteTimeout = duration(o.inviteTimeoutMs);
  }
  if (o.expectations) {
    req.expectations = { items: o.expectations };
  }
  return req;
}

/**
 * A session's metadata and state as the hub answered: the hub's
 * SessionInfo (its fields are the session's), with what an open adds.
 */
export interface Session extends SessionInfo {}
export class Session {
  /** Set by open when an earlier open with the same idempotency key made the session. */
  existing: boolean;

  constructor(info: SessionInfo, existing = false) {
    Object.assign(this, info);
    this.existing = existing;
  }

  /** The session id. */
  get id(): string {
    return this.meta?.sessionId ?? "";
  }

  /** Whether the session is over (CLOSED or EXPIRED). */
  get ended(): boolean {
    return this.state === State.Closed || this.state === State.Expired;
  }

  /** A context variable's value, undefined when it is not set. */
  var(key: string): unknown {
    return Object.prototype.hasOwnProperty.call(this.context ?? {}, key) ? this.context[key] : undefined;
  }
}

/** Filters of listSessions; unset fields match everything. */
export interface ListOptions extends CallOptions {
  state?: string;
  creator?: string;
  participant?: string;
  /** Labels that must all match. */
  labels?: Record<string, string>;
  /** Continues a listing (the nextPageToken of the last one). */
  pageToken?: string;
  /** At most 1000; 0 is the hub's default (100). */
  pageSize?: number;
}

/** A view's name and window. */
export interface ViewOptions extends CallOptions {
  /** One of ViewName; "" is the default view. */
  name?: string;
  /** How many recent items the windowed view keeps (0: 10). */
  window?: number;
}

/** Options of subscribe. */
export interface SubscribeOptions extends CallOptions {
  /**
   * The last seq processed per session id; the stream resumes after each.
   * Sessions without a cursor start from their beginning, unless they have
   * ended.
   */
  cursors?: Record<string, number> | Map<string, number>;
  /** Also delivers ended sessions without a cursor. */
  includeEnded?: boolean;
  /**
   * Delivers only what asks the agent to act or ends its work: its turns,
   * invites naming it, questions and their withdrawals, and the ends of its
   * sessions (SubscribeRequest.terse). A hub older than the option delivers
   * everything, as without it.
   */
  terse?: boolean;
  /**
   * When set, every your_turn delivery carries the caller's view of its
   * session with these options (Delivery.view, SubscribeRequest.turn_view),
   * as view() would return it when the notice leaves the hub: no view()
   * call is needed before answering.
   */
  view?: { name?: string; window?: number };
}

type UnaryMethod<Req, Res> = (
  req: Req,
  md: grpc.Metadata,
  opts: Partial<grpc.CallOptions>,
  cb: (err: grpc.ServiceError | null, res: Res) => void,
) => grpc.ClientUnaryCall;

type StreamMethod<Req, Res> = (
  req: Req,
  md: grpc.Metadata,
  opts: Partial<grpc.CallOptions>,
) => grpc.ClientReadableStream<Res>;

/** Whether a gRPC target names a loopback host or a unix socket. */
export function isLoopback(target: string): boolean {
  if (target.startsWith("unix:")) {
    return true;
  }
  const i = target.indexOf(":///");
  if (i >= 0) {
    target = target.slice(i + 4);
  } else if (/^(dns|ipv4|ipv6):/.test(target)) {
    target = target.slice(target.indexOf(":") + 1);
  }
  let host = target;
  const m = /^\[([^\]]+)\](:\d+)?$/.exec(target) ?? /^([^:]+)(:\d+)?$/.exec(target);
  if (m) {
    host = m[1];
  }
  if (host === "localhost") {
    return true;
  }
  switch (isIP(host)) {
    case 4:
      return host.startsWith("127.");
    case 6:
      return host === "::1" || host === "0:0:0:0:0:0:0:1";
  }
  return false;
}

function hasClientCert(tls: TLSOptions | undefined): boolean {
  return tls?.cert !== undefined && tls.key !== undefined;
}

function pem(v: Buffer | string | undefined): Buffer | null {
  return v === undefined ? null : Buffer.from(v);
}

/**
 * A connection to a hub as one agent. Make one with Client.connect; close it
 * when done. Every call takes optional CallOptions (an AbortSignal, a
 * timeout) and rejects with a HubError when the hub refuses it.
 */
export class Client {
  /** The generated gRPC client on the same connection and credentials, for calls the SDK does not wrap. */
  readonly raw: HubClient;
  private readonly attempts: number;
  private readonly budgetMs: number;
  private readonly log: (line: string) => void;
  private readonly setupMs: number;
  /** Sends unary: ClientOptions.transport, or a hub without the agent stream. */
  private unaryOnly: boolean;
  /** The client's own agent stream for its sends, once opened. */
  private main?: AgentStream;
  /** The main stream being opened, shared by the sends that wait for it. */
  private opening?: Promise<AgentStream | undefined>;
  /** Every agent stream open (the main one and serve's), ended by close. */
  private readonly streams = new Set<AgentStream>();
  /** Aborted by close: serve stops with it. */
  private readonly life = new AbortController();

  private constructor(
    raw: HubClient,
    /** The agent's name as given in the options ("" when a token alone identifies the agent). */
    readonly name: string,
    opts: ClientOptions,
  ) {
    this.raw = raw;
    this.attempts = opts.sendAttempts && opts.sendAttempts > 0 ? opts.sendAttempts : 3;
    this.budgetMs = opts.retryBudgetMs ?? 10_000;
    this.log = guardLog(opts.log);
    this.setupMs = opts.timeoutMs ?? 10_000;
    this.unaryOnly = opts.transport === Transport.Unary;
  }

  /**
   * Connects to the hub at target ("host:port", or any gRPC target) as the
   * agent of opts, and waits until the connection is ready: a wrong address
   * fails here (DeadlineExceededError after opts.timeoutMs), not at the first
   * call.
   */
  static async connect(target: string, opts: ClientOptions): Promise<Client> {
    if (!opts.name && !opts.token && !hasClientCert(opts.tls) && !opts.credentials) {
      throw new Error("hubd: ClientOptions.name, token or a client certificate is required");
    }
    if (opts.transport !== undefined && opts.transport !== Transport.Stream && opts.transport !== Transport.Unary) {
      throw new Error(`hubd: ClientOptions.transport ${JSON.stringify(opts.transport)}: want "stream" or "unary"`);
    }
    const secure = opts.tls !== undefined || opts.credentials !== undefined;
    if (opts.token && !secure && !opts.insecure && !isLoopback(target)) {
      throw new Error(
        `hubd: refusing to send a token over plaintext to ${target}: set ClientOptions.tls (or insecure on a trusted network)`,
      );
    }
    const creds =
      opts.credentials ??
      (opts.tls
        ? grpc.credentials.createSsl(pem(opts.tls.ca), pem(opts.tls.key), pem(opts.tls.cert))
        : grpc.credentials.createInsecure());
    const auth: [string, string] | undefined = opts.token
      ? ["authorization", `Bearer ${opts.token}`]
      : opts.name
        ? [AgentHeader, opts.name]
        : undefined;
    const channelOptions: grpc.ClientOptions = {
      // gRPC's default reconnect backoff grows to two minutes; an agent
      // wants its hub back within seconds of a restart.
      "grpc.initial_reconnect_backoff_ms": 100,
      "grpc.max_reconnect_backoff_ms": 5000,
      ...(opts.tls?.serverName
        ? { "grpc.ssl_target_name_override": opts.tls.serverName, "grpc.default_authority": opts.tls.serverName }
        : {}),
      ...opts.channelOptions,
      interceptors: [...(opts.channelOptions?.interceptors ?? []), ...(auth ? [authInterceptor(auth[0], auth[1])] : [])],
    };
    const raw = new HubClient(target, creds, channelOptions);
    try {
      await waitReady(raw, opts.timeoutMs ?? 10_000, opts.signal);
    } catch (err) {
      raw.close();
      throw err;
    }
    return new Client(raw, opts.name ?? "", opts);
  }

  /**
   * Closes the connection and ends the client's
   * agent streams. Streams and calls in flight fail; a running serve
   * resolves.
   */
  close(): void {
    this.life.abort();
    for (const st of this.streams) {
      st.close();
    }
    this.streams.clear();
    this.main = undefined;
    this.raw.close();
  }

  /** @internal Aborted once close is called. */
  get closing(): AbortSignal {
    return this.life.signal;
  }

  /** @internal The transport sends take now: "unary" when chosen, or once the hub answered that it has no agent stream. */
  get transport(): TransportName {
    return this.unaryOnly ? Transport.Unary : Transport.Stream;
  }

  /**
   * @internal Opens an agent stream, kept until it ends or the client
   * closes; undefined when the client sends unary (chosen, or a hub that
   * answers UNIMPLEMENTED, which switches the client to unary).
   */
  async connectStream(opts: ConnectOptions): Promise<AgentStream | undefined> {
    if (this.unaryOnly) {
      return undefined;
    }
    if (this.life.signal.aborted) {
      throw new CanceledError("connect", grpc.status.CANCELLED, "", "the client is closed");
    }
    let st: AgentStream;
    const onError =
      opts.onError ??
      ((err: unknown, d: Delivery) =>
        this.log(`hubd: the delivery of seq ${d.envelope?.seq} of session ${d.envelope?.sessionId} failed (ignored): ${describe(err)}`));
    try {
      st = await AgentStream.open(this.raw, { ...opts, onError });
    } catch (err) {
      if (err instanceof NoStreamError) {
        if (!this.unaryOnly) {
          this.unaryOnly = true;
          this.log("hubd: the hub has no agent stream (UNIMPLEMENTED): sending with unary calls");
        }
        return undefined;
      }
      throw err;
    }
    if (this.life.signal.aborted) {
      st.close();
      throw new CanceledError("connect", grpc.status.CANCELLED, "", "the client is closed");
    }
    this.streams.add(st);
    void st.done.then(() => this.streams.delete(st));
    return st;
  }

  /** The client's own agent stream for its sends and opens, opened when needed; undefined when it sends unary. */
  private async mainStream(): Promise<AgentStream | undefined> {
    const st = this.main;
    if (st && !st.ended) {
      return st;
    }
    this.opening ??= this.connectStream({ waitForReady: false, setupMs: this.setupMs }).then(
      (s) => {
        this.opening = undefined;
        this.main = s;
        return s;
      },
      (err: unknown) => {
        this.opening = undefined;
        throw err;
      },
    );
    return this.opening;
  }

  // Sessions.

  /**
   * Creates a session. It is logged with its invite; it opens once every
   * participant not marked autoAccept has acknowledged (at once when none
   * must), and the first speaker is then told it is its turn. With
   * Transport.Stream it goes over the client's agent stream, as its sends
   * do; it is an Open call with Transport.Unary, against a hub whose
   * stream takes no opens, for a request over MaxStreamEnvelope, and when
   * the stream cannot be opened (the call then says why). It is not
   * retried: an UnavailableError (the stream broke with the open in flight,
   * its outcome unknown) may be retried with the same idempotencyKey.
   */
  async open(opts: OpenOptions): Promise<Session> {
    const req = openRequest(opts);
    const started = Date.now();
    const st = opts.signal?.aborted ? undefined : await this.openStream(req); // else the call rejects at once
    // The time spent so far counts against the open's.
    const call = (): CallOptions => ({
      signal: opts.signal,
      timeoutMs: opts.timeoutMs !== undefined ? Math.max(opts.timeoutMs - (Date.now() - started), 0) : undefined,
    });
    let resp: OpenResponse | undefined;
    if (st) {
      resp = await st.open(req, call());
    }
    resp ??= await this.unary("open", this.raw.open, req, call());
    return new Session(resp.session ?? SessionInfo.fromPartial({}), resp.existing);
  }

  /**
   * The stream an open of req goes on: the client's own (opened when
   * needed) when the client sends over the stream, its hub takes opens
   * there and req is at most MaxStreamEnvelope; undefined for an Open call.
   */
  private async openStream(req: OpenRequest): Promise<AgentStream | undefined> {
    if (this.unaryOnly || OpenRequest.encode(req).finish().length > MaxStreamEnvelope) {
      return undefined;
    }
    const st = await this.mainStream().catch(() => undefined); // the Open call says why
    return st?.opens ? st : undefined;
  }

  /**
   * Opens a workflow session following graph, with the caller as creator and
   * participants invited in that order; each must acknowledge (an agent
   * running serve does so by default).
   */
  async openWorkflow(graph: Graph, participants: string[], opts: CallOptions = {}): Promise<Session> {
    return this.open({ ...opts, type: SessionType.Workflow, graph, participants: invited(...participants) });
  }

  /** A session's metadata and current state. Only its participants (or an operator) may read it. */
  async getSession(sessionId: string, opts: CallOptions = {}): Promise<Session> {
    return new Session(await this.unary("get session", this.raw.getSession, GetSessionRequest.fromPartial({ sessionId }), opts));
  }

  /**
   * The sessions the caller takes part in (all, for an operator), oldest
   * first, with only their metadata and state filled in; nextPageToken is ""
   * after the last page.
   */
  async listSessions(opts: ListOptions = {}): Promise<{ sessions: Session[]; nextPageToken: string }> {
    const resp = await this.unary(
      "list sessions",
      this.raw.listSessions,
      ListSessionsRequest.fromPartial({
        state: opts.state ?? "",
        creator: opts.creator ?? "",
        participant: opts.participant ?? "",
        labels: { ...opts.labels },
        pageToken: opts.pageToken ?? "",
        pageSize: opts.pageSize ?? 0,
      }),
      opts,
    );
    return { sessions: resp.sessions.map((s) => new Session(s)), nextPageToken: resp.nextPageToken };
  }

  /** Accepts the caller's invite to a session; the last ack opens it. */
  async ackInvite(sessionId: string, opts: CallOptions = {}): Promise<Ack> {
    const resp = await this.unary("ack invite", this.raw.ackInvite, InviteRequest.fromPartial({ sessionId }), opts);
    return { ...resp, clientMsgId: "" };
  }

  /** Declines the caller's invite; the session closes with "invite_rejected". reason ("" is the hub's "declined") is logged. */
  async rejectInvite(sessionId: string, reason = "", opts: CallOptions = {}): Promise<Ack> {
    const resp = await this.unary("reject invite", this.raw.rejectInvite, InviteRequest.fromPartial({ sessionId, reason }), opts);
    return { ...resp, clientMsgId: "" };
  }

  /** Ends a session with reason ("" is "explicit_close"). Only its creator (or an operator) may close it. */
  async closeSession(sessionId: string, reason = "", opts: CallOptions = {}): Promise<Ack> {
    const resp = await this.unary("close session", this.raw.closeSession, CloseRequest.fromPartial({ sessionId, reason }), opts);
    return { ...resp, clientMsgId: "" };
  }

  /**
   * Opens a new session that continues sessionId from its seq atSeq (1 to
   * its last seq), open at once: the source's type, graph, knobs and
   * participants, its state at that seq (turns, context, usage, who speaks
   * next; no held turn, pending question or children), then opts' edits
   * (context delete, then set; the next speaker; labels added, the hub's
   * "forked_from" set). The source is not changed. A participant of the
   * source (or an operator) may fork it. Not retried: each call opens a
   * new session. Rejects with UnknownSessionError, PermissionDeniedError
   * (no part in the source), MalformedError (atSeq out of range, naming
   * it; edits not valid; a next speaker who is not a participant) or
   * BadLifecycleTransitionError.
   */
  async fork(sessionId: string, atSeq: number, opts: ForkEdits & CallOptions = {}): Promise<Session> {
    const resp = await this.unary("fork", this.raw.fork, forkRequest(sessionId, atSeq, opts), opts);
    return new Session(resp.session ?? SessionInfo.fromPartial({}));
  }

  /**
   * As an operator, acts on a live session with exactly one action (see
   * SteerAction; a TypeError otherwise), saying why (reason, required):
   * the hub writes it as an operator_action envelope naming the operator
   * and the reason, delivers it and folds it into the session's state. Not
   * retried. Rejects with PermissionDeniedError (not an operator),
   * NothingToSteerError (no held turn to release, no running period of the
   * expectation named), MalformedError, TurnHeldError, SessionClosedError
   * or SessionNotOpenError.
   */
  async steer(sessionId: string, reason: string, action: SteerAction, opts: CallOptions = {}): Promise<Ack> {
    const resp = await this.unary("steer", this.raw.steer, steerRequest(sessionId, reason, action), opts);
    return { ...resp, clientMsgId: "" };
  }

  // Sending.

  /** Takes a turn with plain text. */
  async sendText(sessionId: string, text: string, opts: SendOptions = {}): Promise<Ack> {
    return this.sendOwned(sessionId, Envelope.fromPartial({ type: EventType.Text, text: { text } }), opts);
  }

  /**
   * Takes a turn with a packet: its body, its routing (handoff, finish,
   * escalate), its context updates (applied before routing) and its usage.
   */
  async sendPacket(sessionId: string, p: Packet, opts: SendOptions = {}): Promise<Ack> {
    return this.sendOwned(sessionId, Envelope.fromPartial({ type: EventType.Packet, packet: p.proto() }), opts);
  }

  /** Sets session context variables (any JSON values). Any participant may do so at any time; it is not a turn. */
  async setContext(sessionId: string, set: Record<string, unknown>, opts: SendOptions = {}): Promise<Ack> {
    return this.updateContext(sessionId, { set }, opts);
  }

  /** Deletes, then sets, session context variables; it is not a turn. */
  async updateContext(sessionId: string, u: ContextUpdate, opts: SendOptions = {}): Promise<Ack> {
    const e = Envelope.fromPartial({ type: EventType.ContextSet });
    e.contextSet = contextUpdateProto(u);
    return this.sendOwned(sessionId, e, opts);
  }

  /** Sends a custom event: an application type with opaque data (a string is sent as UTF-8), logged and delivered, never a turn. */
  async sendEvent(sessionId: string, eventType: string, data: Uint8Array | string = "", opts: SendOptions = {}): Promise<Ack> {
    const e = Envelope.fromPartial({ type: eventType });
    e.custom = Buffer.from(data);
    return this.sendOwned(sessionId, e, opts);
  }

  /**
   * Sends any envelope (questions, answers, task progress, ...); the hub sets
   * its session, seq, id, sender and time. env is not modified. A send the
   * hub cannot take now (UnavailableError) is retried up to sendAttempts
   * times with the same client message id, so it is written at most once;
   * each retry waits a short backoff, and up to a second for the
   * connection.
   */
  async send(sessionId: string, env: Partial<Envelope>, opts: SendOptions = {}): Promise<Ack> {
    const e = Envelope.fromPartial(env as Envelope);
    if (env.custom !== undefined) {
      e.custom = Buffer.from(env.custom);
    }
    return this.sendOwned(sessionId, e, opts);
  }

  private sendOwned(sessionId: string, e: Envelope, opts: SendOptions): Promise<Ack> {
    if (opts.clientMsgId !== undefined) {
      e.clientMsgId = opts.clientMsgId;
    }
    if (opts.causationId !== undefined) {
      e.causationId = opts.causationId;
    }
    if (opts.audience !== undefined) {
      e.audience = { names: [...opts.audience] };
    }
    if (opts.traceparent !== undefined) {
      e.traceparent = opts.traceparent;
    }
    if (!e.clientMsgId) {
      e.clientMsgId = newMsgId();
    }
    return this.sendEnvelope(sessionId, e, this.attempts, opts);
  }

  /**
   * What a send does when the main stream cannot be opened: a connection
   * past its stream limit (LIMIT_REACHED: it holds many watches and
   * subscriptions) sends this one with a Send call; anything else fails the
   * send (an unavailable hub is retried).
   */
  private noMainStream(err: unknown): undefined {
    if (!(err instanceof LimitReachedError)) {
      throw err;
    }
    this.log(`hubd: send: no agent stream (${String(err)}): sending with a Send call`);
    return undefined;
  }

  /** @internal Sends e, trying up to attempts times while the hub is unavailable. */
  async sendEnvelope(sessionId: string, e: Envelope, attempts: number, opts: CallOptions): Promise<Ack> {
    const deadline = Date.now() + Math.max(this.budgetMs, 0);
    // Over the stream unless the client sends unary, or the envelope is
    // too large for a frame (a Send call fails alone).
    const small = this.unaryOnly || Envelope.encode(e).finish().length <= MaxStreamEnvelope;
    for (let attempt = 1; ; attempt++) {
      try {
        const st = small ? await this.mainStream().catch((err: unknown) => this.noMainStream(err)) : undefined;
        // The send's trace: its envelope's own, else the caller's.
        const traced = { ...opts, traceparent: e.traceparent || opts.traceparent };
        const resp = st
          ? await st.send(sessionId, e, traced)
          : await this.unary("send", this.raw.send, SendRequest.fromPartial({ sessionId, envelope: e }), traced);
        return { ...resp, clientMsgId: e.clientMsgId };
      } catch (err) {
        if (attempt >= attempts || !(err instanceof UnavailableError) || opts.signal?.aborted || Date.now() >= deadline) {
          throw err;
        }
        this.log(`hubd: send to ${sessionId}: ${String(err)}; retrying (${attempt}/${attempts})`);
        if (!(await sleep(backoffDelay(attempt, 50, 1000), opts.signal))) {
          throw err;
        }
        // A hub that restarts takes a moment; the channel may still be
        // backing off its reconnects. Wait for it, within the budget.
        await waitReady(this.raw, Math.max(deadline - Date.now(), 0), opts.signal).catch(() => {});
      }
    }
  }

  // Reading.

  /**
   * Up to limit envelopes (0: the hub's default, 1000) of a session's log
   * from seq fromSeq (0 or 1: the start), those the caller may see, in seq
   * order.
   */
  async readLog(sessionId: string, fromSeq = 0, limit = 0, opts: CallOptions = {}): Promise<Envelope[]> {
    // The hub answers in capped pages (at most 1000 envelopes, about 2 MiB):
    // read as many as limit takes; fewer than limit means the log ended.
    const want = limit > 0 ? limit : 1000;
    const out: Envelope[] = [];
    for (;;) {
      const req = ReadLogRequest.fromPartial({ sessionId, fromSeq, limit: Math.min(want - out.length, 1000) });
      const resp = await this.unary("read log", this.raw.readLog, req, opts);
      out.push(...resp.envelopes);
      const next = Number(resp.nextSeq);
      if (next === 0 || out.length >= want || next <= fromSeq) {
        return out;
      }
      fromSeq = next;
    }
  }

  /**
   * Forwards a piece of the reply the agent is writing on its turn: the
   * session's watchers (watch with deltas: true) and the subscribers that
   * asked for deltas get it at once; the hub writes nothing. streamId is the
   * client message id the reply's final envelope will carry; index counts
   * the pieces from 0. Rejects as a send would (OutOfTurnError, ...) and
   * past the hub's caps (LimitReachedError). turn.stream() does this for a
   * handler.
   */
  async sendDelta(sessionId: string, streamId: string, index: number, text: string, opts: CallOptions = {}): Promise<DeltaResponse> {
    return this.unary("send delta", this.raw.sendDelta, Delta.fromPartial({ sessionId, streamId, index, text }), opts);
  }

  /** For each open session where it is the caller's turn, the envelope that began the turn (yourTurn is set). */
  async pendingTurns(opts: CallOptions = {}): Promise<Delivery[]> {
    const resp = await this.unary("pending turns", this.raw.pendingTurns, PendingTurnsRequest.fromPartial({}), opts);
    return resp.turns;
  }

  /** The caller's view of a session (the default view unless opts.name chooses another). */
  async view(sessionId: string, opts: ViewOptions = {}): Promise<View> {
    return this.unary("view", this.raw.getView, GetViewRequest.fromPartial({ sessionId, name: opts.name ?? "", window: opts.window ?? 0 }), opts);
  }

  // Streams.

  /**
   * The caller's delivery stream: what it missed after its cursors (the
   * close of a session it was in included), then its pending turns, then
   * everything live. Per session, seqs arrive in order with no gap and no
   * duplicate; a turn is told once per triggering envelope.
   */
  subscribe(opts: SubscribeOptions = {}): DeliveryStream {
    const v = opts.view;
    return this.subscribeStream(opts, false, v ? GetViewRequest.fromPartial({ name: v.name ?? "", window: v.window ?? 0 }) : undefined);
  }

  /** @internal subscribe, optionally waiting for the hub while it is down, optionally with each turn's view. */
  subscribeStream(opts: SubscribeOptions, waitForReady: boolean, turnView?: GetViewRequest): DeliveryStream {
    const cursors = opts.cursors instanceof Map ? Object.fromEntries(opts.cursors) : { ...opts.cursors };
    const req = SubscribeRequest.fromPartial({ cursors, includeEnded: opts.includeEnded ?? false, turnView, terse: opts.terse ?? false });
    return this.stream("subscribe", this.raw.subscribe, req, opts, waitForReady);
  }

  /**
   * The envelopes of one session from seq fromSeq (0 or 1: all), live, for
   * dashboards, transcripts and audits: for a participant, every envelope it
   * may read (addressed to it, or its own); for an operator, all of them.
   * Deliveries of a watch never have yourTurn set.
   */
  watch(sessionId: string, fromSeq = 0, opts: CallOptions & { deltas?: boolean } = {}): DeliveryStream {
    if (opts.deltas) {
      return this.watchCall(WatchRequest.fromPartial({ sessionId, fromSeq, deltas: true }), opts, false);
    }
    return this.watchStream(sessionId, fromSeq, opts, false);
  }

  private watchStream(sessionId: string, fromSeq: number, opts: CallOptions, waitForReady: boolean): DeliveryStream {
    return this.watchCall(WatchRequest.fromPartial({ sessionId, fromSeq }), opts, waitForReady);
  }

  /** A Watch call. */
  private watchCall(req: WatchRequest, opts: CallOptions, waitForReady: boolean): DeliveryStream {
    return this.stream("watch", this.raw.watch, req, opts, waitForReady);
  }

  /**
   * Every envelope of a session from seq fromSeq (0 or 1: all), in order and
   * each once, until the session ends: the last one yielded is the envelope
   * that ended it (session_closed or session_expired; see closeReason). A
   * watch that breaks (a restarting hub, a slow reader cut off) is resumed
   * after the last envelope yielded. Abort opts.signal, or break out of the
   * loop, to stop early; opts.timeoutMs bounds the whole follow
   * (DeadlineExceededError).
   *
   *     for await (const e of c.follow(s.id)) {
   *       if (isTurn(e)) console.log(`${e.from}: ${textOf(e)}`);
   *       if (ends(e)) console.log("closed:", closeReason(e));
   *     }
   */
  async *follow(sessionId: string, fromSeq = 1, opts: CallOptions = {}): AsyncGenerator<Envelope, void, undefined> {
    let next = Math.max(fromSeq, 1);
    const deadline = opts.timeoutMs !== undefined ? Date.now() + opts.timeoutMs : undefined;
    for (let attempt = 0; ; ) {
      const timeoutMs = deadline !== undefined ? Math.max(deadline - Date.now(), 0) : undefined;
      const w = this.watchStream(sessionId, next, { signal: opts.signal, timeoutMs }, true);
      let failure: unknown;
      try {
        for await (const d of w) {
          const e = d.envelope;
          if (!e || e.seq < next) {
            continue;
          }
          next = e.seq + 1;
          yield e;
          if (ends(e)) {
            return;
          }
        }
        if (opts.signal?.aborted) {
          return;
        }
        failure = new UnavailableError("follow", grpc.status.UNAVAILABLE, "", "the watch ended before the session did");
      } catch (err) {
        if (!retryable(err) || opts.signal?.aborted) {
          throw err;
        }
        failure = err;
      } finally {
        w.close();
      }
      attempt++;
      this.log(`hubd: follow ${sessionId}: ${String(failure)}; watching again from seq ${next}`);
      if (!(await sleep(backoffDelay(attempt, 50, 2000), opts.signal))) {
        return;
      }
    }
  }

  // Delegation, questions and the call tree (docs/DELEGATION.md).

  /** Calls an idempotent RPC (one with a client message id), retrying while the hub is unavailable, up to sendAttempts. */
  private async retryUnavailable<Req, Res>(op: string, method: UnaryMethod<Req, Res>, req: Req, opts: CallOptions): Promise<Res> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.unary(op, method, req, opts);
      } catch (err) {
        if (attempt >= this.attempts || !(err instanceof UnavailableError) || opts.signal?.aborted) {
          throw err;
        }
        this.log(`hubd: ${op}: ${String(err)}; retrying (${attempt}/${this.attempts})`);
        if (!(await sleep(backoffDelay(attempt, 50, 1000), opts.signal))) {
          throw err;
        }
        await waitReady(this.raw, 1000, opts.signal).catch(() => {});
      }
    }
  }

  /**
   * Opens children of a session on the caller's turn there (the delegation
   * logged in the parent in the same write) and returns a Task per child, in
   * order. Each child is an OpenOptions (its task is the child's first
   * input; the caller becomes its creator and the hub sets its parent).
   *
   * A blocking delegation (the default) holds the caller's turn until the
   * children are done (opts.await: AwaitChildren.All, the default, or Any):
   * wait with awaitAll or awaitAny; the hub then appends their results to
   * the parent and gives the caller its turn back. A background one
   * (DelegateMode.Background) leaves the turn as it is; with notify:
   * NotifyTurn a result gives the caller a turn. A serve handler uses
   * turn.delegate, delegateAll, delegateAny or spawn instead. Rejects with
   * OutOfTurnError, TurnHeldError, SessionClosedError, DepthExceededError,
   * DelegateNotAllowedError, MalformedError.
   */
  async delegate(sessionId: string, opts: DelegateOptions): Promise<Task[]> {
    const req = DelegateRequest.fromPartial({
      sessionId,
      children: opts.children.map((ch) => openRequest(ch)),
      mode: opts.mode ?? DelegateMode.Blocking,
      await: opts.await ?? "",
      notify: opts.notify ?? "",
      clientMsgId: opts.clientMsgId || newMsgId(),
    });
    const resp = await this.retryUnavailable("delegate", this.raw.delegate, req, opts);
    const from = resp.delegation?.seq ?? 1;
    return resp.children.map(
      (ch) => new Task(this, ch.meta?.sessionId ?? "", sessionId, ch.meta?.delegationId ?? "", req.mode || DelegateMode.Blocking, from),
    );
  }

  /** The Task of a delegated child session (the caller must take part in it, as its delegator does), e.g. after a restart. */
  async task(sessionId: string, opts: CallOptions = {}): Promise<Task> {
    const m = (await this.getSession(sessionId, opts)).meta;
    if (!m?.parentSessionId || !m.delegationId) {
      throw new MalformedError("task", grpc.status.INVALID_ARGUMENT, "MALFORMED", `session ${sessionId} was not delegated`);
    }
    return new Task(this, sessionId, m.parentSessionId, m.delegationId, DelegateMode.Background, 1);
  }

  /**
   * Answers a pending question of a session, as its answerer or as an
   * operator on someone's behalf: with optionIds (a question with options)
   * or text (free text, checked against the question's schema). The asker is
   * told its turn with the answer as trigger. Rejects with BadAnswerError
   * naming what would be valid: no such pending question, not the answerer,
   * an unknown option, several for a single choice, text that does not meet
   * the schema.
   */
  async answerQuestion(sessionId: string, answer: Partial<Answer> & { questionId: string }, opts: SendOptions = {}): Promise<Ack> {
    const req = AnswerRequest.fromPartial({ sessionId, answer, clientMsgId: opts.clientMsgId || newMsgId() });
    const resp = await this.retryUnavailable("answer", this.raw.answer, req, opts);
    return { ...resp, clientMsgId: req.clientMsgId };
  }

  /**
   * The pending questions the caller must answer (an operator: everyone's,
   * or opts.answerer's), oldest first; with opts.root, only those of that
   * session's tree.
   */
  async listQuestions(opts: CallOptions & { answerer?: string; root?: string } = {}): Promise<PendingQuestion[]> {
    const req = ListQuestionsRequest.fromPartial({ answerer: opts.answerer ?? "", rootSessionId: opts.root ?? "" });
    return (await this.unary("list questions", this.raw.listQuestions, req, opts)).questions;
  }

  /** A session's call tree from it down: per node its session (state, close reason), turns, usage, duration and children. */
  async tree(sessionId: string, opts: CallOptions = {}): Promise<TreeNode> {
    return this.unary("tree", this.raw.getTree, GetTreeRequest.fromPartial({ sessionId }), opts);
  }

  /**
   * Archives (unless the hub runs without an archive) and purges an ended
   * session whose whole tree ended, at once, whatever its retention
   * (operators). Every read of it throws PurgedError afterwards. Refused:
   * PermissionDeniedError for an agent that is not an operator;
   * BadLifecycleTransitionError for a session that is open, in a tree with a
   * session still open, or a fork's source.
   */
  async purge(sessionId: string, opts: CallOptions = {}): Promise<PurgeResponse> {
    return this.unary("purge", this.raw.purge, PurgeRequest.fromPartial({ sessionId }), opts);
  }

  /**
   * Erases sessions for good (operators): by id, a creator's thread
   * (`threadKey` with `creator`), or every session `participant` takes part
   * in; `reason` is required and kept in each tombstone. Live ones are
   * closed first; then their content leaves the hub's log, its files, its
   * archives and its caches, and every read of them throws ErasedError.
   * Returns each one's tombstone (when, by whom, why). Refused:
   * PermissionDeniedError for an agent that is not an operator;
   * MalformedError without a reason or sessions. Not retried.
   */
  async erase(
    o: { sessionIds?: string[]; threadKey?: string; creator?: string; participant?: string; reason: string },
    opts: CallOptions = {},
  ): Promise<ErasedSession[]> {
    const resp = await this.unary("erase", this.raw.erase, EraseRequest.fromPartial(o), opts);
    return resp.sessions;
  }

  /**
   * Writes purged sessions back into the hub's log from `archive`, the name
   * of a file of the hub's archive directory
   * (`hubd-archive-2026-11-29.hubarc`): those of `sessionIds`, or every
   * session of the file (operators). Each comes back ended, labelled
   * `imported_from`, and every read answers it again. Refused, importing
   * nothing: PermissionDeniedError for an agent that is not an operator;
   * MalformedError for a path or a file the directory does not hold, or a
   * session the file does not hold; BadLifecycleTransitionError for a
   * session the log holds (imported already); ErasedError for an erased one.
   */
  async importSessions(archive: string, sessionIds: string[] = [], opts: CallOptions = {}): Promise<ImportedSession[]> {
    const resp = await this.unary("import sessions", this.raw.import, ImportRequest.fromPartial({ archive, sessionIds }), opts);
    return resp.sessions;
  }

  /** Re-folds a session from its log with no agent called and says whether the result equals the live state (operators). */
  async replay(sessionId: string, opts: CallOptions = {}): Promise<ReplayResponse> {
    return this.unary("replay", this.raw.replay, ReplayRequest.fromPartial({ sessionId }), opts);
  }

  /**
   * Every envelope of a root session and its descendants (each labelled with
   * its session and depth in envelope.call), each once and in seq order per
   * session, until the root has ended and everything written with its end
   * (the descendants it closed) has been yielded. Without opts.verbose only
   * the root's own envelopes plus the descendants' questions, answers,
   * delegations and results. A watch that breaks is resumed from the last
   * seq seen per session. The caller must be an operator or take part in the
   * sessions it reads (one it may not read is left out).
   */
  async *followTree(
    rootId: string,
    opts: CallOptions & { verbose?: boolean; fromSeq?: number } = {},
  ): AsyncGenerator<Envelope, void, undefined> {
    const next = new Map<string, number>([[rootId, Math.max(opts.fromSeq ?? 1, 1)]]);
    const deadline = opts.timeoutMs !== undefined ? Date.now() + opts.timeoutMs : undefined;
    for (let attempt = 0; ; ) {
      const cursors: Record<string, number> = {};
      for (const [id, n] of next) {
        if (id !== rootId) {
          cursors[id] = n - 1;
        }
      }
      const req = WatchRequest.fromPartial({ sessionId: rootId, fromSeq: next.get(rootId), tree: true, verbose: opts.verbose ?? false, cursors });
      const timeoutMs = deadline !== undefined ? Math.max(deadline - Date.now(), 0) : undefined;
      const w = this.watchCall(req, { signal: opts.signal, timeoutMs }, true);
      let end: Envelope | undefined;
      let failure: unknown;
      try {
        for await (const d of w) {
          const e = d.envelope;
          if (!e || e.seq < (next.get(e.sessionId) ?? 0)) {
            continue;
          }
          next.set(e.sessionId, e.seq + 1);
          yield e;
          if (e.sessionId === rootId && ends(e)) {
            end = e;
          }
        }
        if (end || opts.signal?.aborted) {
          return; // the hub ends a tree watch after the root's end
        }
        failure = new UnavailableError("follow tree", grpc.status.UNAVAILABLE, "", "the watch ended before the root did");
      } catch (err) {
        if (end) {
          return;
        }
        if (!retryable(err) || opts.signal?.aborted) {
          throw err;
        }
        failure = err;
      } finally {
        w.close();
      }
      attempt++;
      this.log(`hubd: follow tree ${rootId}: ${String(failure)}; watching again`);
      if (!(await sleep(backoffDelay(attempt, 50, 2000), opts.signal))) {
        return;
      }
    }
  }

  // Serving.

  /**
   * Runs the agent until opts.signal aborts: it subscribes to the agent's
   * deliveries, acts on invites (accepting them unless opts.invites decides
   * otherwise) and calls handler for each of the agent's turns with the
   * triggering envelope and the agent's view of the session, then posts the
   * reply. See serve.ts for the details; it resolves once the signal has
   * aborted and every running handler has returned, and rejects with an
   * error reconnecting cannot cure (UnauthenticatedError, ...).
   */
  serve(handler: Handler, opts: ServeOptions = {}): Promise<void> {
    return serve(this, handler, opts, this.log);
  }

  // Plumbing.

  private async unary<Req, Res>(op: string, method: UnaryMethod<Req, Res>, req: Req, opts: CallOptions): Promise<Res> {
    return this.unaryOn(this.raw, op, method, req, opts);
  }

  private unaryOn<Req, Res>(client: HubClient, op: string, method: UnaryMethod<Req, Res>, req: Req, opts: CallOptions): Promise<Res> {
    const signal = opts.signal;
    if (signal?.aborted) {
      return Promise.reject(new CanceledError(op, grpc.status.CANCELLED, "", "the call was cancelled before it started"));
    }
    return new Promise<Res>((resolve, reject) => {
      const callOpts: Partial<grpc.CallOptions> = {};
      if (opts.timeoutMs !== undefined) {
        callOpts.deadline = Date.now() + opts.timeoutMs;
      }
      const onAbort = () => call.cancel();
      const call = method.call(client, req, traceMetadata(opts), callOpts, (err, res) => {
        signal?.removeEventListener("abort", onAbort);
        if (err) {
          reject(hubError(op, err, callOpts.deadline as number | undefined));
        } else {
          resolve(res);
        }
      });
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  private stream<Req>(
    op: string,
    method: StreamMethod<Req, Delivery>,
    req: Req,
    opts: CallOptions,
    waitForReady: boolean,
  ): DeliveryStream {
    const callOpts: Partial<grpc.CallOptions> = {};
    if (opts.timeoutMs !== undefined) {
      callOpts.deadline = Date.now() + opts.timeoutMs;
    }
    const call = method.call(this.raw, req, new grpc.Metadata({ waitForReady }), callOpts);
    const s = new DeliveryStream(op, call, opts.signal, callOpts.deadline as number | undefined);
    if (opts.signal?.aborted) {
      s.close();
    }
    return s;
  }
}

/** The metadata of a unary call: its trace context (currentTrace) as "traceparent" and "tracestate". */
function traceMetadata(opts: CallOptions): grpc.Metadata {
  const md = new grpc.Metadata();
  const tc = currentTrace(opts);
  if (tc) {
    md.set("traceparent", tc.traceparent);
    if (tc.tracestate) {
      md.set("tracestate", tc.tracestate);
    }
  }
  return md;
}

/** An interceptor that names the agent (or carries its token) on every call. */
function authInterceptor(key: string, value: string): grpc.Interceptor {
  return (options, nextCall) =>
    new grpc.InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        metadata.set(key, value);
        next(metadata, listener);
      },
    });
}

/** Waits until the client's channel is ready, for at most timeoutMs or until signal aborts. */
function waitReady(raw: grpc.Client, timeoutMs: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new CanceledError("connect", grpc.status.CANCELLED, "", "connect was aborted"));
      return;
    }
    const onAbort = () => reject(new CanceledError("connect", grpc.status.CANCELLED, "", "connect was aborted"));
    signal?.addEventListener("abort", onAbort, { once: true });
    raw.waitForReady(Date.now() + timeoutMs, (err) => {
      signal?.removeEventListener("abort", onAbort);
      if (err) {
        const state = grpc.connectivityState[raw.getChannel().getConnectivityState(false)] ?? "unknown";
        reject(
          new DeadlineExceededError(
            "connect",
            grpc.status.DEADLINE_EXCEEDED,
            "",
            `the hub was not ready within ${timeoutMs} ms (connection ${state.toLowerCase()})`,
          ),
        );
      } else {
        resolve();
      }
    });
  });
}

/** A random client message id. */
function newMsgId(): string {
  return "m-" + randomBytes(16).toString("base64url");
}
