// Delegation, questions and the call tree: agentsdk/calls.go; the protocol
// is docs/DELEGATION.md.

import { status } from "@grpc/grpc-js";

import type { CallOptions, Client, OpenOptions, SendOptions, Session, Ack } from "./client.js";
import { closeReason, ends, EventType, isTurn, Packet, textOf, turnMsgId } from "./envelope.js";
import { CanceledError, HubError, MalformedError, SessionClosedError } from "./errors.js";
import {
  Envelope,
  Question,
  type Answer,
  type DelegationResult,
  type Option,
  type TaskProgress,
} from "./gen/hub.js";
import { TurnStream } from "./delta.js";
import type { Turn } from "./serve.js";

/** Delegation modes (Client.delegate). */
export const DelegateMode = {
  /** Holds the delegator's turn until the children are done. */
  Blocking: "blocking",
  /** Leaves the turn as it is; the children run behind task handles. */
  Background: "background",
} as const;

/** What releases a blocking delegation's turn: every child, or the first. */
export const AwaitChildren = {
  All: "all",
  Any: "any",
} as const;

/** Makes a background child's result give the delegator a turn (by default a notice only). */
export const NotifyTurn = "turn";

/** Task states (TaskStatus.state). */
export const TaskState = {
  Running: "running",
  Closed: "closed",
  Expired: "expired",
  Cancelled: "cancelled",
} as const;

/** The close reason of a cancelled task. */
export const CancelReason = "cancelled";

/**
 * A question was withdrawn before it was answered: its session ended, or its
 * deadline closed it (thrown by Turn.ask; not a reason of the hub, which
 * writes a question_closed envelope).
 */
export class WithdrawnError extends HubError {}

/** A delegation from a session where it is the caller's turn (Client.delegate). */
export interface DelegateOptions extends CallOptions {
  /** The children to open, each with the caller as creator; a child's task is its first input. */
  children: OpenOptions[];
  /** DelegateMode.Blocking (default) or DelegateMode.Background. */
  mode?: string;
  /** AwaitChildren.All (default) or AwaitChildren.Any, for a blocking delegation. */
  await?: string;
  /** "" or NotifyTurn, for a background delegation. */
  notify?: string;
  /** Makes the delegation idempotent: a retry returns the first one's tasks. Generated when unset. */
  clientMsgId?: string;
}

/** Options of a wait: a signal, and a timeout of the whole wait. */
export type WaitOptions = CallOptions;

/** What Task.poll saw. */
export interface TaskStatus {
  /** TaskState.Running, Closed, Expired or Cancelled. */
  state: string;
  /** The child's state as the hub answered. */
  session: Session;
  /** The child's task_progress reports, oldest first. */
  progress: TaskProgress[];
  /** The result posted into the parent, once done. */
  result?: DelegationResult;
  /** Whether the task is over. */
  done: boolean;
}

/** Tells serve that a turn begun at seq was taken by a waiting handler. */
type Consume = ((seq: number) => void) | undefined;

/**
 * The handle of a delegated child session: its id, its parent and the
 * delegation that opened it. It works the same in both modes and after a
 * restart (Client.task rebuilds one from the child's id).
 */
export class Task {
  /** @internal */
  constructor(
    /** The client that delegated. */
    readonly client: Client,
    /** The child session's id. */
    readonly id: string,
    /** The delegating session. */
    readonly parent: string,
    /** The id of the delegation envelope in the parent. */
    readonly delegationId: string,
    /** DelegateMode.Blocking or DelegateMode.Background. */
    readonly mode: string,
    /** @internal The parent's seq to look for results from. */
    readonly from: number,
    /** @internal */
    public consume?: Consume,
  ) {}

  /** The task's state, progress reports and result: reads only, no turn is used. */
  async poll(opts: CallOptions = {}): Promise<TaskStatus> {
    const s = await this.client.getSession(this.id, opts);
    const progress: TaskProgress[] = [];
    for await (const e of scan(this.client, this.id, 1, opts)) {
      if (e.taskProgress) {
        progress.push(e.taskProgress);
      }
    }
    const st: TaskStatus = { state: taskState(s), session: s, progress, done: s.ended };
    if (!s.ended) {
      return st;
    }
    // The result is written with the child's end: it is in the log now.
    for await (const e of scan(this.client, this.parent, this.from, opts)) {
      if (e.delegationResult?.childSessionId === this.id) {
        st.result = e.delegationResult;
        break;
      }
    }
    return st;
  }

  /**
   * Sends text into the task's session for its next speaker: as the
   * delegator's turn when the session expects it to speak (a conversation
   * with the delegate), else as a message (not a turn) that its next speaker
   * sees in its view.
   */
  async message(text: string, opts: SendOptions = {}): Promise<Ack> {
    const s = await this.client.getSession(this.id, opts);
    const asTurn = s.expected.includes(this.client.name);
    const e = asTurn ? { type: EventType.Text, text: { text } } : { type: EventType.Message, message: { text } };
    return this.client.send(this.id, e, opts);
  }

