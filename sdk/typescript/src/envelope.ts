// Envelopes, packets and the constants of the hub: agentsdk/envelope.go.

import type { Envelope, Packet as PacketMessage, Usage } from "./gen/hub.js";
import { ContextUpdate as ContextUpdateMessage, Packet as PacketCodec, Usage as UsageCodec } from "./gen/hub.js";

/**
 * Event types of the hub (Envelope.type). Texts and packets are turns;
 * context sets are not; the lifecycle types are written by the hub. Any other
 * string is a custom type (Client.sendEvent): logged and delivered, never a
 * turn.
 */
export const EventType = {
  Text: "text",
  Packet: "packet",
  ContextSet: "context_set",
  Invite: "session_invite",
  InviteAck: "session_invite_ack",
  InviteReject: "session_invite_reject",
  Opened: "session_opened",
  Closed: "session_closed",
  Expired: "session_expired",
  Violation: "expectation_violated",
  Question: "question",
  Answer: "answer",
  /** A question withdrawn, by the hub. */
  QuestionClosed: "question_closed",
  /** Children opened, by the hub. */
  Delegation: "delegation",
  /** A child's result, by the hub. */
  DelegationResult: "delegation_result",
  TaskProgress: "task_progress",
  /** A tool an agent called (not a turn). */
  ToolCall: "tool_call",
  /** What the tool returned (not a turn). */
  ToolResult: "tool_result",
  /** A note for a session's next speaker (not a turn). */
  Message: "message",
} as const;

/** Routing kinds of a packet (Routing.kind). */
export const RoutingKind = {
  /** The graph decides ("" too). */
  Text: "text",
  /** To the target, or by the graph on the tool. */
  Handoff: "handoff",
  /** End the session with the reason. */
  Finish: "finish",
  /** To the session's supervisor. */
  Escalate: "escalate",
  /** The turn and the duty to answer the session's caller, to the target. */
  PassCaller: "pass_caller",
} as const;

/** The hub's close reason of a finish without one. */
const defaultFinishReason = "finished";

/**
 * What an envelope says in words: a text's text, a packet's body, a
 * question's or an answer's text, a delegation result's summary; "" for
 * anything else.
 */
export function textOf(e: Envelope | undefined): string {
  if (!e) {
    return "";
  }
  return e.text?.text ?? e.packet?.body ?? e.question?.text ?? e.answer?.text ?? e.delegationResult?.summary ?? "";
}

/** Whether an envelope is substantive: a text or a packet. */
export function isTurn(e: Envelope | undefined): boolean {
  return e?.type === EventType.Text || e?.type === EventType.Packet;
}

/** Whether an envelope ends its session (closed or expired). */
export function ends(e: Envelope | undefined): boolean {
  return e?.type === EventType.Closed || e?.type === EventType.Expired;
}

/** Why a session_closed or session_expired envelope ended its session; "" for any other. */
export function closeReason(e: Envelope | undefined): string {
  return ends(e) ? (e?.ended?.reason ?? "") : "";
}

/**
 * The stored form of a value (a context variable, a knob): the value as
 * JSON reads it back, as Go's agentsdk.Value does through encoding/json
 * (a Date becomes its ISO string, undefined object members are dropped). A
 * number that is not finite, a bigint or a function is refused.
 */
export function jsonValue(what: string, v: unknown): unknown {
  if (v === undefined) {
    return null;
  }
  const text = JSON.stringify(v, (_k, x: unknown) => {
    if (typeof x === "number" && !Number.isFinite(x)) {
      throw new TypeError(`hubd: ${what}: unsupported value ${x}`);
    }
    if (typeof x === "bigint" || typeof x === "function" || typeof x === "symbol") {
      throw new TypeError(`hubd: ${what}: unsupported type ${typeof x}`);
    }
    return x;
  });
  return JSON.parse(text) as unknown;
}

/** jsonValues is jsonValue of each member of a map. */
export function jsonValues(what: string, m: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(m ?? {})) {
    out[k] = jsonValue(`${what} ${JSON.stringify(k)}`, v);
  }
  return out;
}

/** Deletes, then sets, session context variables. */
export interface ContextUpdate {
  /** Variables to set, to any JSON value. */
  set?: Record<string, unknown>;
  /** Variables to delete. */
  delete?: string[];
}

/** The hub's message of a context update. */
export function contextUpdateProto(u: ContextUpdate) {
  return ContextUpdateMessage.fromPartial({
    set: jsonValues("context variable", u.set),
    delete: [...(u.delete ?? [])],
  });
}

/**
 * One agent round: a body, a routing decision, context updates applied
 * before routing, and token usage. Build one with `new Packet(body)` (or
 * newPacket) and its methods:
 *
 *     new Packet("Over to billing.").handoff("transfer_to_billing", "", "a refund")
 *     new Packet("Done.").set("approved", true).finish("approved", "shipped")
 */
export class Packet {
  private readonly pb: PacketMessage;
  private setVars?: Record<string, unknown>;

  /** A packet with body and text routing (the graph decides). */
  constructor(body = "") {
    this.pb = PacketCodec.fromPartial({ body });
  }

  /**
   * Routes the turn by tool (tool_called rules see it) and/or directly to
   * target; at least one must be set.
   */
  handoff(tool: string, target = "", reason = ""): this {
    this.pb.routing = { kind: RoutingKind.Handoff, tool, target, reason, summary: "" };
    return this;
  }

  /** Ends the session with reason ("" is "finished") and summary. */
  finish(reason = "", summary = ""): this {
    this.pb.routing = { kind: RoutingKind.Finish, tool: "", target: "", reason: reason || defaultFinishReason, summary };
    return this;
  }

  /**
   * Hands the turn, and the duty to answer this child session's caller, to
   * target, another participant: its finish closes the session and answers
   * the parent.
   */
  passCaller(target: string): this {
    this.pb.routing = { kind: RoutingKind.PassCaller, tool: "", target, reason: "", summary: "" };
    return this;
  }

  /** Hands the turn to the session's supervisor with reason. */
  escalate(reason = ""): this {
    this.pb.routing = { kind: RoutingKind.Escalate, tool: "", target: "", reason, summary: "" };
    return this;
  }

  /**
   * Sets context variable key to value (any JSON value) before the packet
   * is routed, so a rule evaluated on this turn sees it.
   */
  set(key: string, value: unknown): this {
    this.setVars ??= {};
    this.setVars[key] = value;
    return this;
  }

  /** Deletes context variables before the packet is routed. */
  delete(...keys: string[]): this {
    this.pb.contextUpdates ??= { set: {}, delete: [] };
    this.pb.contextUpdates.delete.push(...keys);
    return this;
  }

  /** Records the round's token usage and cost. */
  withUsage(u: Partial<Usage>): this {
    this.pb.usage = UsageCodec.fromPartial(u);
    return this;
  }

  /** The packet as the hub's message; throws for a context value that does not encode. */
  proto(): PacketMessage {
    const out = PacketCodec.fromPartial(this.pb);
    if (this.setVars) {
      out.contextUpdates ??= { set: {}, delete: [] };
      out.contextUpdates.set = jsonValues("context variable", this.setVars);
    }
    return out;
  }
}

/** A packet with body: `new Packet(body)`. */
export function newPacket(body = ""): Packet {
  return new Packet(body);
}

/**
 * The client message id Client.serve gives the reply to the turn begun by seq in a
 * session: the same for every retry, so the reply is written once.
 */
export function turnMsgId(sessionId: string, seq: number): string {
  return `turn/${sessionId}/${seq}`;
}
