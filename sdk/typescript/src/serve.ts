// The agent loop: agentsdk/serve.go, the reference implementation of
// docs/API.md's "Writing an agent in any language".

import { backoffDelay, sleep } from "./backoff.js";
import { newTurn, type OptionInput, type QuestionInput, type SpawnOptions, type Task, type WaitOptions } from "./calls.js";
import type { Client, OpenOptions, Session } from "./client.js";
import { MaxStreamEnvelope, type AgentStream } from "./connect.js";
import {
  BadLifecycleTransitionError,
  CanceledError,
  OutOfTurnError,
  retryable,
  SessionClosedError,
  SessionNotOpenError,
} from "./errors.js";
import { ends, EventType, Packet, turnMsgId } from "./envelope.js";
import { Envelope, GetViewRequest, type Answer, type Delivery, type DelegationResult, type View } from "./gen/hub.js";
import type { TurnStream } from "./delta.js";
import { describe } from "./report.js";
import { continueTrace, currentTrace } from "./trace.js";

/** One turn of the agent in a session. */
export interface Turn {
  /** The session. */
  sessionId: string;
  /**
   * The envelope that began the turn: the previous speaker's text or
   * packet, or the session_opened envelope for the first speaker. Its
   * payload is unset when the agent may not see it.
   */
  trigger: Envelope;
  /** The agent's view of the session (the default view unless ServeOptions.view chose another); undefined with view: null. */
  view?: View;
  /** The client serving the turn; the handler may call it (setContext, getSession, ...). */
  client: Client;
  /** Aborted when serve stops or the session ends. */
  signal: AbortSignal;
  /** What the trigger says in words (textOf). */
  text(): string;
  /**
   * A writer of the turn's reply as it is made (an LLM's tokens): each
   * `await s.write(piece)` is forwarded at once as a delta (never logged),
   * `await s.close()` sends the final envelope with all of it (TurnStream).
   */
  stream(): TurnStream;
  /**
   * Whether the turn was given back after a wait the handler did not see
   * end (the agent process restarted while it waited in delegate or ask):
   * its trigger is then the delegation_result or the answer it waited for.
   */
  resumed(): boolean;
  /**
   * The reply that hands the turn, and the duty to answer this child
   * session's caller, to another participant: its finish closes the session
   * and answers the parent. Return it from the handler.
   */
  passCaller(agent: string): Packet;
  /**
   * Hands a task to a child session and waits for its result, as a handler
   * waits for a tool call: the child opens with the agent as its creator
   * (child.task is its first input), the turn is held (nobody speaks in this
   * session meanwhile), and when the child ends its result is posted here
   * and the turn comes back. The wait reads the log: it survives a
   * restarting hub and a broken connection. If the agent process restarts
   * while waiting, the turn comes back to a new handler with the result as
   * its trigger (resumed()). Rejects with DepthExceededError,
   * DelegateNotAllowedError, TurnHeldError, OutOfTurnError,
   * SessionClosedError when the hub refuses it.
   */
  delegate(child: OpenOptions, opts?: WaitOptions): Promise<DelegationResult>;
  /** Delegates to several children at once (fan-out), the turn held until every one is done; their results in the order they closed. */
  delegateAll(children: OpenOptions[], opts?: WaitOptions): Promise<DelegationResult[]>;
  /** Delegates to several children at once, the turn held until the first is done; its result (the others go on, their results posted as notices). */
  delegateAny(children: OpenOptions[], opts?: WaitOptions): Promise<DelegationResult>;
  /**
   * Starts a child session in the background and returns its Task at once;
   * the turn stays the agent's (it still replies). With turnOnResult the
   * task's result gives the agent a turn here.
   */
  spawn(child: OpenOptions, opts?: SpawnOptions): Promise<Task>;
  /**
   * Asks a question on the turn and waits for its answer: the turn is held
   * until the answerer (opts.answerer or question.answerer; by default the
   * root session's creator) answers. question is its text (with
   * opts.options: ids or Options; none: a free-text answer), or a Question
   * (with a schema, a deadline, ...). A question without an id gets one
   * derived from the turn. Rejects with WithdrawnError if the question is
   * withdrawn (its session ended).
   */
  ask(
    question: string | QuestionInput,
    opts?: WaitOptions & { options?: OptionInput[]; answerer?: string; multiple?: boolean },
  ): Promise<Answer>;
}

