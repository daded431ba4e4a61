"""Workflow graphs: the transition graph a ``workflow@1`` session follows.

A graph says who speaks first, and after each turn which rule picks the
next speaker (or ends the session). Build one with a factory::

    from hubd import graph

    g = graph.sequence("researcher", "writer", "editor")
    g = graph.round_robin(["a", "b", "c"], max_turns=6)
    g = graph.supervisor("router", ["billing", "tech"])

or rule by rule::

    g = (graph.Graph("a")
         .on(graph.from_speaker("a"), graph.to_agent("b"))
         .on_priority(1, graph.context_equals("done", True), graph.terminate("done"))
         .otherwise(graph.to_agent("a"))
         .with_max_turns(10))

After each turn the hub evaluates the transitions in priority order, lowest
first, ties in list order; the first whose condition holds (and whose
target resolves) decides, otherwise the default target does (none:
terminate with ``after_work``). :meth:`Graph.to_json` writes the hub's JSON
form, the same value as the Go SDK (``agentsdk``) writes (the hub keeps a
graph in its canonical form, so spelling does not matter); the hub
validates the graph at open (:class:`hubd.InvalidGraph` names the offending
node).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from google.protobuf import json_format, struct_pb2

__all__ = [
    "Condition",
    "Target",
    "Transition",
    "Graph",
    "sequence",
    "round_robin",
    "supervisor",
    "always",
    "from_speaker",
    "tool_called",
    "context_equals",
    "context_in",
    "context_compare",
    "all_of",
    "any_of",
    "not_",
    "mentions",
    "turn_count_at_least",
    "event_type_is",
    "custom_condition",
    "to_agent",
    "to_next_in_order",
    "stay",
    "revert_to_initiator",
    "terminate",
    "to_supervisor",
    "to_mentioned",
    "to_active_agent",
    "custom_target",
]

GRAPH_VERSION = 1
"""The version of the graph JSON format this SDK writes."""

DEFAULT_TERMINATE_REASON = "terminated"
"""The hub's reason for a terminate target without one."""


@dataclass(frozen=True)
class Condition:
    """A named condition with its args, as the hub's registry knows it.

    The functions of this module build the hub's built-in conditions;
    :func:`custom_condition` names one an operator registered."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        """The condition as ``{"name": ..., "args": {...}}``."""
        return {"name": self.name, "args": _plain(self.args)}


@dataclass(frozen=True)
class Target:
    """A named target with its args (who speaks next, or the end).

    The functions of this module build the hub's built-in targets;
    :func:`custom_target` names one an operator registered."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        """The target as ``{"name": ..., "args": {...}}``."""
        return {"name": self.name, "args": _plain(self.args)}


@dataclass(frozen=True)
class Transition:
    """One rule: when ``when`` holds, ``then`` picks what follows."""

    when: Condition
    then: Target
    priority: int = 0


class Graph:
    """A workflow session's transition graph.

    Attributes:
        initial_speaker: who speaks first once the session opens.
        transitions: the rules, evaluated lowest priority first.
        default: what decides when no rule does; ``None`` means terminate
            with ``after_work``.
        max_turns: close the session with ``max_turns`` after that many
            turns; 0 means no cap.
        supervisor: who escalations go to, unless the session's
            ``supervisor`` knob names another; "" means the session's creator.
    """

    def __init__(
        self,
        initial_speaker: str = "",
        transitions: Optional[Iterable[Transition]] = None,
        default: Optional[Target] = None,
        max_turns: int = 0,
        supervisor: str = "",
    ) -> None:
        self.initial_speaker = initial_speaker
        self.transitions: List[Transition] = list(transitions or [])
        self.default = default
        self.max_turns = max_turns
        self.supervisor = supervisor

    def on(self, when: Condition, then: Target) -> "Graph":
        """Append the rule ``when → then`` at priority 0; returns the graph."""
        return self.on_priority(0, when, then)

    def on_priority(self, priority: int, when: Condition, then: Target) -> "Graph":
        """Append the rule ``when → then`` at ``priority`` (lower runs first);
        returns the graph."""
        self.transitions.append(Transition(when, then, priority))
        return self

    def otherwise(self, target: Target) -> "Graph":
        """Set the default target; returns the graph."""
        self.default = target
        return self

    def with_max_turns(self, n: int) -> "Graph":
        """Set the turn cap (0: none); returns the graph."""
        self.max_turns = n
        return self

    def to_dict(self) -> Dict[str, Any]:
        """The graph as plain Python values, in the hub's shape."""
        default = self.default or Target("terminate", {"reason": "after_work"})
        out: Dict[str, Any] = {
            "version": GRAPH_VERSION,
            "initial_speaker": self.initial_speaker,
            "transitions": [
                {"when": t.when.to_dict(), "then": t.then.to_dict(), "priority": t.priority} for t in self.transitions
            ],
            "default_target": default.to_dict(),
            "max_turns": self.max_turns if self.max_turns > 0 else None,
        }
        if self.supervisor:  # omitted when empty, as the hub writes it
            out["supervisor"] = self.supervisor
        return out

    def to_json(self) -> str:
        """The graph's JSON, as the hub and ``hubd graph validate`` read it
        (compact; a number that is not finite raises ValueError)."""
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False, allow_nan=False)

    def to_struct(self) -> struct_pb2.Struct:
        """The graph as sent to the hub (``OpenRequest.graph``)."""
        return json_format.Parse(self.to_json(), struct_pb2.Struct())

    @classmethod
    def from_json(cls, text: Union[str, bytes]) -> "Graph":
        """Decode a graph from its JSON. The nested conditions of ``not``,
        ``all_of`` and ``any_of`` become :class:`Condition` values, so the
        graph encodes back to the same JSON value; the hub checks names and
        args at open."""
        return cls.from_dict(json.loads(text, parse_constant=_not_a_number))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Graph":
        """Build a graph from its decoded JSON form (see :meth:`from_json`)."""
        if not isinstance(d, Mapping):
            raise ValueError("graph: want a JSON object")
        version = d.get("version")
        if version is not None and int(version) not in (0, GRAPH_VERSION):
            raise ValueError(f"graph: version {version} is not supported")
        g = cls(str(d.get("initial_speaker") or ""))
        for i, t in enumerate(d.get("transitions") or []):
            if not isinstance(t, Mapping) or t.get("when") is None or t.get("then") is None:
                raise ValueError(f'graph: transitions[{i}]: missing "when" or "then"')
            when, then = _node(t["when"]), _node(t["then"])
            g.transitions.append(Transition(Condition(*when), Target(*then), int(t.get("priority") or 0)))
        if d.get("default_target") is not None:
            g.default = Target(*_node(d["default_target"]))
        if d.get("max_turns") is not None:
            g.max_turns = int(d["max_turns"])
        g.supervisor = str(d.get("supervisor") or "")
        return g

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Graph) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Graph({self.to_json()})"


