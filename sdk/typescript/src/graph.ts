// Workflow graphs: the builders of the Go SDK (agentsdk/graph.go), writing
// the same JSON values (sdk/testdata/graphs is the contract, on meaning: the
// hub keeps a graph in its canonical form, however it is spelled).

/** The version of the graph JSON format this SDK writes. */
const graphVersion = 1;

/** The hub's reason for a terminate target without one. */
const defaultTerminateReason = "terminated";

/** Arguments of a condition or a target: any JSON values. */
export type Args = Record<string, unknown>;

/** A named node of a graph with its args: a condition or a target. */
abstract class Node {
  constructor(
    /** The name the hub's registry knows it by ("from_speaker", "agent", ...). */
    readonly name: string,
    /** Its arguments; undefined encodes as {}. */
    readonly args?: Args,
  ) {}

  /** The node in its JSON form, {"name": ..., "args": {...}} (JSON.stringify writes it). */
  toJSON(): { name: string; args: Args } {
    return { name: this.name, args: this.args ?? {} };
  }
}

/**
 * A condition of a transition, as the hub's registry knows it. The
 * functions below build the hub's built-in conditions; customCondition
 * builds any other.
 */
export class Condition extends Node {
  /** Tells a condition from a target. */
  readonly kind = "condition" as const;
}

/**
 * A target of a transition: what follows when its condition holds. The
 * functions below build the hub's built-in targets; customTarget builds any
 * other.
 */
export class Target extends Node {
  /** Tells a target from a condition. */
  readonly kind = "target" as const;
}

/** One rule: when `when` holds, `then` picks what follows. */
export interface Transition {
  when: Condition;
  then: Target;
  priority: number;
}

/**
 * A workflow session's transition graph, in the hub's JSON form:
 *
 *     {"version": 1, "initial_speaker": "a",
 *      "transitions": [{"when": {...}, "then": {...}, "priority": 0}],
 *      "default_target": {...}, "max_turns": 3, "supervisor": "lead"}
 *
 * After each turn the hub evaluates the transitions in priority order,
 * lowest first, ties in list order; the first whose condition holds (and
 * whose target resolves) decides, otherwise the default does. Build one with
 * `new Graph(first)` and its methods, a factory (sequence, roundRobin,
 * supervisor), or Graph.fromJSON. The hub validates it at open
 * (INVALID_GRAPH, InvalidGraphError).
 */
export class Graph {
  /** The rules. */
  transitions: Transition[] = [];
  /** Decides when no rule does; undefined means terminate "after_work". */
  defaultTarget?: Target;
  /** Closes the session with "max_turns" after that many turns; 0: no cap. */
  maxTurns = 0;
  /**
   * Who escalations go to, unless the session's "supervisor" knob names
   * another; "": the session's creator.
   */
  supervisor = "";

  /** An empty graph whose first speaker is initialSpeaker. */
  constructor(
    /** Speaks first once the session opens. */
    public initialSpeaker = "",
  ) {}

  /** Appends the rule "when → then" at priority 0; returns this graph. */
  on(when: Condition, then: Target): this {
    return this.onPriority(0, when, then);
  }

  /** Appends the rule "when → then" at priority p (lower runs first); returns this graph. */
  onPriority(p: number, when: Condition, then: Target): this {
    this.transitions.push({ when, then, priority: p });
    return this;
  }

  /** Sets the default target; returns this graph. */
  otherwise(t: Target): this {
    this.defaultTarget = t;
    return this;
  }

  /** Sets the turn cap (0: none); returns this graph. */
  withMaxTurns(n: number): this {
    this.maxTurns = n;
    return this;
  }

  /**
   * The graph's JSON (compact), the same value as the Go SDK writes; `hubd
   * graph validate` reads it. A number that is not finite throws.
   */
  json(): string {
    const def = this.defaultTarget ?? new Target("terminate", { reason: "after_work" });
    const g = {
      version: graphVersion,
      initial_speaker: this.initialSpeaker,
      transitions: this.transitions.map((t) => ({ when: t.when, then: t.then, priority: t.priority })),
      default_target: def,
      max_turns: this.maxTurns > 0 ? this.maxTurns : null,
      ...(this.supervisor !== "" ? { supervisor: this.supervisor } : {}),
    };
    return JSON.stringify(g, finite);
  }

  /** The graph as plain JSON values: what an OpenRequest carries as its graph. */
  toJSON(): Record<string, unknown> {
    return JSON.parse(this.json()) as Record<string, unknown>;
  }