/** What a handler says on its turn: a text, or a packet (with routing, context updates, usage). */
export interface Reply {
  text?: string;
  packet?: Packet;
}

/** A reply with plain text. */
export function replyText(text: string): Reply {
  return { text };
}

/** A reply with a packet. */
export function replyPacket(packet: Packet): Reply {
  return { packet };
}

/**
 * What a handler returns: a Reply, a Packet, a string (a text), or nothing
 * (undefined, null, "" or an empty Reply) to post nothing: the turn stays
 * the agent's, the hub does not move on.
 */
export type HandlerResult = Reply | Packet | string | undefined | null | void;

/**
 * Answers one of the agent's turns. serve calls it once per turn (per
 * envelope that began a turn), one turn at a time per session; turns of
 * different sessions may run concurrently. turn.signal aborts when serve
 * stops or the session ends. A handler that throws (or rejects), whatever
 * it throws, is logged and posts nothing (the turn is offered again only by
 * a new serve); serve goes on, and the session's next turn calls it again.
 * The handler runs in the trace of the turn's trigger (its traceparent):
 * the calls it makes and its reply carry it (see withTraceContext).
 */
export type Handler = (turn: Turn) => HandlerResult | Promise<HandlerResult>;

/** An invitation to a session, as given to ServeOptions.invites. */
export interface Invite {
  sessionId: string;
  /** Everyone who must acknowledge. */
  invitees: string[];
  /** The session_invite envelope. */
  envelope: Envelope;
}

/** Options of Client.serve. */
export interface ServeOptions {
  /** Stops serving: serve resolves once every running handler has returned. */
  signal?: AbortSignal;
  /**
   * Decides invites: returning (or resolving) accepts the invite
   * (ackInvite); throwing (or rejecting) declines it (rejectInvite, with the
   * error's message as the reason). Default: accept every invite. Call
   * client.getSession to see the session's type, creator and participants.
   */
  invites?: (invite: Invite, signal: AbortSignal) => unknown;
  /**
   * Serves only the sessions it returns (or resolves to) true for. serve
   * reads a session the first time it sees it (an invite, a turn; one
   * getSession, retried while the hub is unavailable) and asks; the answer
   * holds until the session ends. Of a session it refuses, serve answers
   * no invite (it stays pending for another client of the agent's name, or
   * until it times out) and takes no turn; the observer and onSessionEnd
   * still see what the stream carries of it. A session serve cannot read,
   * or for which the filter throws, is not served (logged). Every client of
   * an agent's name is offered the sessions the name is invited to: keep
   * yours by their labels (`(s) => s.meta?.labels.run === run`), set by
   * whoever opens them.
   */
  sessionFilter?: (session: Session, signal: AbortSignal) => boolean | Promise<boolean>;
  /**
   * The view given to the handler: a name (ViewName) and window; null gives
   * none. Default: the default view. It comes with the turn notice (the
   * subscription's turn_view), as the notice left the hub; a turn told
   * without it (a view the hub could not build) fetches it first.
   */
  view?: { name: string; window?: number } | null;
  /** The reconnect backoff: exponential from baseMs, capped at maxMs, jittered. Default 100 ms to 5 s. */
  backoff?: { baseMs: number; maxMs: number };
  /**
   * Called with every delivery of the agent's stream, in order, before serve
   * acts on it (for transcripts and metrics). With it, the stream carries
   * every envelope addressed to the agent; without it, only what serve acts
   * on (SubscribeOptions.terse). While a promise it returns is pending,
   * nothing more is read (over the agent stream, the acks of the replies
   * neither). An observer that throws or rejects is logged and serve acts
   * on the delivery as if it had returned, over either transport: a turn is
   * still dispatched, an end still ends the session, the cursors advance.
   */
  observer?: (d: Delivery) => void | Promise<void>;
  /**
   * Called with the envelope that ended each of the agent's sessions
   * (session_closed or session_expired) when the stream delivers it, before
   * serve aborts the session's running handler. It runs on the stream's
   * reader, as the observer does (a promise it returns holds the reader
   * back), and keeps the stream terse: an agent that opens sessions and
   * waits for their ends needs no observer. One that throws or rejects is
   * logged, and the session ends all the same (its handler aborted).
   */
  onSessionEnd?: (end: Envelope) => void | Promise<void>;
  /** Called with the error that broke the stream each time serve resubscribes. */
  onReconnect?: (err: unknown) => void;
}

