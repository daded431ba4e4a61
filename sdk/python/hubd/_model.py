"""The values the SDK works with: constants of the hub, packets, acks,
sessions, turns, and helpers over the hub's own messages.

The SDK speaks the hub's generated messages (:mod:`hubd.pb`, the schema of
``hubpb/hub.proto`` every language shares): envelopes, deliveries, views
and session info are protobuf messages read by their fields; the helpers
here make the common cases short (:func:`text_of`, :func:`is_turn`,
:func:`ends`, :func:`to_value` and :func:`from_value`).
"""

from __future__ import annotations

import json
import os
import secrets
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import (
    TYPE_CHECKING,
    Any,
    Awaitable,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    TypeVar,
    Union,
)

from google.protobuf import duration_pb2, json_format, struct_pb2

from ._pb import hub_pb2 as pb
from .graph import Graph

if TYPE_CHECKING:  # pragma: no cover
    from ._calls import Turn as AsyncTurn
    from ._sync import Task

_T = TypeVar("_T")

__all__ = [
    "EVENT_TEXT",
    "EVENT_PACKET",
    "EVENT_CONTEXT_SET",
    "EVENT_INVITE",
    "EVENT_INVITE_ACK",
    "EVENT_INVITE_REJECT",
    "EVENT_OPENED",
    "EVENT_CLOSED",
    "EVENT_EXPIRED",
    "EVENT_VIOLATION",
    "EVENT_QUESTION",
    "EVENT_ANSWER",
    "EVENT_QUESTION_CLOSED",
    "EVENT_DELEGATION",
    "EVENT_DELEGATION_RESULT",
    "EVENT_TASK_PROGRESS",
    "EVENT_TOOL_CALL",
    "EVENT_TOOL_RESULT",
    "EVENT_MESSAGE",
    "ROUTING_TEXT",
    "ROUTING_HANDOFF",
    "ROUTING_FINISH",
    "ROUTING_ESCALATE",
    "ROUTING_PASS_CALLER",
    "MODE_BLOCKING",
    "MODE_BACKGROUND",
    "AWAIT_ALL",
    "AWAIT_ANY",
    "NOTIFY_TURN",
    "TASK_RUNNING",
    "TASK_CLOSED",
    "TASK_EXPIRED",
    "TASK_CANCELLED",
    "CANCEL_REASON",
    "TYPE_WORKFLOW",
    "TYPE_CONVERSATION",
    "TYPE_DISCUSSION",
    "TYPE_CONSULTING",
    "STATE_PENDING",
    "STATE_OPEN",
    "STATE_CLOSED",
    "STATE_EXPIRED",
    "VIEW_DEFAULT",
    "VIEW_FULL",
    "VIEW_WINDOWED",
    "VIEW_LAST",
    "AGENT_HEADER",
    "TLS",
    "Packet",
    "Ack",
    "Session",
    "SessionPage",
    "Turn",
    "Invite",
    "Reply",
    "text_of",
    "sender",
    "is_turn",
    "ends",
    "close_reason",
    "to_value",
    "from_value",
    "turn_msg_id",
    "invited",
    "auto_accepted",
    "expect",
    "open_request",
    "context_update",
    "new_msg_id",
    "Handler",
    "InviteFunc",
    "InviteDecision",
    "Seconds",
]

# Event types of the hub (Envelope.type). Texts and packets are turns;
# context sets are not; the lifecycle types are written by the hub. Any
# other string is a custom type (Client.send_event): logged and delivered,
# never a turn.
EVENT_TEXT = "text"
EVENT_PACKET = "packet"
EVENT_CONTEXT_SET = "context_set"
EVENT_INVITE = "session_invite"
EVENT_INVITE_ACK = "session_invite_ack"
EVENT_INVITE_REJECT = "session_invite_reject"
EVENT_OPENED = "session_opened"
EVENT_CLOSED = "session_closed"
EVENT_EXPIRED = "session_expired"
EVENT_VIOLATION = "expectation_violated"
EVENT_QUESTION = "question"
EVENT_ANSWER = "answer"
EVENT_QUESTION_CLOSED = "question_closed"  # a question withdrawn, by the hub
EVENT_DELEGATION = "delegation"  # children opened, by the hub
EVENT_DELEGATION_RESULT = "delegation_result"  # a child's result, by the hub
EVENT_TASK_PROGRESS = "task_progress"
EVENT_TOOL_CALL = "tool_call"  # a tool an agent called (not a turn)
EVENT_TOOL_RESULT = "tool_result"  # what the tool returned (not a turn)
EVENT_MESSAGE = "message"  # a note for a session's next speaker (not a turn)