  /**
   * Reads a graph from its JSON text (or from JSON already parsed). Args are
   * kept as read (the nested conditions of not, all_of and any_of as
   * Conditions), so the graph writes back the same JSON value; the hub
   * checks names and args at open.
   */
  static fromJSON(json: string | object): Graph {
    const v: unknown = typeof json === "string" ? JSON.parse(json) : json;
    if (!isObject(v)) {
      throw new SyntaxError("graph: not a JSON object");
    }
    const version = v.version === undefined || v.version === null ? undefined : Number(v.version);
    if (version !== undefined && version !== graphVersion && version !== 0) {
      throw new SyntaxError(`graph: version ${version} is not supported`);
    }
    const g = new Graph(typeof v.initial_speaker === "string" ? v.initial_speaker : "");
    const ts = Array.isArray(v.transitions) ? v.transitions : [];
    ts.forEach((t: unknown, i: number) => {
      if (!isObject(t) || !isObject(t.when) || !isObject(t.then)) {
        throw new SyntaxError(`graph: transitions[${i}]: missing "when" or "then"`);
      }
      const [wn, wa] = readNode(t.when);
      const [tn, ta] = readNode(t.then);
      g.onPriority(t.priority === undefined ? 0 : Number(t.priority), new Condition(wn, wa), new Target(tn, ta));
    });
    if (isObject(v.default_target)) {
      const [n, a] = readNode(v.default_target);
      g.defaultTarget = new Target(n, a);
    }
    if (v.max_turns !== undefined && v.max_turns !== null) {
      g.maxTurns = Number(v.max_turns);
    }
    if (typeof v.supervisor === "string") {
      g.supervisor = v.supervisor;
    }
    return g;
  }
}