  /**
   * Sends text (as message) and returns the next turn taken in the task's
   * session after it; rejects with SessionClosedError if the session ends
   * first. opts.timeoutMs bounds the whole call.
   */
  async messageAndWait(text: string, opts: SendOptions = {}): Promise<Envelope> {
    const ack = await this.message(text, opts);
    let end: Envelope | undefined;
    for await (const e of this.client.follow(this.id, ack.seq + 1, { signal: opts.signal, timeoutMs: opts.timeoutMs })) {
      if (isTurn(e) && e.from !== this.client.name) {
        return e;
      }
      end = e;
    }
    throwIfAborted("message", opts.signal);
    throw new SessionClosedError("message", status.FAILED_PRECONDITION, "SESSION_CLOSED", `task ${this.id} ended (${closeReason(end)}) before its next turn`);
  }

  /**
   * Closes the task's session with reason "cancelled"; its result is posted
   * into the parent. Only the delegator (the child's creator) or an operator
   * may cancel; cancelling a task that is over is not an error.
   */
  async cancel(opts: CallOptions = {}): Promise<void> {
    try {
      await this.client.closeSession(this.id, CancelReason, opts);
    } catch (err) {
      if (!(err instanceof SessionClosedError)) {
        throw err;
      }
    }
  }

  /**
   * The task's result once it is posted into the parent. It reads the
   * parent's log, so a hub restart or a broken connection does not lose it;
   * it rejects with SessionClosedError if the parent ends first. A task from
   * Turn.spawn tells serve that the turn its result gives (turnOnResult) was
   * taken by this wait.
   */
  async wait(opts: WaitOptions = {}): Promise<DelegationResult> {
    return (await awaitResults(this.client, this.parent, this.from, [this], 1, this.consume, opts))[0];
  }
}

/** A task's state from its child session's. */
function taskState(s: Session): string {
  if (!s.ended) {
    return TaskState.Running;
  }
  if (s.state === "EXPIRED") {
    return TaskState.Expired;
  }
  return s.closeReason === CancelReason ? TaskState.Cancelled : TaskState.Closed;
}

/** The caller's envelopes of a session from seq from, page by page. */
async function* scan(c: Client, sessionId: string, from: number, opts: CallOptions): AsyncGenerator<Envelope> {
  const page = 1000;
  for (;;) {
    const envs = await c.readLog(sessionId, from, page, opts);
    yield* envs;
    if (envs.length < page) {
      return;
    }
    from = envs[envs.length - 1].seq + 1;
  }
}

/**
 * Follows parent from seq from until n results of the tasks' children are
 * in, and tells consume the seq of the last one (the envelope that gives the
 * delegator its turn back, if any).
 */
async function awaitResults(
  c: Client,
  parent: string,
  from: number,
  tasks: Task[],
  n: number,
  consume: Consume,
  opts: WaitOptions,
): Promise<DelegationResult[]> {
  const ids = new Set(tasks.map((t) => t.id));
  const out: DelegationResult[] = [];
  let end: Envelope | undefined;
  for await (const e of c.follow(parent, from, opts)) {
    const r = e.delegationResult;
    if (r && ids.has(r.childSessionId)) {
      out.push(r);
      if (out.length === n) {
        consume?.(e.seq);
        return out;
      }
    }
    if (ends(e)) {
      end = e;
    }
  }
  throwIfAborted("wait", opts.signal);
  throw new SessionClosedError("wait", status.FAILED_PRECONDITION, "SESSION_CLOSED", `session ${parent} ended (${closeReason(end)}) before the results`);
}

/** Follows a session from seq from until the question is answered (or withdrawn: WithdrawnError). */
async function awaitAnswer(c: Client, sessionId: string, from: number, questionId: string, consume: Consume, opts: WaitOptions): Promise<Answer> {
  let end: Envelope | undefined;
  for await (const e of c.follow(sessionId, from, opts)) {
    if (e.answer?.questionId === questionId) {
      consume?.(e.seq);
      return e.answer;
    }
    if (e.questionClosed?.questionId === questionId) {
      throw new WithdrawnError("ask", status.FAILED_PRECONDITION, "", `question ${JSON.stringify(questionId)} withdrawn (${e.questionClosed.reason})`);
    }
    if (ends(e)) {
      end = e;
    }
  }
  throwIfAborted("ask", opts.signal);
  throw new SessionClosedError("ask", status.FAILED_PRECONDITION, "SESSION_CLOSED", `session ${sessionId} ended (${closeReason(end)}) before the answer`);
}

/** A wait that ended because its signal aborted is a CanceledError. */
function throwIfAborted(op: string, signal: AbortSignal | undefined): void {
  if (signal?.aborted) {
    throw new CanceledError(op, status.CANCELLED, "", "the wait was cancelled");
  }
}

/** The client, parent and first seq of tasks of one session. */
function commonParent(tasks: Task[]): { c: Client; parent: string; from: number } {
  if (tasks.length === 0) {
    throw new MalformedError("await", status.INVALID_ARGUMENT, "MALFORMED", "await of no task");
  }
  const first = tasks[0];
  let from = first.from;
  for (const t of tasks.slice(1)) {
    if (t.parent !== first.parent || t.client !== first.client) {
      throw new MalformedError(
        "await",
        status.INVALID_ARGUMENT,
        "MALFORMED",
        `await of tasks of different sessions (${first.parent}, ${t.parent}): wait for each`,
      );
    }
    from = Math.min(from, t.from);
  }
  return { c: first.client, parent: first.parent, from };
}