# Routing kinds of a packet (Routing.kind).
ROUTING_TEXT = "text"  # the graph decides ("" too)
ROUTING_HANDOFF = "handoff"  # to the target, or by the graph on the tool
ROUTING_FINISH = "finish"  # end the session with the reason
ROUTING_ESCALATE = "escalate"  # to the session's supervisor
ROUTING_PASS_CALLER = "pass_caller"  # the turn and the duty to answer the caller, to the target

# Delegation (Client.delegate): a blocking delegation holds the delegator's
# turn until all (or any) of its children are done; a background one
# leaves the turn as it is, and its results are notices (or, with
# NOTIFY_TURN, give the delegator a turn).
MODE_BLOCKING = "blocking"
MODE_BACKGROUND = "background"
AWAIT_ALL = "all"
AWAIT_ANY = "any"
NOTIFY_TURN = "turn"

# Task states (TaskStatus.state).
TASK_RUNNING = "running"
TASK_CLOSED = "closed"
TASK_EXPIRED = "expired"
TASK_CANCELLED = "cancelled"

CANCEL_REASON = "cancelled"
"""The close reason of a cancelled task."""

# Session types served by a stock hub ("kind@version").
TYPE_WORKFLOW = "workflow@1"  # a transition graph picks the next speaker
TYPE_CONVERSATION = "conversation@1"  # two participants, free turns
TYPE_DISCUSSION = "discussion@1"  # strict round robin from the creator
TYPE_CONSULTING = "consulting@1"  # a question, then its answer

# Lifecycle states (SessionInfo.state): PENDING until every invitee has
# acknowledged, then OPEN, then CLOSED or EXPIRED.
STATE_PENDING = "PENDING"
STATE_OPEN = "OPEN"
STATE_CLOSED = "CLOSED"
STATE_EXPIRED = "EXPIRED"

# The named views of a session.
VIEW_DEFAULT = "default"  # the session type's: windowed for workflow and discussion, full otherwise
VIEW_FULL = "full"  # the whole transcript the caller may see
VIEW_WINDOWED = "windowed"  # the last `window` items, older ones counted per speaker
VIEW_LAST = "last"  # the latest item only

AGENT_HEADER = "x-hubd-agent"
"""The metadata key that names the caller to a hub in development mode (no
tokens, loopback only)."""

_DEFAULT_FINISH_REASON = "finished"

Seconds = Union[float, int, timedelta]
"""A duration: seconds, or a timedelta."""


@dataclass(frozen=True)
class TLS:
    """TLS settings of a connection to the hub.

    Attributes:
        ca: PEM root certificates to verify the hub with; ``None`` uses the
            system's roots.
        cert: PEM client certificate chain (mTLS: the hub names the agent by
            its common name).
        key: PEM private key of ``cert``.
        server_name: the name to expect in the hub's certificate, when it
            differs from the host dialled.
    """

    ca: Optional[bytes] = None
    cert: Optional[bytes] = None
    key: Optional[bytes] = None
    server_name: Optional[str] = None

    @classmethod
    def from_files(
        cls,
        ca: Optional[Union[str, "os.PathLike[str]"]] = None,
        cert: Optional[Union[str, "os.PathLike[str]"]] = None,
        key: Optional[Union[str, "os.PathLike[str]"]] = None,
        server_name: Optional[str] = None,
    ) -> "TLS":
        """TLS settings read from PEM files."""

        def read(p: Optional[Union[str, "os.PathLike[str]"]]) -> Optional[bytes]:
            if p is None:
                return None
            with open(p, "rb") as f:
                return f.read()

        return cls(read(ca), read(cert), read(key), server_name)

    @property
    def has_client_cert(self) -> bool:
        """Whether the settings present a client certificate (mTLS)."""
        return self.cert is not None