/** The turn state of one session. */
interface Worker {
  /** The latest trigger seq taken. */
  last: number;
  /** The newest turn not yet started. */
  pending?: Delivery;
  running: boolean;
  ended: boolean;
  /** Aborts the running turn. */
  abort?: AbortController;
}

/**
 * serve runs the agent loop for c (Client.serve): it subscribes to the
 * agent's deliveries, acts on invites and calls h for each of the agent's
 * turns, then posts h's reply.
 *
 * A reply is posted with a client message id derived from the session and
 * the trigger's seq (turnMsgId), so a post retried after a broken connection
 * is written once. When the stream breaks (the hub restarts or drains, the
 * connection drops, or the hub cuts the agent off as a slow subscriber),
 * serve resubscribes with exponential backoff from the cursors it keeps (the
 * last seq seen per session), so nothing is missed or seen twice; the new
 * stream tells its pending turns again. Each turn notice carries the agent's
 * view (the subscription's turn_view), so a turn costs no call before the
 * handler. Without an observer the stream is terse (SubscribeOptions.terse):
 * the hub sends the agent its turns, invites, questions and session ends,
 * not every envelope of its sessions. A turn superseded by a newer one of the same session before h
 * started on it is skipped. A reply that the hub refuses because the turn
 * has passed (OUT_OF_TURN, SESSION_CLOSED, SESSION_NOT_OPEN) is logged and
 * dropped.
 *
 * serve reads its deliveries from an agent stream of its own and posts the
 * replies on it (one stream, no call per reply), or, with
 * ClientOptions.transport "unary" or against a hub without the stream,
 * from a Subscribe stream with a Send call per reply. Closing
 * the client ends serve (it resolves).
 */
export async function serve(c: Client, h: Handler, opts: ServeOptions, log: (line: string) => void): Promise<void> {
  if (typeof h !== "function") {
    throw new TypeError("hubd: serve needs a handler");
  }
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  if (opts.signal?.aborted || c.closing.aborted) {
    return;
  }
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  c.closing.addEventListener("abort", onAbort, { once: true });
  const base = opts.backoff?.baseMs ?? 100;
  const max = opts.backoff?.maxMs ?? 5000;
  const sv = new Serving(c, h, opts, stop.signal, log, base, max);
  try {
    for (let attempt = 0; ; ) {
      const { got, err } = await sv.subscription();
      if (stop.signal.aborted) {
        return;
      }
      if (err !== undefined && !retryable(err)) {
        throw err;
      }
      if (got) {
        attempt = 0;
      }
      attempt++;
      const why = err ?? new Error("the hub ended the stream");
      opts.onReconnect?.(why);
      log(`hubd: serve: stream ended: ${describe(why)}; resubscribing (attempt ${attempt})`);
      if (!(await sleep(backoffDelay(attempt, base, max), stop.signal))) {
        return;
      }
    }
  } finally {
    opts.signal?.removeEventListener("abort", onAbort);
    c.closing.removeEventListener("abort", onAbort);
    stop.abort();
    await sv.drain();
  }
}

/** One run of serve. */
class Serving {
  /** The last seq seen per session. */
  private readonly cursors = new Map<string, number>();
  private readonly sessions = new Map<string, Worker>();
  private readonly tasks = new Set<Promise<void>>();
  /** The session filter's answers, per session. */
  private readonly verdicts = new Map<string, Promise<boolean>>();
  /** The agent stream being read, if any: replies go over it. */
  private stream?: AgentStream;

  constructor(
    private readonly c: Client,
    private readonly h: Handler,
    private readonly opts: ServeOptions,
    private readonly signal: AbortSignal,
    private readonly log: (line: string) => void,
    private readonly base: number,
    private readonly max: number,
  ) {}

  /** The turn view the subscription asks for (none with view: null). */
  private turnView(): GetViewRequest | undefined {
    const v = this.opts.view === undefined ? { name: "default" } : this.opts.view;
    return v ? GetViewRequest.fromPartial({ name: v.name, window: v.window ?? 0 }) : undefined;
  }