def _not_a_number(name: str) -> Any:
    raise ValueError(f"graph: {name} is not a JSON number")


def _node(d: Any) -> "tuple[str, Dict[str, Any]]":
    if not isinstance(d, Mapping):
        raise ValueError("graph: a condition or target must be a JSON object")
    args: Dict[str, Any] = {}
    for k, v in (d.get("args") or {}).items():
        if k == "condition" and isinstance(v, Mapping) and "name" in v:
            v = Condition(*_node(v))
        elif k == "conditions" and isinstance(v, list) and all(isinstance(c, Mapping) and "name" in c for c in v):
            v = [Condition(*_node(c)) for c in v]
        args[k] = v
    return str(d.get("name") or ""), args


def _plain(v: Any) -> Any:
    """Args with nested conditions and targets as dicts."""
    if isinstance(v, (Condition, Target)):
        return v.to_dict()
    if isinstance(v, Mapping):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


# Conditions built into the hub.


def always() -> Condition:
    """Holds on every turn."""
    return Condition("always")


def from_speaker(agent: str) -> Condition:
    """Holds when ``agent`` took the turn."""
    return Condition("from_speaker", {"agent_id": agent})


def tool_called(tool: str) -> Condition:
    """Holds when the turn is a handoff packet naming ``tool``."""
    return Condition("tool_called", {"tool_name": tool})


def context_equals(key: str, value: Any) -> Condition:
    """Holds when context variable ``key`` equals ``value`` (any JSON value;
    a missing key equals ``None``)."""
    return Condition("context_equals", {"key": key, "value": value})


def context_in(key: str, *values: Any) -> Condition:
    """Holds when context variable ``key`` equals one of ``values``."""
    return Condition("context_in", {"key": key, "values": list(values)})


def context_compare(key: str, op: str, value: float) -> Condition:
    """Holds when the numeric context variable ``key`` compares to ``value``
    with ``op``: ``"lt"``, ``"le"``, ``"gt"``, ``"ge"``, ``"eq"`` or
    ``"ne"``."""
    return Condition("context_compare", {"key": key, "op": op, "value": float(value)})


def all_of(*conditions: Condition) -> Condition:
    """Holds when every condition holds."""
    return Condition("all_of", {"conditions": list(conditions)})


def any_of(*conditions: Condition) -> Condition:
    """Holds when at least one condition holds."""
    return Condition("any_of", {"conditions": list(conditions)})


def not_(condition: Condition) -> Condition:
    """Holds when ``condition`` does not (``not`` is a Python keyword)."""
    return Condition("not", {"condition": condition})


def mentions(agent: str) -> Condition:
    """Holds when the turn's text starts with ``@agent``."""
    return Condition("mentions", {"agent_id": agent})