def text_of(e: Optional[pb.Envelope]) -> str:
    """What an envelope says in words: a text's text, a packet's body, a
    question's or an answer's text, a delegation result's summary; ``""`` for
    anything else."""
    if e is None:
        return ""
    kind = e.WhichOneof("payload")
    if kind == "text":
        return e.text.text
    if kind == "packet":
        return e.packet.body
    if kind == "question":
        return e.question.text
    if kind == "answer":
        return e.answer.text
    if kind == "delegation_result":
        return e.delegation_result.summary
    return ""


def sender(e: Any) -> str:
    """Who sent an envelope (or spoke a view item): its ``from`` field,
    which Python reaches only through getattr since ``from`` is a keyword;
    ``""`` for the hub itself."""
    return str(getattr(e, "from")) if e is not None else ""


def is_turn(e: Optional[pb.Envelope]) -> bool:
    """Whether an envelope is substantive: a text or a packet."""
    return e is not None and e.type in (EVENT_TEXT, EVENT_PACKET)


def ends(e: Optional[pb.Envelope]) -> bool:
    """Whether an envelope ends its session (closed or expired)."""
    return e is not None and e.type in (EVENT_CLOSED, EVENT_EXPIRED)


def close_reason(e: Optional[pb.Envelope]) -> str:
    """Why a ``session_closed`` or ``session_expired`` envelope ended its
    session; ``""`` for any other envelope."""
    return e.ended.reason if e is not None and ends(e) else ""


def to_value(v: Any) -> struct_pb2.Value:
    """The stored form of a Python value (anything :func:`json.dumps`
    encodes, numbers finite): how context variables and knobs travel."""
    plain = json.loads(json.dumps(v, allow_nan=False))
    return json_format.ParseDict(plain, struct_pb2.Value())


def from_value(v: struct_pb2.Value) -> Any:
    """The Python value of a stored value (a context variable, a knob), as
    :func:`json.loads` would read its JSON: integral numbers come back as
    ``int``."""
    return _ints(json_format.MessageToDict(v))