  /** Whether the subscription is terse: it is unless an observer wants everything. */
  private terse(): boolean {
    return this.opts.observer === undefined;
  }

  /** Reads one subscription until it breaks; reports whether it delivered anything, and why it ended. */
  async subscription(): Promise<{ got: boolean; err?: unknown }> {
    let st: AgentStream | undefined;
    let got = false;
    try {
      st = await this.c.connectStream({
        subscribe: { cursors: Object.fromEntries(this.cursors), includeEnded: false, turnView: this.turnView(), terse: this.terse() },
        onDelivery: (d) => {
          got = true;
          return this.deliver(d);
        },
        waitForReady: true,
        signal: this.signal,
      });
    } catch (err) {
      return { got, err };
    }
    if (st) {
      // The stream itself tells the pending turns (after what the cursors
      // missed), each with its view: no pendingTurns call is needed.
      this.stream = st;
      try {
        await st.done;
        return { got, err: st.err };
      } finally {
        if (this.stream === st) {
          this.stream = undefined;
        }
        st.close();
      }
    }
    return this.subscribed();
  }

  /** Reads one Subscribe stream until it breaks (unary transport). */
  private async subscribed(): Promise<{ got: boolean; err?: unknown }> {
    const s = this.c.subscribeStream({ cursors: this.cursors, terse: this.terse(), signal: this.signal }, true, this.turnView());
    let got = false;
    try {
      let turns: Delivery[] = [];
      try {
        turns = await this.c.pendingTurns({ signal: this.signal });
      } catch (err) {
        this.log(`hubd: serve: pending turns: ${describe(err)}`);
      }
      for (const d of turns) {
        this.dispatch(d);
      }
      for await (const d of s) {
        got = true;
        await this.deliver(d);
      }
      return { got };
    } catch (err) {
      return { got, err };
    } finally {
      s.close();
    }
  }

  /** Waits for every invite answer and turn still running. */
  async drain(): Promise<void> {
    while (this.tasks.size > 0) {
      await Promise.allSettled([...this.tasks]);
    }
  }

  private track(p: Promise<void>): void {
    const t = p.catch((err: unknown) => this.log(`hubd: serve: ${describe(err)}`)).finally(() => this.tasks.delete(t));
    this.tasks.add(t);
  }

  /**
   * Acts on one delivery of the stream; returns a promise only while the
   * observer's or onSessionEnd's is pending (the reader waits for it). It
   * never throws or rejects: a hook's error is logged and the delivery
   * acted on as if the hook had returned.
   */
  private deliver(d: Delivery): void | Promise<void> {
    const o = this.hook("observer", d.envelope, () => this.opts.observer?.(d));
    if (o) {
      return o.then(() => this.act(d));
    }
    return this.act(d);
  }

  /**
   * Calls a hook (the observer or onSessionEnd) on the delivery of e and
   * logs what it throws or rejects with; returns a promise, which never
   * rejects, only while the hook's is pending.
   */
  private hook(name: string, e: Envelope | undefined, f: () => unknown): Promise<void> | undefined {
    const on = e ? ` on seq ${e.seq} of session ${e.sessionId}` : "";
    const failed = (err: unknown) => this.log(`hubd: serve: ${name}${on} failed (ignored): ${describe(err)}`);
    let r: unknown;
    try {
      r = f();
    } catch (err) {
      failed(err);
      return undefined;
    }
    if (r !== null && typeof r === "object" && typeof (r as PromiseLike<unknown>).then === "function") {
      return Promise.resolve(r as PromiseLike<unknown>).then(() => undefined, failed);
    }
    return undefined;
  }

  private act(d: Delivery): void | Promise<void> {
    const e = d.envelope;
    if (!e) {
      return;
    }
    const id = e.sessionId;
    if (e.seq > (this.cursors.get(id) ?? 0)) {
      this.cursors.set(id, e.seq);
    }
    if (ends(e)) {
      // The session is forgotten (its handler aborted) after onSessionEnd,
      // even when it throws or rejects (logged).
      const forget = () => {
        this.cursors.delete(id);
        this.end(id);
      };
      const r = this.hook("onSessionEnd", e, () => this.opts.onSessionEnd?.(e));
      if (r) {
        return r.then(forget);
      }
      forget();
      return;
    }
    if (e.type === EventType.Invite) {
      this.invite(e);
    }
    if (d.yourTurn) {
      this.dispatch(d);
    }
  }