def turn_count_at_least(n: int) -> Condition:
    """Holds once ``n`` turns have been taken (this one included)."""
    return Condition("turn_count_at_least", {"n": int(n)})


def event_type_is(event_type: str) -> Condition:
    """Holds when the turn's event type is ``event_type`` (``"text"`` or
    ``"packet"``)."""
    return Condition("event_type", {"type": event_type})


def custom_condition(name: str, args: Optional[Mapping[str, Any]] = None) -> Condition:
    """Names a condition registered in the hub by its operator."""
    return Condition(name, dict(args or {}))


# Targets built into the hub.


def to_agent(agent: str) -> Target:
    """Hands the turn to ``agent``."""
    return Target("agent", {"agent_id": agent})


def to_next_in_order() -> Target:
    """Hands the turn to the participant after the last speaker, in
    participant order, wrapping around (the hub's ``round_robin``)."""
    return Target("round_robin")


def stay() -> Target:
    """Gives the last speaker another turn."""
    return Target("stay")


def revert_to_initiator() -> Target:
    """Hands the turn back to whoever opened the session."""
    return Target("revert_to_initiator")


def terminate(reason: str = "") -> Target:
    """Ends the session with ``reason`` (``""`` is the hub's
    ``"terminated"``)."""
    return Target("terminate", {"reason": reason or DEFAULT_TERMINATE_REASON})


def to_supervisor() -> Target:
    """Hands the turn to the session's supervisor (its creator unless the
    ``supervisor`` knob names another)."""
    return Target("supervisor")


def to_mentioned() -> Target:
    """Hands the turn to the participant named by a leading ``@name`` in the
    turn's text; without one it does not resolve and evaluation goes on."""
    return Target("mentioned")


def to_active_agent(fallback: str = "") -> Target:
    """Hands the turn to the agent last handed to (sticky), or to
    ``fallback`` before any handoff (``""``: none)."""
    return Target("active_agent", {"fallback": fallback} if fallback else {})


def custom_target(name: str, args: Optional[Mapping[str, Any]] = None) -> Target:
    """Names a target registered in the hub by its operator."""
    return Target(name, dict(args or {}))


# Factories: the same graphs as the hub's own and the Go SDK's.


def sequence(*steps: str) -> Graph:
    """A pipeline: ``steps[0]`` speaks first, each step hands to the next,
    and after the last step the session closes with ``sequence_complete``;
    ``max_turns`` is ``len(steps)``."""
    g = Graph(steps[0] if steps else "", max_turns=len(steps))
    g.otherwise(terminate("sequence_complete"))
    for a, b in zip(steps, steps[1:]):
        g.on(from_speaker(a), to_agent(b))
    return g


def round_robin(participants: Sequence[str], max_turns: int = 0) -> Graph:
    """Every participant speaks in participant order, wrapping around, until
    ``max_turns`` turns have been taken (0: no cap). The session's
    participants must be in this order (its creator first)."""
    g = Graph(participants[0] if participants else "", max_turns=max_turns)
    return g.on(always(), to_next_in_order())


def supervisor(
    router: str,
    specialists: Sequence[str],
    *,
    user: str = "",
    max_turns: int = 0,
    transfer_prefix: str = "transfer_to_",
    help_tool: str = "request_help",
) -> Graph:
    """A supervisor team: a router agent with specialists it hands work to,
    and optionally a person (``user``) talking to the team.

    The rules, in this order:

    1. ``tool_called(transfer_to_<s>) → agent(s)``, for each specialist s
    2. ``tool_called(request_help) → agent(router)``

    with a user (who speaks first; their messages go to the agent they
    @mention, else to the active agent, and every agent's plain reply goes
    back to them):

    3. ``from_speaker(user) ∧ mentions(a) → agent(a)``, for the router and
       each specialist
    4. ``from_speaker(user) → active_agent(fallback: router)``
    5. default: ``agent(user)``

    without a user (the router opens and closes the work):

    3. ``from_speaker(router) → terminate("finished")``
    4. default: ``agent(router)``

    The router is the graph's supervisor: an escalation goes to it, as
    ``request_help`` does, not to whoever opened the session.
    """
    prefix = transfer_prefix or "transfer_to_"
    help_name = help_tool or "request_help"
    g = Graph(router, max_turns=max_turns, supervisor=router)
    for s in specialists:
        g.on(tool_called(prefix + s), to_agent(s))
    g.on(tool_called(help_name), to_agent(router))
    if not user:
        g.on(from_speaker(router), terminate("finished"))
        return g.otherwise(to_agent(router))
    g.initial_speaker = user
    for a in [router, *specialists]:
        g.on(all_of(from_speaker(user), mentions(a)), to_agent(a))
    g.on(from_speaker(user), to_active_agent(router))
    return g.otherwise(to_agent(user))