def _ints(v: Any) -> Any:
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
        return int(v)
    if isinstance(v, dict):
        return {k: _ints(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_ints(x) for x in v]
    return v


def _values(what: str, m: Optional[Mapping[str, Any]]) -> Dict[str, struct_pb2.Value]:
    out: Dict[str, struct_pb2.Value] = {}
    for k in sorted(m or {}):
        try:
            out[k] = to_value(m[k])  # type: ignore[index]
        except (TypeError, ValueError) as e:
            raise ValueError(f"{what} {k!r}: {e}") from e
    return out


def _duration(d: Seconds) -> duration_pb2.Duration:
    out = duration_pb2.Duration()
    out.FromTimedelta(d if isinstance(d, timedelta) else timedelta(seconds=d))
    return out


def turn_msg_id(session_id: str, seq: int) -> str:
    """The client message id :meth:`Client.serve` gives the reply to the turn
    begun by ``seq`` in a session: the same for every retry, so the reply is
    written once (Go: ``agentsdk.TurnMsgID``)."""
    return f"turn/{session_id}/{seq}"


def new_msg_id() -> str:
    """A random client message id."""
    return "m-" + secrets.token_hex(13)


def invited(*names: str) -> List[pb.Participant]:
    """Participants who must acknowledge their invite, one per name."""
    return [pb.Participant(name=n) for n in names]


def auto_accepted(*names: str) -> List[pb.Participant]:
    """Participants who need not acknowledge, one per name."""
    return [pb.Participant(name=n, auto_accept=True) for n in names]


def expect(name: str, within: Seconds, action: str) -> pb.Expectation:
    """One timer of a session: ``name`` is ``"turn_within"``,
    ``"reply_within"``, ``"max_silence"`` or ``"acks_within"``; ``action`` is
    ``"warn"``, ``"notify"`` or ``"auto_close"``."""
    return pb.Expectation(name=name, within=_duration(within), action=action)


def open_request(
    session_type: str = TYPE_WORKFLOW,
    *,
    participants: Iterable[Union[str, pb.Participant]] = (),
    graph: Optional[Union[Graph, Mapping[str, Any]]] = None,
    knobs: Optional[Mapping[str, Any]] = None,
    labels: Optional[Mapping[str, str]] = None,
    ttl: Optional[Seconds] = None,
    invite_timeout: Optional[Seconds] = None,
    expectations: Optional[Sequence[pb.Expectation]] = None,
    parent: str = "",
    idempotency_key: str = "",
    task: str = "",
    delegates: Sequence[str] = (),
    budget: Optional[pb.Budget] = None,
    thread_key: str = "",
) -> pb.OpenRequest:
    """The hub's request to open a session (what :meth:`Client.open` sends).

    Args:
        session_type: ``"kind@version"``, default :data:`TYPE_WORKFLOW`.
        participants: in session order; a name is an invited participant
            (who must acknowledge), or give :func:`invited` /
            :func:`auto_accepted` participants. The caller is added first
            when missing.
        graph: a workflow session's transition graph (a :class:`Graph`, or
            its JSON form as a dict).
        knobs: other settings of the session type, any JSON values:
            ``{"max_handoffs": 3, "supervisor": "lead", "context": {...}}``.
        labels: for listing.
        ttl: the session's lifetime (seconds or timedelta); ``None``: none.
        invite_timeout: how long invitees have to acknowledge; ``None``: the
            hub's default.
        expectations: timers replacing the type's defaults (:func:`expect`);
            ``None`` keeps the defaults, an empty list means none.
        parent: makes this a child of a session the caller takes part in.
        idempotency_key: the same caller and key return the same session.
        task: the session's first input from its creator (a delegated
            child's task): the creator's first turn when the session type
            expects the creator to speak first (a conversation), else a
            message its first speaker sees in its view. Every participant
            must then be auto-accepted.
        delegates: the agents the session may delegate to; empty: any.
        budget: bounds the usage of the session's whole tree (a root's):
            ``hubd.pb.Budget(max_tokens=..., max_cost=...)``.
        thread_key: continues a conversation thread: while a session the
            caller opened with this key is open, the open returns it;
            otherwise the new session links the thread's previous one.
    """
    req = pb.OpenRequest(
        type=session_type or TYPE_WORKFLOW,
        labels=dict(labels or {}),
        parent_session_id=parent,
        idempotency_key=idempotency_key,
        task=task,
        delegates=list(delegates),
        thread_key=thread_key,
    )
    if budget is not None:
        req.budget.CopyFrom(budget)
    for p in participants:
        req.participants.append(pb.Participant(name=p) if isinstance(p, str) else p)
    if graph is not None:
        if isinstance(graph, Graph):
            req.graph.CopyFrom(graph.to_struct())
        else:
            json_format.ParseDict(dict(graph), req.graph)
    for k, v in _values("knob", knobs).items():
        req.knobs[k].CopyFrom(v)
    if ttl is not None:
        req.ttl.CopyFrom(_duration(ttl))
    if invite_timeout is not None:
        req.invite_timeout.CopyFrom(_duration(invite_timeout))
    if expectations is not None:
        req.expectations.SetInParent()
        req.expectations.items.extend(expectations)
    return req


class Packet:
    """One agent round: a body, a routing decision, context updates applied
    before routing, and token usage. Build one with its methods, which
    return the packet::

        hubd.Packet("Over to billing.").handoff(tool="transfer_to_billing", reason="a refund")
        hubd.Packet("Done.").set("approved", True).finish("approved", "shipped")
    """

    def __init__(self, body: str = "") -> None:
        self._pb = pb.Packet(body=body)
        self._set: Dict[str, Any] = {}

    @property
    def body(self) -> str:
        """What the agent says."""
        return self._pb.body

    def handoff(self, tool: str = "", target: str = "", reason: str = "") -> "Packet":
        """Route the turn by ``tool`` (``tool_called`` rules see it) and/or
        directly to ``target``; at least one must be set."""
        self._pb.routing.CopyFrom(pb.Routing(kind=ROUTING_HANDOFF, tool=tool, target=target, reason=reason))
        return self

    def finish(self, reason: str = "", summary: str = "") -> "Packet":
        """End the session with ``reason`` (``""`` is ``"finished"``) and
        ``summary``."""
        self._pb.routing.CopyFrom(
            pb.Routing(kind=ROUTING_FINISH, reason=reason or _DEFAULT_FINISH_REASON, summary=summary)
        )
        return self

    def pass_caller(self, target: str) -> "Packet":
        """Hand the turn, and the duty to answer this child session's caller,
        to ``target``, another participant: its finish closes the session and
        answers the parent."""
        self._pb.routing.CopyFrom(pb.Routing(kind=ROUTING_PASS_CALLER, target=target))
        return self

    def escalate(self, reason: str = "") -> "Packet":
        """Hand the turn to the session's supervisor with ``reason``."""
        self._pb.routing.CopyFrom(pb.Routing(kind=ROUTING_ESCALATE, reason=reason))
        return self

    def set(self, key: str, value: Any) -> "Packet":
        """Set context variable ``key`` to ``value`` (any JSON value) before
        the packet is routed, so a rule evaluated on this turn sees it."""
        self._set[key] = value
        return self

    def delete(self, *keys: str) -> "Packet":
        """Delete context variables before the packet is routed."""
        self._pb.context_updates.delete.extend(keys)
        return self

    def with_usage(self, input_tokens: int = 0, output_tokens: int = 0, cost_usd: float = 0.0) -> "Packet":
        """Record the round's token usage and cost."""
        self._pb.usage.CopyFrom(pb.Usage(input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost_usd))
        return self

    def proto(self) -> pb.Packet:
        """The packet as the hub's message. Raises ValueError for a context
        value that does not encode as JSON."""
        out = pb.Packet()
        out.CopyFrom(self._pb)
        for k, v in _values("context variable", self._set).items():
            out.context_updates.set[k].CopyFrom(v)
        return out

    def __repr__(self) -> str:
        return f"Packet({json_format.MessageToJson(self.proto(), indent=None, preserving_proto_field_name=True)})"


def context_update(set: Optional[Mapping[str, Any]] = None, delete: Iterable[str] = ()) -> pb.ContextUpdate:
    """A context update: delete, then set, session context variables."""
    out = pb.ContextUpdate(delete=list(delete))
    for k, v in _values("context variable", set).items():
        out.set[k].CopyFrom(v)
    return out


def _time(ts: Any) -> Optional[datetime]:
    if ts is None or (ts.seconds == 0 and ts.nanos == 0):
        return None
    return ts.ToDatetime().replace(tzinfo=timezone.utc)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Ack:
    """The acknowledgement of a durable write (the hub's SendResponse).

    Attributes:
        seq: the envelope's seq.
        id: the envelope's id.
        accepted_at: when the hub accepted it (UTC).
        duplicate: a retry of an envelope already accepted: nothing was
            written, seq and id are the original's.
        closed: the write ended the session.
        close_reason: why, when closed.
        client_msg_id: the idempotency key the envelope was sent with.
        response: the hub's message as received.
    """

    seq: int
    id: str
    accepted_at: Optional[datetime]
    duplicate: bool
    closed: bool
    close_reason: str
    client_msg_id: str
    response: pb.SendResponse = field(repr=False, compare=False)

    @classmethod
    def from_proto(cls, resp: pb.SendResponse, client_msg_id: str = "") -> "Ack":
        """The Ack of a SendResponse."""
        return cls(
            seq=resp.seq,
            id=resp.id,
            accepted_at=_time(resp.accepted_at) if resp.HasField("accepted_at") else None,
            duplicate=resp.duplicate,
            closed=resp.closed,
            close_reason=resp.close_reason,
            client_msg_id=client_msg_id,
            response=resp,
        )


class Session:
    """A session's metadata and state as the hub answered (its SessionInfo),
    with what an open adds.

    Attributes:
        info: the hub's SessionInfo message.
        existing: set by :meth:`Client.open` when an earlier open with the same
            idempotency key made the session.
    """

    def __init__(self, info: pb.SessionInfo, existing: bool = False) -> None:
        self.info = info
        self.existing = existing

    @property
    def id(self) -> str:
        """The session id."""
        return self.info.meta.session_id

    @property
    def type(self) -> str:
        """The session type, ``"kind@version"``."""
        return self.info.meta.type

    @property
    def creator(self) -> str:
        """Who opened it."""
        return self.info.meta.creator

    @property
    def participants(self) -> List[str]:
        """The participants' names in session order."""
        return [p.name for p in self.info.meta.participants]

    @property
    def labels(self) -> Dict[str, str]:
        """The session's labels."""
        return dict(self.info.meta.labels)

    @property
    def meta(self) -> pb.SessionMeta:
        """The metadata, as stored."""
        return self.info.meta

    @property
    def state(self) -> str:
        """``"PENDING"``, ``"OPEN"``, ``"CLOSED"`` or ``"EXPIRED"``."""
        return self.info.state

    @property
    def ended(self) -> bool:
        """Whether the session is over (closed or expired)."""
        return self.info.state in (STATE_CLOSED, STATE_EXPIRED)

    @property
    def close_reason(self) -> str:
        """Why it ended, once it has."""
        return self.info.close_reason

    @property
    def seq(self) -> int:
        """The last seq of its log."""
        return self.info.seq

    @property
    def turn(self) -> int:
        """Turns taken (not filled in by a listing)."""
        return self.info.turn

    @property
    def expected(self) -> List[str]:
        """Who is expected to speak next (not filled in by a listing)."""
        return list(self.info.expected)

    @property
    def usage(self) -> pb.Usage:
        """Usage summed over the session."""
        return self.info.usage

    @property
    def context(self) -> Dict[str, Any]:
        """The context variables as Python values (not filled in by a
        listing)."""
        return {k: from_value(v) for k, v in self.info.context.items()}

    def var(self, key: str, default: Any = None) -> Any:
        """The context variable ``key`` as a Python value, or ``default`` when
        it is not set."""
        if key not in self.info.context:
            return default
        return from_value(self.info.context[key])

    def __repr__(self) -> str:
        return f"Session(id={self.id!r}, type={self.type!r}, state={self.state!r}, seq={self.seq})"


class SessionPage(NamedTuple):
    """One page of :meth:`Client.list_sessions`."""

    sessions: List[Session]
    """The sessions, oldest first, with their metadata, state, seq and close
    reason."""
    next_page_token: str
    """Pass as ``page_token`` for the next page; ``""`` after the last."""


@dataclass
class Turn:
    """One turn of the agent in a session, as given to a serve handler.

    Attributes:
        session_id: the session.
        trigger: the envelope that began the turn: the previous speaker's
            text or packet, or the ``session_opened`` envelope for the first
            speaker (without payload when the agent may not see it).
        view: the agent's view of the session (the default view unless
            serve's ``view`` chose another); ``None`` with ``view=None``.
        client: the client serving the turn (a :class:`hubd.Client`, or a
            :class:`hubd.aio.Client` under asyncio).
        cancelled: set when the session ended or serve stopped while the
            handler works; a long handler may check it and give up.
    """

    session_id: str
    trigger: pb.Envelope
    view: Optional[pb.View]
    client: Any
    cancelled: threading.Event = field(default_factory=threading.Event, repr=False)
    _consume: Optional[Callable[[int], None]] = field(default=None, repr=False, compare=False)
    _ops: int = field(default=0, repr=False, compare=False)
    _core_turn: Any = field(default=None, repr=False, compare=False)  # the asyncio core's, once made

    @property
    def text(self) -> str:
        """What the trigger says in words (see :func:`text_of`)."""
        return text_of(self.trigger)

    @property
    def seq(self) -> int:
        """The trigger's seq."""
        return self.trigger.seq

    @property
    def resumed(self) -> bool:
        """Whether the turn was given back after a wait the handler did not
        see end (the agent process restarted while it waited in
        :meth:`delegate` or :meth:`ask`): its trigger is then the
        ``delegation_result`` or the ``answer`` it waited for."""
        return self.trigger.type in (EVENT_DELEGATION_RESULT, EVENT_ANSWER)

    def pass_caller(self, agent: str) -> "Packet":
        """The reply that hands the turn, and the duty to answer this child
        session's caller, to another participant: its finish closes the
        session and answers the parent. Return it from the handler."""
        return Packet("").pass_caller(agent)

    def _op_id(self, kind: str) -> str:
        """The client message id of the turn's next operation of kind: the
        same sequence of ids for every run of a handler on one turn, so a
        handler run again after a crash gets the same children back."""
        self._ops += 1
        return f"{turn_msg_id(self.session_id, self.trigger.seq)}/{kind}{self._ops}"

    # Delegation and questions, blocking: each is hubd.aio.Turn's (where
    # they are described) run on the sync client's event loop; a wait ends
    # with hubd.Canceled once the turn is cancelled.

    def delegate(self, child: pb.OpenRequest, *, timeout: Optional[float] = None) -> pb.DelegationResult:
        """Hand a task to a child session and wait for its result, as a
        handler waits for a tool call (see :meth:`hubd.aio.Turn.delegate`).

        Raises:
            hubd.DepthExceeded, hubd.DelegateNotAllowed, hubd.TurnHeld,
            hubd.OutOfTurn, hubd.SessionClosed: the hub refused it.
        """
        return self._blocking(lambda t: t.delegate(child, timeout=timeout))

    def delegate_all(self, *children: pb.OpenRequest, timeout: Optional[float] = None) -> List[pb.DelegationResult]:
        """Delegate to several children at once (fan-out), the turn held
        until every one is done; their results in the order they closed."""
        return self._blocking(lambda t: t.delegate_all(*children, timeout=timeout))

    def delegate_any(self, *children: pb.OpenRequest, timeout: Optional[float] = None) -> pb.DelegationResult:
        """Delegate to several children at once, the turn held until the
        first is done; that one's result (the others go on)."""
        return self._blocking(lambda t: t.delegate_any(*children, timeout=timeout))

    def spawn(self, child: pb.OpenRequest, *, turn_on_result: bool = False) -> "Task":
        """Start a child session in the background and return its
        :class:`hubd.Task` at once (see :meth:`hubd.aio.Turn.spawn`)."""
        from ._sync import Task

        return Task.of(self.client, self._blocking(lambda t: t.spawn(child, turn_on_result=turn_on_result)))

    def ask(
        self,
        question: Union[str, pb.Question],
        *,
        options: Sequence[Union[str, "tuple[str, str]", pb.Option]] = (),
        answerer: str = "",
        multiple: bool = False,
        timeout: Optional[float] = None,
    ) -> pb.Answer:
        """Ask a question on the turn and wait for its answer (see
        :meth:`hubd.aio.Turn.ask`).

        Raises:
            hubd.Withdrawn: the question was withdrawn (its session ended).
        """
        return self._blocking(
            lambda t: t.ask(question, options=options, answerer=answerer, multiple=multiple, timeout=timeout)
        )

    def _blocking(self, f: "Callable[[AsyncTurn], Awaitable[_T]]") -> _T:
        from ._sync import on_turn

        return on_turn(self, f)


@dataclass(frozen=True)
class Invite:
    """An invitation to a session, as given to serve's ``invites`` function.

    Attributes:
        session_id: the session.
        invitees: everyone who must acknowledge.
        envelope: the ``session_invite`` envelope.
    """

    session_id: str
    invitees: List[str]
    envelope: pb.Envelope = field(repr=False)


Reply = Union[str, Packet, None]
"""What a serve handler returns: a text, a :class:`Packet`, or ``None`` to
say nothing (the turn stays the agent's)."""

Handler = Callable[[Turn], Reply]
"""A sync serve handler."""

InviteDecision = Union[bool, str, None]
"""What an invite function returns: ``None`` or ``True`` accepts, ``False``
rejects, a string rejects with that reason."""

InviteFunc = Callable[[Invite], InviteDecision]
"""Decides an invite for serve (see :data:`InviteDecision`)."""