  /** Answers an invite in the background. */
  private invite(e: Envelope): void {
    const invitees = e.invite?.invitees ?? [];
    const me = this.c.name;
    if (me !== "" && !invitees.includes(me)) {
      return; // the creator's copy
    }
    const id = e.sessionId;
    this.track(
      (async () => {
        if (!(await this.serves(id, this.signal))) {
          return; // another client's to answer
        }
        let decline: string | undefined;
        if (this.opts.invites) {
          try {
            await this.opts.invites({ sessionId: id, invitees, envelope: e }, this.signal);
          } catch (err) {
            decline = err instanceof Error ? err.message : describe(err);
          }
        }
        try {
          await this.retry(() =>
            decline === undefined
              ? this.c.ackInvite(id, { signal: this.signal })
              : this.c.rejectInvite(id, decline, { signal: this.signal }),
          );
        } catch (err) {
          if (this.signal.aborted || err instanceof BadLifecycleTransitionError || err instanceof SessionClosedError) {
            return; // an invite seen again after a restart, already answered
          }
          this.log(`hubd: serve: answering the invite to ${id}: ${describe(err)}`);
        }
      })(),
    );
  }

  /** Hands a turn to its session's worker, unless that turn (or a later one) was already taken. */
  private dispatch(d: Delivery): void {
    const e = d.envelope;
    if (!e) {
      return;
    }
    const id = e.sessionId;
    let w = this.sessions.get(id);
    if (!w) {
      w = { last: 0, running: false, ended: false };
      this.sessions.set(id, w);
    }
    if (w.ended || e.seq <= w.last) {
      return;
    }
    w.last = e.seq;
    w.pending = d;
    if (!w.running) {
      w.running = true;
      this.track(this.work(id, w));
    }
  }

  /**
   * Records that a handler waiting in session id (Turn.delegate, Turn.ask,
   * Task.wait) took the turn begun at seq itself: that turn, told by the
   * stream or by pendingTurns, does not start the handler again.
   */
  private consume(id: string, seq: number): void {
    const w = this.sessions.get(id);
    if (!w) {
      return;
    }
    w.last = Math.max(w.last, seq);
    if (w.pending?.envelope && w.pending.envelope.seq <= w.last) {
      w.pending = undefined;
    }
  }

  /** Forgets an ended session: its pending turn is dropped and its running handler aborted. */
  private end(id: string): void {
    this.verdicts.delete(id);
    const w = this.sessions.get(id);
    if (!w) {
      return;
    }
    w.ended = true;
    w.pending = undefined;
    w.abort?.abort();
    if (!w.running) {
      this.sessions.delete(id);
    }
  }

  /** Runs a session's turns one at a time until none is pending. */
  private async work(id: string, w: Worker): Promise<void> {
    for (;;) {
      const d = w.pending;
      w.pending = undefined;
      if (!d || this.signal.aborted) {
        w.running = false;
        w.abort = undefined;
        if (w.ended) {
          this.sessions.delete(id);
        }
        return;
      }
      const ac = new AbortController();
      const onStop = () => ac.abort();
      this.signal.addEventListener("abort", onStop, { once: true });
      w.abort = ac;
      try {
        await this.turn(d, ac.signal);
      } catch (err) {
        // Never let a turn end the session's worker: its next turn would
        // wait for ever.
        this.log(`hubd: serve: turn in session ${id}: ${describe(err)}`);
      } finally {
        this.signal.removeEventListener("abort", onStop);
        ac.abort();
      }
    }
  }

  /**
   * Runs the handler on one turn and posts its reply, in the trace of the
   * envelope that began the turn: the calls the handler makes and its reply
   * continue it.
   */
  private turn(d: Delivery, signal: AbortSignal): Promise<void> {
    return continueTrace(d.envelope?.traceparent ?? "", () => this.runTurn(d, signal));
  }