/**
 * The results of every task (of one parent session), in the order they
 * closed. Blocking tasks of one delegation release the delegator's turn
 * when the last is done; for background tasks it only waits.
 */
export async function awaitAll(tasks: Task[], opts: WaitOptions = {}): Promise<DelegationResult[]> {
  const { c, parent, from } = commonParent(tasks);
  return awaitResults(c, parent, from, tasks, tasks.length, tasks[0].consume, opts);
}

/** The first result among the tasks (of one parent session); the others go on. */
export async function awaitAny(tasks: Task[], opts: WaitOptions = {}): Promise<DelegationResult> {
  const { c, parent, from } = commonParent(tasks);
  return (await awaitResults(c, parent, from, tasks, 1, tasks[0].consume, opts))[0];
}

/** A question for Turn.ask: its text, and the rest of a Question message. */
export type QuestionInput = Partial<Question> & { text: string };

/** An option of a question: an id (its own label), or an Option. */
export type OptionInput = string | Option;

/** Options of Turn.spawn. */
export interface SpawnOptions extends CallOptions {
  /** The task's result gives the agent a turn in this session (by default it is a notice only). */
  turnOnResult?: boolean;
}

/**
 * A Turn for a trigger of your own, outside serve (a loop of yours over
 * pendingTurns, say): delegate, spawn, ask and passCaller work as in a
 * serve handler, without serve's bookkeeping (a turn the hub gives back
 * after a wait is told again to a serve running beside it). signal ends its
 * waits (CanceledError).
 */
export function turnOf(c: Client, trigger: Envelope, opts: { signal?: AbortSignal } = {}): Turn {
  return newTurn(c, trigger.sessionId, trigger, opts.signal ?? new AbortController().signal, undefined);
}

/** @internal A serve turn with the delegation and question calls. */
export function newTurn(c: Client, sessionId: string, trigger: Envelope, signal: AbortSignal, consume: Consume): Turn {
  let ops = 0;
  const opId = (kind: string) => `${turnMsgId(sessionId, trigger.seq)}/${kind}${++ops}`;
  const waitOpts = (o: WaitOptions): WaitOptions => ({ signal: o.signal ?? signal, timeoutMs: o.timeoutMs });
  const delegate = async (children: OpenOptions[], mode: string, awaitMode: string, notify: string, o: CallOptions) => {
    const tasks = await c.delegate(sessionId, {
      children,
      mode,
      await: awaitMode,
      notify,
      clientMsgId: opId("delegate"),
      signal: o.signal ?? signal,
      timeoutMs: o.timeoutMs,
    });
    for (const t of tasks) {
      t.consume = consume;
    }
    return tasks;
  };
  const t: Turn = {
    sessionId,
    trigger,
    client: c,
    signal,
    text: () => textOf(trigger),
    stream: () => new TurnStream(c, sessionId, trigger),
    resumed: () => trigger.type === EventType.DelegationResult || trigger.type === EventType.Answer,
    passCaller: (agent: string) => new Packet("").passCaller(agent),
    async delegate(child: OpenOptions, o: WaitOptions = {}) {
      return (await t.delegateAll([child], o))[0];
    },
    async delegateAll(children: OpenOptions[], o: WaitOptions = {}) {
      const tasks = await delegate(children, DelegateMode.Blocking, AwaitChildren.All, "", o);
      return awaitAll(tasks, waitOpts(o));
    },
    async delegateAny(children: OpenOptions[], o: WaitOptions = {}) {
      const tasks = await delegate(children, DelegateMode.Blocking, AwaitChildren.Any, "", o);
      return awaitAny(tasks, waitOpts(o));
    },
    async spawn(child: OpenOptions, o: SpawnOptions = {}) {
      return (await delegate([child], DelegateMode.Background, "", o.turnOnResult ? NotifyTurn : "", o))[0];
    },
    async ask(question: string | QuestionInput, o: WaitOptions & { options?: OptionInput[]; answerer?: string; multiple?: boolean } = {}) {
      const q = Question.fromPartial(typeof question === "string" ? { text: question } : question);
      for (const opt of o.options ?? []) {
        q.options.push(typeof opt === "string" ? { id: opt, label: opt } : opt);
      }
      if (o.answerer) {
        q.answerer = o.answerer;
      }
      if (o.multiple) {
        q.multiple = true;
      }
      if (!q.questionId) {
        q.questionId = opId("q");
      }
      const ack = await c.send(
        sessionId,
        { type: EventType.Question, question: q },
        { clientMsgId: opId("ask"), causationId: trigger.id, signal: o.signal ?? signal },
      );
      return awaitAnswer(c, sessionId, ack.seq + 1, q.questionId, consume, waitOpts(o));
    },
  };
  return t;
}
