// Forks and operator actions: agentsdk/fork.go, steer.go. Client.fork and
// Client.steer (client.ts) send the requests built here.

import { contextUpdateProto } from "./envelope.js";
import { ForkRequest, OperatorAction, SteerRequest, TimerChange } from "./gen/hub.js";

/** The edits of a fork (Client.fork), each optional. */
export interface ForkEdits {
  /** Context variables to set in the fork, to any JSON value (after delete). */
  set?: Record<string, unknown>;
  /** Context variables to delete in the fork. */
  delete?: string[];
  /** The participant to speak next in the fork (workflow sessions); unset keeps whoever the source expected. */
  nextSpeaker?: string;
  /** Labels added to the source's ("forked_from" is set by the hub). */
  labels?: Record<string, string>;
}

/**
 * An operator action (Client.steer): exactly one of its fields, setContext
 * and unsetContext together counting as one (delete, then set). Build one
 * with setContextAction, unsetContextAction, nextSpeakerAction,
 * releaseTurnAction, extendTimerAction or cancelTimerAction, or write it.
 */
export interface SteerAction {
  /** Set context variables, to any JSON value. */
  setContext?: Record<string, unknown>;
  /** Delete context variables (each must be set). */
  unsetContext?: string[];
  /** This participant speaks next, once, over the graph's choice (workflow sessions). */
  nextSpeaker?: string;
  /** Release the held turn (a question's or a blocking delegation's) with this result as its answer. */
  releaseResult?: string;
  /** The running period of the expectation name falls due byMs later. */
  extendTimer?: { name: string; byMs: number };
  /** The running period of the expectation named does not fire. */
  cancelTimer?: string;
}

/** The operator action that sets context variables. */
export function setContextAction(vars: Record<string, unknown>): SteerAction {
  return { setContext: vars };
}

/** The operator action that deletes context variables (each must be set). */
export function unsetContextAction(...keys: string[]): SteerAction {
  return { unsetContext: keys };
}

/** The operator action that makes agent the next speaker, once. */
export function nextSpeakerAction(agent: string): SteerAction {
  return { nextSpeaker: agent };
}

/** The operator action that releases the held turn with result. */
export function releaseTurnAction(result: string): SteerAction {
  return { releaseResult: result };
}

/** The operator action that extends the running period of the expectation name by byMs. */
export function extendTimerAction(name: string, byMs: number): SteerAction {
  return { extendTimer: { name, byMs } };
}

/** The operator action that cancels the running period of the expectation named. */
export function cancelTimerAction(name: string): SteerAction {
  return { cancelTimer: name };
}

/** The ForkRequest of Client.fork: context edits only when there are some. */
export function forkRequest(sessionId: string, atSeq: number, e: ForkEdits): ForkRequest {
  const req = ForkRequest.fromPartial({ sessionId, atSeq, nextSpeaker: e.nextSpeaker ?? "", labels: { ...e.labels } });
  if (Object.keys(e.set ?? {}).length > 0 || (e.delete ?? []).length > 0) {
    req.context = contextUpdateProto({ set: e.set, delete: e.delete });
  }
  return req;
}

const actions = "setContext/unsetContext, nextSpeaker, releaseResult, extendTimer or cancelTimer";

/** The SteerRequest of Client.steer; a TypeError names the actions given when there are none or several. */
export function steerRequest(sessionId: string, reason: string, a: SteerAction): SteerRequest {
  const given: string[] = [];
  const action = OperatorAction.fromPartial({ reason });
  if (a.setContext !== undefined || a.unsetContext !== undefined) {
    given.push("setContext/unsetContext");
    action.context = contextUpdateProto({ set: a.setContext, delete: a.unsetContext });
  }
  if (a.nextSpeaker !== undefined) {
    given.push("nextSpeaker");
    action.nextSpeaker = a.nextSpeaker;
  }
  if (a.releaseResult !== undefined) {
    given.push("releaseResult");
    action.releaseResult = a.releaseResult;
  }
  if (a.extendTimer !== undefined) {
    given.push("extendTimer");
    action.timer = TimerChange.fromPartial({ name: a.extendTimer.name, extend: duration(a.extendTimer.byMs) });
  }
  if (a.cancelTimer !== undefined) {
    given.push("cancelTimer");
    action.timer = TimerChange.fromPartial({ name: a.cancelTimer, cancel: true });
  }
  if (given.length !== 1) {
    throw new TypeError(`hubd: steer takes exactly one action (${actions}), got ${given.length ? given.join(", ") : "none"}`);
  }
  return SteerRequest.fromPartial({ sessionId, action });
}

function duration(ms: number) {
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.round((ms - seconds * 1000) * 1e6) };
}