  private async runTurn(d: Delivery, signal: AbortSignal): Promise<void> {
    const e = d.envelope ?? Envelope.fromPartial({});
    const id = e.sessionId;
    if (!(await this.serves(id, signal))) {
      return;
    }
    const t = newTurn(this.c, id, e, signal, (seq) => this.consume(id, seq));
    const v = this.opts.view === undefined ? { name: "default" } : this.opts.view;
    if (v && d.view) {
      t.view = d.view; // the turn notice carried it
    } else if (v) {
      try {
        t.view = await this.retry(() => this.c.view(id, { name: v.name, window: v.window ?? 0, signal }), signal);
      } catch (err) {
        this.stale(e, "view", err);
        return;
      }
    }
    let result: HandlerResult;
    try {
      result = await this.h(t);
    } catch (err) {
      if (err instanceof CanceledError && signal.aborted) {
        return; // a wait given up as serve stopped or the session ended
      }
      this.log(`hubd: serve: handler for session ${id} (turn begun by seq ${e.seq}): ${describe(err)}`);
      return;
    }
    let env: Envelope | undefined;
    try {
      env = replyEnvelope(result);
    } catch (err) {
      this.log(`hubd: serve: reply in session ${id}: ${describe(err)}`);
      return;
    }
    if (!env) {
      return;
    }
    env.clientMsgId = turnMsgId(id, e.seq);
    env.causationId = e.id;
    env.traceparent = currentTrace()?.traceparent ?? ""; // the turn's trace: the next agent continues from it
    const reply = env;
    try {
      await this.retry(() => this.send(id, reply, signal), signal);
    } catch (err) {
      this.stale(e, "reply", err);
    }
  }

  /**
   * Whether serve serves session id: always without a session filter; with
   * one, as it answers, asked once per session (a second caller awaits the
   * first's answer).
   */
  private serves(id: string, signal: AbortSignal): Promise<boolean> {
    const keep = this.opts.sessionFilter;
    if (!keep) {
      return Promise.resolve(true);
    }
    let v = this.verdicts.get(id);
    if (!v) {
      v = (async () => {
        try {
          const s = await this.retry(() => this.c.getSession(id, { signal }), signal);
          return (await keep(s, signal)) === true;
        } catch (err) {
          if (signal.aborted) {
            this.verdicts.delete(id); // undecided: ask again next time
          } else {
            this.log(`hubd: serve: session ${id} not served: the session filter: ${describe(err)}`);
          }
          return false;
        }
      })();
      this.verdicts.set(id, v);
    }
    return v;
  }

  /** Posts a reply once: over serve's stream while it has one, else as the client sends. */
  private async send(id: string, reply: Envelope, signal: AbortSignal): Promise<void> {
    const st = this.stream;
    if (st && !st.ended && Envelope.encode(reply).finish().length <= MaxStreamEnvelope) {
      await st.send(id, reply, { signal });
      return;
    }
    await this.c.sendEnvelope(id, reply, 1, { signal });
  }

  /** Logs a failed step of a turn: quietly for a turn that had passed. */
  private stale(e: Envelope, step: string, err: unknown): void {
    if (err instanceof CanceledError) {
      return;
    }
    if (err instanceof OutOfTurnError || err instanceof SessionClosedError || err instanceof SessionNotOpenError) {
      this.log(`hubd: serve: stale turn in session ${e.sessionId} (begun by seq ${e.seq}) ignored: ${describe(err)}`);
      return;
    }
    this.log(`hubd: serve: ${step} in session ${e.sessionId} (turn begun by seq ${e.seq}): ${describe(err)}`);
  }

  /** Calls f until it succeeds, fails for good, or the signal aborts. */
  private async retry<T>(f: () => Promise<T>, signal: AbortSignal = this.signal): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await f();
      } catch (err) {
        if (!retryable(err) || !(await sleep(backoffDelay(attempt, this.base, this.max), signal))) {
          throw err;
        }
      }
    }
  }
}

/** The envelope of a handler's result; undefined for one that says nothing. */
export function replyEnvelope(r: HandlerResult): Envelope | undefined {
  if (r === undefined || r === null || r === "") {
    return undefined;
  }
  if (typeof r === "string") {
    return Envelope.fromPartial({ type: EventType.Text, text: { text: r } });
  }
  if (r instanceof Packet) {
    return Envelope.fromPartial({ type: EventType.Packet, packet: r.proto() });
  }
  if (r.packet) {
    return Envelope.fromPartial({ type: EventType.Packet, packet: r.packet.proto() });
  }
  if (r.text) {
    return Envelope.fromPartial({ type: EventType.Text, text: { text: r.text } });
  }
  return undefined;
}
