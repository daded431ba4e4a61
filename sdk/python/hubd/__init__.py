"""hubd: the Python client of hubd, the session hub for multi-agent systems.

An agent connects to the hub as itself, opens sessions with other agents,
takes its turns, and reads what the others said. The hub decides whose turn
it is; the SDK runs the agent loop::

    import hubd

    with hubd.Client("127.0.0.1:7420", name="writer") as c:
        c.serve(lambda turn: "Draft: " + turn.text)

Connecting: :class:`Client` (and :mod:`hubd.aio` for asyncio: the one core,
which :class:`Client` runs on an event loop of its own) by name in the
hub's development mode, by ``token``, or over ``tls`` (mTLS: the
certificate names the agent).

Sessions and turns: :meth:`Client.open` (workflow sessions follow a graph
from :mod:`hubd.graph`), :meth:`Client.send_text`,
:meth:`Client.send_packet` with a :class:`Packet` (handoff, finish,
escalate, context updates, usage), :meth:`Client.set_context`,
:meth:`Client.send_event`; reads: :meth:`Client.read_log`,
:meth:`Client.view`, :meth:`Client.get_session`,
:meth:`Client.list_sessions`, :meth:`Client.pending_turns`; streams:
:meth:`Client.subscribe`, :meth:`Client.watch`, :meth:`Client.follow`.
Forks and operator actions: :meth:`Client.fork` (a new session
continuing another from one of its seqs), :meth:`Client.steer` (an
operator's action on a live session).

Serving: :meth:`Client.serve` calls a handler once per turn with a
:class:`Turn` and posts its reply idempotently, across hub restarts.

Agents calling agents (docs/DELEGATION.md): on its turn a handler hands work
to child sessions and waits for it as for a tool call
(:meth:`Turn.delegate`, ``delegate_all``, ``delegate_any``), starts
background :class:`Task` s (:meth:`Turn.spawn`; ``poll``, ``message``,
``message_and_wait``, ``cancel``, ``wait``; :func:`await_all`,
:func:`await_any`), asks a person (:meth:`Turn.ask`; answered with
:meth:`Client.answer_question`, listed by :meth:`Client.list_questions`) or
passes its caller on (:meth:`Turn.pass_caller`). The call tree:
:meth:`Client.tree`, :meth:`Client.follow_tree`, :meth:`Client.replay`.

Tracing: every call and send carries the caller's W3C trace context
(OpenTelemetry's current span when it is installed, or
:func:`trace_context`); a served turn continues the trace of the envelope
that began it.

Errors: every refusal raises the :class:`HubError` subclass of its stable
reason (:class:`OutOfTurn`, :class:`SessionClosed`, ...).

Messages: the hub's generated messages are in :mod:`hubd.pb`.
"""

from ._deps import require as _require

_require()  # grpcio and protobuf, or an ImportError that says how to install them

from . import aio, graph, pb  # noqa: E402
from ._calls import TaskStatus
from ._model import (
    AGENT_HEADER,
    AWAIT_ALL,
    AWAIT_ANY,
    CANCEL_REASON,
    EVENT_ANSWER,
    EVENT_CLOSED,
    EVENT_CONTEXT_SET,
    EVENT_DELEGATION,
    EVENT_DELEGATION_RESULT,
    EVENT_EXPIRED,
    EVENT_INVITE,
    EVENT_INVITE_ACK,
    EVENT_INVITE_REJECT,
    EVENT_MESSAGE,
    EVENT_OPENED,
    EVENT_PACKET,
    EVENT_QUESTION,
    EVENT_QUESTION_CLOSED,
    EVENT_TASK_PROGRESS,
    EVENT_TEXT,
    EVENT_TOOL_CALL,
    EVENT_TOOL_RESULT,
    EVENT_VIOLATION,
    MODE_BACKGROUND,
    MODE_BLOCKING,
    NOTIFY_TURN,
    ROUTING_ESCALATE,
    ROUTING_FINISH,
    ROUTING_HANDOFF,
    ROUTING_PASS_CALLER,
    ROUTING_TEXT,
    STATE_CLOSED,
    STATE_EXPIRED,
    STATE_OPEN,
    STATE_PENDING,
    TASK_CANCELLED,
    TASK_CLOSED,
    TASK_EXPIRED,
    TASK_RUNNING,
    TLS,
    TYPE_CONSULTING,
    TYPE_CONVERSATION,
    TYPE_DISCUSSION,
    TYPE_WORKFLOW,
    VIEW_DEFAULT,
    VIEW_FULL,
    VIEW_LAST,
    VIEW_WINDOWED,
    Ack,
    Handler,
    Invite,
    InviteDecision,
    InviteFunc,
    Packet,
    Reply,
    Seconds,
    Session,
    SessionPage,
    Turn,
    auto_accepted,
    close_reason,
    context_update,
    ends,
    expect,
    from_value,
    invited,
    is_turn,
    new_msg_id,
    open_request,
    sender,
    text_of,
    to_value,
    turn_msg_id,
)
from ._stream import MAX_STREAM_ENVELOPE, TRANSPORT_STREAM, TRANSPORT_UNARY
from ._sync import Task, await_all, await_any
from ._trace import trace_context
from .client import Client, Stream, connect
from .errors import (
    ERROR_DOMAIN,
    BadAnswer,
    IdempotencyConflict,
    Quarantined,
    NotOwner,
    BadHandoffTarget,
    BadLifecycleTransition,
    Canceled,
    DeadlineExceeded,
    DelegateNotAllowed,
    DepthExceeded,
    DiskFull,
    StorageFailed,
    NothingToSteer,
    Purged,
    Erased,
    Draining,
    HubError,
    HubOnlyEvent,
    Impersonation,
    Internal,
    InvalidGraph,
    LimitReached,
    Malformed,
    NotParticipant,
    OutOfTurn,
    PermissionDenied,
    SessionClosed,
    SessionFailed,
    SessionNotOpen,
    SlowSubscriber,
    TooLarge,
    TurnHeld,
    Unauthenticated,
    Unavailable,
    UnknownSession,
    UnknownSessionType,
    Withdrawn,
    error_class,
)
from .graph import Graph, round_robin, sequence, supervisor