/** A JSON.stringify replacer that refuses what JSON cannot hold (it would write null). */
function finite(key: string, v: unknown): unknown {
  if (typeof v === "number" && !Number.isFinite(v)) {
    throw new TypeError(`graph: ${key || "a value"}: ${v} is not a JSON number`);
  }
  return v;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** readNode reads {"name", "args"}, with nested conditions as Conditions. */
function readNode(v: Record<string, unknown>): [string, Args | undefined] {
  const name = typeof v.name === "string" ? v.name : "";
  if (!isObject(v.args)) {
    return [name, undefined];
  }
  const args: Args = {};
  for (const [k, x] of Object.entries(v.args)) {
    if (k === "condition" && isObject(x)) {
      const [n, a] = readNode(x);
      args[k] = new Condition(n, a);
    } else if (k === "conditions" && Array.isArray(x) && x.every(isObject)) {
      args[k] = x.map((c) => new Condition(...readNode(c)));
    } else {
      args[k] = x;
    }
  }
  return [name, args];
}

/** A variadic list as Go passes it: none given is a nil slice (JSON null). */
function list<T>(xs: T[]): T[] | null {
  return xs.length === 0 ? null : xs;
}

// Conditions built into the hub.

/** Holds on every turn. */
export const always = (): Condition => new Condition("always");
/** Holds when agent took the turn. */
export const fromSpeaker = (agent: string): Condition => new Condition("from_speaker", { agent_id: agent });
/** Holds when the turn is a handoff packet naming tool. */
export const toolCalled = (tool: string): Condition => new Condition("tool_called", { tool_name: tool });
/** Holds when context variable key equals value (a missing key equals null). */
export const contextEquals = (key: string, value: unknown): Condition =>
  new Condition("context_equals", { key, value: value === undefined ? null : value });
/** Holds when context variable key equals one of values. */
export const contextIn = (key: string, ...values: unknown[]): Condition =>
  new Condition("context_in", { key, values: list(values) });
/** Holds when the numeric context variable key compares to value with op: "lt", "le", "gt", "ge", "eq" or "ne". */
export const contextCompare = (key: string, op: string, value: number): Condition =>
  new Condition("context_compare", { key, op, value });
/** Holds when every condition holds. */
export const allOf = (...conditions: Condition[]): Condition => new Condition("all_of", { conditions: list(conditions) });
/** Holds when at least one condition holds. */
export const anyOf = (...conditions: Condition[]): Condition => new Condition("any_of", { conditions: list(conditions) });
/** Holds when c does not. */
export const not = (c: Condition): Condition => new Condition("not", { condition: c });
/** Holds when the turn's text starts with "@agent". */
export const mentions = (agent: string): Condition => new Condition("mentions", { agent_id: agent });
/** Holds once n turns have been taken (this one included). */
export const turnCountAtLeast = (n: number): Condition => new Condition("turn_count_at_least", { n });
/** Holds when the turn's event type is t ("text" or "packet"). */
export const eventTypeIs = (t: string): Condition => new Condition("event_type", { type: t });
/** Names a condition registered in the hub by its operator. */
export const customCondition = (name: string, args?: Args): Condition => new Condition(name, args);

// Targets built into the hub.

/** Hands the turn to agent. */
export const toAgent = (agent: string): Target => new Target("agent", { agent_id: agent });
/** Hands the turn to the participant after the last speaker, in participant order, wrapping around (the hub's "round_robin"). */
export const toNextInOrder = (): Target => new Target("round_robin");
/** Gives the last speaker another turn. */
export const stay = (): Target => new Target("stay");
/** Hands the turn back to whoever opened the session. */
export const revertToInitiator = (): Target => new Target("revert_to_initiator");
/** Ends the session with reason ("" is the hub's "terminated"). */
export const terminate = (reason = ""): Target => new Target("terminate", { reason: reason || defaultTerminateReason });
/** Hands the turn to the session's supervisor (its creator unless the "supervisor" knob names another). */
export const toSupervisor = (): Target => new Target("supervisor");
/** Hands the turn to the participant named by a leading "@name" in the turn's text. */
export const toMentioned = (): Target => new Target("mentioned");
/** Hands the turn to the agent last handed to (sticky), or to fallback before any handoff ("" for none). */
export const toActiveAgent = (fallback = ""): Target =>
  fallback === "" ? new Target("active_agent") : new Target("active_agent", { fallback });
/** Names a target registered in the hub by its operator. */
export const customTarget = (name: string, args?: Args): Target => new Target(name, args);

// Factories: the same graphs as the hub's own and the Go SDK's.

/**
 * A pipeline: steps[0] speaks first, each step hands to the next, and after
 * the last step the session closes with "sequence_complete"; maxTurns is
 * the number of steps.
 */
export function sequence(...steps: string[]): Graph {
  const g = new Graph(steps[0] ?? "").withMaxTurns(steps.length).otherwise(terminate("sequence_complete"));
  for (let i = 0; i + 1 < steps.length; i++) {
    g.on(fromSpeaker(steps[i]), toAgent(steps[i + 1]));
  }
  return g;
}

/**
 * Every participant speaks in participant order, wrapping around, until
 * maxTurns turns have been taken (0: no cap). The session's participants
 * must be in this order (its creator first).
 */
export function roundRobin(participants: string[], maxTurns = 0): Graph {
  return new Graph(participants[0] ?? "").withMaxTurns(maxTurns).on(always(), toNextInOrder());
}

/** A supervisor team: a router with specialists, and optionally a person (user). */
export interface SupervisorSpec {
  router: string;
  specialists: string[];
  /**
   * When set, speaks first; their messages go to the specialist they
   * @mention, else to the active agent (the router until a handoff); every
   * agent's plain reply goes back to them.
   */
  user?: string;
  /** Caps the session (0: no cap). */
  maxTurns?: number;
  /** Names the handoff tools, "transfer_to_" by default. */
  transferPrefix?: string;
  /** The escalation tool, "request_help" by default; it hands back to the router. */
  helpTool?: string;
}

/**
 * A supervisor graph, rules in this order:
 *
 *  1. tool_called(transfer_to_<s>) → agent(s), for each specialist s
 *  2. tool_called(request_help) → agent(router)
 *
 * with a user:
 *
 *  3. from_speaker(user) ∧ mentions(a) → agent(a), for the router and each specialist
 *  4. from_speaker(user) → active_agent(fallback: router)
 *  5. default: agent(user)
 *
 * without a user (the router opens and closes the work):
 *
 *  3. from_speaker(router) → terminate("finished")
 *  4. default: agent(router)
 *
 * The router is the graph's supervisor: an escalation (Packet.escalate)
 * goes to it, as request_help does, not to whoever opened the session.
 */
export function supervisor(spec: SupervisorSpec): Graph {
  const prefix = spec.transferPrefix || "transfer_to_";
  const help = spec.helpTool || "request_help";
  const g = new Graph(spec.router).withMaxTurns(spec.maxTurns ?? 0);
  g.supervisor = spec.router;
  for (const s of spec.specialists) {
    g.on(toolCalled(prefix + s), toAgent(s));
  }
  g.on(toolCalled(help), toAgent(spec.router));
  if (!spec.user) {
    g.on(fromSpeaker(spec.router), terminate("finished"));
    return g.otherwise(toAgent(spec.router));
  }
  g.initialSpeaker = spec.user;
  for (const a of [spec.router, ...spec.specialists]) {
    g.on(allOf(fromSpeaker(spec.user), mentions(a)), toAgent(a));
  }
  g.on(fromSpeaker(spec.user), toActiveAgent(spec.router));
  return g.otherwise(toAgent(spec.user));
}