__version__ = "0.1.0"

__all__ = [
    "aio",
    "graph",
    "pb",
    "Client",
    "Stream",
    "connect",
    "TLS",
    "Ack",
    "Handler",
    "Invite",
    "InviteDecision",
    "InviteFunc",
    "Packet",
    "Reply",
    "Seconds",
    "Session",
    "SessionPage",
    "Turn",
    "Task",
    "TaskStatus",
    "await_all",
    "await_any",
    "Graph",
    "sequence",
    "round_robin",
    "supervisor",
    "auto_accepted",
    "close_reason",
    "context_update",
    "ends",
    "expect",
    "from_value",
    "invited",
    "is_turn",
    "new_msg_id",
    "open_request",
    "sender",
    "text_of",
    "to_value",
    "turn_msg_id",
    "trace_context",
    "error_class",
    "ERROR_DOMAIN",
    "HubError",
    "OutOfTurn",
    "NotParticipant",
    "SessionClosed",
    "SessionNotOpen",
    "BadHandoffTarget",
    "Malformed",
    "InvalidGraph",
    "UnknownSessionType",
    "BadLifecycleTransition",
    "HubOnlyEvent",
    "UnknownSession",
    "TooLarge",
    "PermissionDenied",
    "LimitReached",
    "DepthExceeded",
    "Unavailable",
    "SessionFailed",
    "Draining",
    "SlowSubscriber",
    "Unauthenticated",
    "Impersonation",
    "Canceled",
    "DeadlineExceeded",
    "Internal",
    "DiskFull",
    "StorageFailed",
    "NothingToSteer",
    "Purged",
    "Erased",
    "TurnHeld",
    "DelegateNotAllowed",
    "BadAnswer",
    "Withdrawn",
    "IdempotencyConflict",
    "Quarantined",
    "NotOwner",
    "AGENT_HEADER",
    "AWAIT_ALL",
    "AWAIT_ANY",
    "CANCEL_REASON",
    "MODE_BACKGROUND",
    "MODE_BLOCKING",
    "NOTIFY_TURN",
    "TASK_CANCELLED",
    "TASK_CLOSED",
    "TASK_EXPIRED",
    "TASK_RUNNING",
    "EVENT_DELEGATION_RESULT",
    "EVENT_MESSAGE",
    "EVENT_QUESTION_CLOSED",
    "EVENT_TOOL_CALL",
    "EVENT_TOOL_RESULT",
    "ROUTING_PASS_CALLER",
    "EVENT_ANSWER",
    "EVENT_CLOSED",
    "EVENT_CONTEXT_SET",
    "EVENT_DELEGATION",
    "EVENT_EXPIRED",
    "EVENT_INVITE",
    "EVENT_INVITE_ACK",
    "EVENT_INVITE_REJECT",
    "EVENT_OPENED",
    "EVENT_PACKET",
    "EVENT_QUESTION",
    "EVENT_TASK_PROGRESS",
    "EVENT_TEXT",
    "EVENT_VIOLATION",
    "ROUTING_ESCALATE",
    "ROUTING_FINISH",
    "ROUTING_HANDOFF",
    "ROUTING_TEXT",
    "STATE_CLOSED",
    "STATE_EXPIRED",
    "STATE_OPEN",
    "STATE_PENDING",
    "TYPE_CONSULTING",
    "TYPE_CONVERSATION",
    "TYPE_DISCUSSION",
    "TYPE_WORKFLOW",
    "VIEW_DEFAULT",
    "VIEW_FULL",
    "VIEW_LAST",
    "VIEW_WINDOWED",
    "TRANSPORT_STREAM",
    "TRANSPORT_UNARY",
    "MAX_STREAM_ENVELOPE",
]
