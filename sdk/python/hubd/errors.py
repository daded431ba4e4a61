"""The errors of the hub, one exception per stable reason.

Every refusal of the hub is a gRPC status with a ``google.rpc.ErrorInfo``
detail of domain ``"hubd"`` whose reason is the name of a ``hubd.v1.Reason``
value (``"OUT_OF_TURN"``, ...). The SDK raises the exception of that reason,
a subclass of :class:`HubError`, which keeps the reason, the hub's message
and the gRPC code::

    try:
        client.send_text(session_id, "me first")
    except hubd.OutOfTurn as e:
        print(e.detail)   # workflow expects "bob" to speak, got "carol"
        print(e.reason)   # OUT_OF_TURN
        print(e.code)     # grpc.StatusCode.FAILED_PRECONDITION

A failure gRPC made itself (no reason) is mapped by its code: an
unreachable hub or a dropped connection is :class:`Unavailable` (as are the
hub's ``DRAINING`` and ``SESSION_FAILED``: retry), bad credentials
:class:`Unauthenticated`, a cancelled call :class:`Canceled`, a passed
deadline :class:`DeadlineExceeded`, a message over gRPC's own size cap
:class:`TooLarge` (its detail naming the size and the limit); any other is
a plain :class:`HubError`.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, Optional, Tuple, Type

import grpc

try:  # googleapis-common-protos registers the same messages: use its copy when present.
    from google.rpc import error_details_pb2 as _error_details  # type: ignore[import-not-found,unused-ignore]
    from google.rpc import status_pb2 as _status  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # the SDK's minimal copies
    from ._pb import error_details_pb2 as _error_details  # type: ignore[no-redef,unused-ignore]
    from ._pb import status_pb2 as _status  # type: ignore[no-redef,unused-ignore]

__all__ = [
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
    "error_class",
    "from_rpc_error",
    "StatusError",
]

ERROR_DOMAIN = "hubd"
"""The ``google.rpc.ErrorInfo`` domain of the hub's errors."""

_DETAILS_KEY = "grpc-status-details-bin"


class HubError(Exception):
    """A call the hub refused, or that failed on the way.

    Attributes:
        detail: the hub's message, e.g. ``workflow expects "bob" to speak,
            got "carol"``.
        reason: the hub's stable reason (``"OUT_OF_TURN"``, ...); ``""`` for
            an error gRPC made itself (a broken connection).
        code: the gRPC status code (``None`` for an error made by the SDK).
        op: the call that failed (``"send"``, ``"open"``, ``"subscribe"``,
            ...).
    """

    REASON: str = ""
    """The reason this class stands for (``""`` for the base classes)."""

    def __init__(
        self,
        detail: str = "",
        *,
        reason: Optional[str] = None,
        code: Optional[grpc.StatusCode] = None,
        op: str = "",
        metadata: Optional[Dict[str, str]] = None,
    ) -> None:
        self.detail = detail
        self.reason = self.REASON if reason is None else reason
        self.code = code
        self.op = op
        self.metadata: Dict[str, str] = dict(metadata or {})
        """The ErrorInfo metadata of the hub's answer (``PURGED``:
        ``purged_at``, ``archive``; ``TOO_LARGE``: ``limit``, ``value``)."""
        super().__init__(detail)

    @property
    def message(self) -> str:
        """The hub's message (the same as :attr:`detail`)."""
        return self.detail

    @property
    def retryable(self) -> bool:
        """Whether the call may succeed if repeated as it is: the hub or the
        connection was unavailable, or a stream was cut off as slow."""
        if isinstance(self, (Unavailable, SlowSubscriber)):
            return True
        # gRPC's own transport failures (a reset stream, a server that went
        # away mid-stream).
        return not self.reason and self.code in (
            grpc.StatusCode.INTERNAL,
            grpc.StatusCode.UNKNOWN,
            grpc.StatusCode.ABORTED,
        )

    def __str__(self) -> str:
        tag = self.reason or (self.code.name if self.code is not None else "")
        text = f"{self.op}: {self.detail}" if self.op else self.detail
        return f"{text} ({tag})" if tag else text

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.detail!r}, reason={self.reason!r}, code={self.code}, op={self.op!r})"

    def __reduce__(self) -> Tuple[Any, ...]:
        return (_rebuild, (type(self), self.detail, self.reason, self.code, self.op, self.metadata))


def _rebuild(
    cls: Type[HubError], detail: str, reason: str, code: Optional[grpc.StatusCode], op: str, metadata: Optional[Dict[str, str]] = None
) -> HubError:
    return cls(detail, reason=reason, code=code, op=op, metadata=metadata)


class OutOfTurn(HubError):
    """The caller is a participant but not the one expected to speak."""

    REASON = "OUT_OF_TURN"


class NotParticipant(HubError):
    """The caller is not a participant of the session."""

    REASON = "NOT_PARTICIPANT"


class SessionClosed(HubError):
    """The session has ended (closed or expired) and accepts nothing more."""

    REASON = "SESSION_CLOSED"


class SessionNotOpen(HubError):
    """The session still waits for invite acknowledgements."""

    REASON = "SESSION_NOT_OPEN"


class BadHandoffTarget(HubError):
    """A handoff names an agent that cannot take the turn; the message lists
    the valid targets."""

    REASON = "BAD_HANDOFF_TARGET"


class Malformed(HubError):
    """A field is missing or wrong; the message names it."""

    REASON = "MALFORMED"


class InvalidGraph(HubError):
    """A workflow graph does not decode or validate; the message names the
    node."""

    REASON = "INVALID_GRAPH"


class UnknownSessionType(HubError):
    """The session type is not served; the message lists the served ones."""

    REASON = "UNKNOWN_SESSION_TYPE"


class BadLifecycleTransition(HubError):
    """A lifecycle move that is not allowed, e.g. acknowledging an invite
    twice."""

    REASON = "BAD_LIFECYCLE_TRANSITION"


class HubOnlyEvent(HubError):
    """An agent sent an event type only the hub writes."""

    REASON = "HUB_ONLY_EVENT"


class UnknownSession(HubError):
    """No session has that id."""

    REASON = "UNKNOWN_SESSION"


class TooLarge(HubError):
    """The envelope (or request) is over the hub's size limit, or over
    gRPC's own cap on one message: gRPC refuses that itself, before the hub
    sees it (``RESOURCE_EXHAUSTED`` without a reason); the detail then names
    the message's size and the limit."""

    REASON = "TOO_LARGE"


class PermissionDenied(HubError):
    """The caller may not do this, e.g. close another agent's session."""

    REASON = "PERMISSION_DENIED"


class LimitReached(HubError):
    """A per-agent limit is reached, e.g. open sessions."""

    REASON = "LIMIT_REACHED"


class DepthExceeded(HubError):
    """A child session would be deeper than the hub allows."""

    REASON = "DEPTH_EXCEEDED"


class Unavailable(HubError):
    """The hub cannot serve the call now: the connection is down (gRPC
    ``UNAVAILABLE``), the hub is shutting down (:class:`Draining`) or a
    session's log failed to write (:class:`SessionFailed`). Retry."""


class SessionFailed(Unavailable):
    """The session's log could not be written or read; retry."""

    REASON = "SESSION_FAILED"


class Draining(Unavailable):
    """The hub is shutting down; reconnect."""

    REASON = "DRAINING"


class SlowSubscriber(HubError):
    """A stream fell behind its buffer; resubscribe from the cursors."""

    REASON = "SLOW_SUBSCRIBER"


class Unauthenticated(HubError):
    """No or unknown credentials (a wrong token, a name outside development
    mode)."""

    REASON = "UNAUTHENTICATED"


class Impersonation(HubError):
    """An envelope names a sender other than the caller."""

    REASON = "IMPERSONATION"


class Canceled(HubError):
    """The caller cancelled the call."""

    REASON = "CANCELED"


class DeadlineExceeded(HubError):
    """The caller's deadline passed."""

    REASON = "DEADLINE_EXCEEDED"


class Internal(HubError):
    """A bug in the hub; it is logged there."""

    REASON = "INTERNAL"


class DiskFull(HubError):
    """The hub's disk is below its free-space reserve: writes are refused
    until space returns; reads go on. Not retried automatically."""

    REASON = "DISK_FULL"


class StorageFailed(HubError):
    """The hub cannot make a write durable on its storage (its data
    directory vanished, turned read-only or fails): every write is refused
    until an operator acts. Not retried."""

    REASON = "STORAGE_FAILED"


class NothingToSteer(HubError):
    """An operator action whose object is not there now: no held turn to
    release, no running period of the expectation named."""

    REASON = "NOTHING_TO_STEER"


class Purged(HubError):
    """The session was purged by its retention or an operator: its records
    are gone from the hub's log. ``metadata["purged_at"]`` (RFC 3339) says
    when and ``metadata["archive"]`` the archive file that holds it ("":
    purged without an archive). Not retried."""

    REASON = "PURGED"


class Erased(HubError):
    """The session was erased on an operator's request: its content is
    gone from the hub. ``metadata["erased_at"]`` (RFC 3339) says when,
    ``metadata["erased_by"]`` by whom and ``metadata["reason"]`` why. Not
    retried."""

    REASON = "ERASED"


class TurnHeld(HubError):
    """The turn is held: its holder waits for a child session or an answer,
    and nobody speaks meanwhile (the message names what is awaited)."""

    REASON = "TURN_HELD"


class DelegateNotAllowed(HubError):
    """The delegate is not in the parent session's allow-list (the message
    names who may be called)."""

    REASON = "DELEGATE_NOT_ALLOWED"


class BadAnswer(HubError):
    """The answer does not fit its question (the message says what would be
    valid)."""

    REASON = "BAD_ANSWER"


class Withdrawn(HubError):
    """A question was withdrawn before it was answered: its session ended,
    or its deadline closed it (raised by ``Turn.ask``; not a reason of the
    hub, which writes a ``question_closed`` envelope)."""


class IdempotencyConflict(HubError):
    """An open reused the idempotency key of an earlier one with other
    parameters (the message names the session the key made and the first
    difference): use a new key."""

    REASON = "IDEMPOTENCY_CONFLICT"


class Quarantined(HubError):
    """The session's log is damaged; it serves nothing until an operator
    restores it. Not retryable."""

    REASON = "QUARANTINED"

class NotOwner(Unavailable):
    """In a cluster, the node that serves the session's partition could
    not be reached at the moment: the partition changes hands, or its node
    died. Retry shortly with the same client message id (the node asked
    already waited for an owner, within the call's deadline)."""

    REASON = "NOT_OWNER"


def _subclasses(cls: Type[HubError]) -> Iterable[Type[HubError]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


_BY_REASON: Dict[str, Type[HubError]] = {c.REASON: c for c in _subclasses(HubError) if c.REASON}

_BY_CODE: Dict[grpc.StatusCode, Type[HubError]] = {
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.CANCELLED: Canceled,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    # gRPC's own refusal of a message over its size cap, before the hub
    # saw it.
    grpc.StatusCode.RESOURCE_EXHAUSTED: TooLarge,
}


def error_class(reason: str) -> Optional[Type[HubError]]:
    """The exception class of a stable reason name (``"OUT_OF_TURN"`` →
    :class:`OutOfTurn`), or ``None`` for a reason this SDK does not know."""
    return _BY_REASON.get(reason)


def _reason(trailing: Optional[Iterable[Tuple[str, Any]]]) -> str:
    return error_info(trailing)[0]


def error_info(trailing: Optional[Iterable[Tuple[str, Any]]]) -> Tuple[str, Dict[str, str]]:
    """The hub's ErrorInfo in a failed call's trailing metadata: its stable
    reason and its metadata (``NOT_OWNER``: ``owner_addr``, ``owner_node``,
    ``partition``); ``("", {})`` when there is none."""
    for key, value in trailing or ():
        if key != _DETAILS_KEY:
            continue
        try:
            st = _status.Status.FromString(value)
        except Exception:  # a detail we cannot read is no reason
            return "", {}
        for d in st.details:
            info = _error_details.ErrorInfo()
            if d.Unpack(info) and info.domain == ERROR_DOMAIN:
                return str(info.reason), dict(info.metadata)
    return "", {}


def from_rpc_error(op: str, err: grpc.RpcError) -> HubError:
    """The :class:`HubError` of a failed gRPC call (sync or asyncio): the
    class of its reason if the hub gave one, else of its code."""
    code: Optional[grpc.StatusCode] = None
    detail = str(err)
    trailing: Any = None
    if isinstance(err, grpc.Call) or hasattr(err, "code"):
        try:
            code = err.code()  # type: ignore[attr-defined]
            detail = err.details() or ""  # type: ignore[attr-defined]
            trailing = err.trailing_metadata()  # type: ignore[attr-defined]
        except Exception:  # not a call after all
            pass
    reason, metadata = error_info(trailing)
    cls = _BY_REASON.get(reason) or (_BY_CODE.get(code) if code is not None else None) or HubError
    if cls is TooLarge and not reason:
        detail = over_cap(detail)
    return cls(detail, reason=reason, code=code, op=op, metadata=metadata)


_OVER_CAP = re.compile(r"larger than max \((\d+) vs\.? (\d+)\)")
_OVER_LIMIT = re.compile(r"larger than (\d+)")


def over_cap(detail: str) -> str:
    """The detail of gRPC's own refusal of a message over its size cap
    ("grpc: received message larger than max (N vs. M)", "Sent message
    larger than max (N vs. M)", "... a size larger than M"), with the
    size and the limit named first; any other detail as it is."""
    m = _OVER_CAP.search(detail)
    if m is not None:
        size, limit = m.groups()
        return f"the message is {size} bytes, over gRPC's limit of {limit} bytes per message ({detail})"
    m = _OVER_LIMIT.search(detail)
    if m is not None:
        return f"the message is over gRPC's limit of {m.group(1)} bytes per message ({detail})"
    return detail


class StatusError(grpc.RpcError, grpc.Call):  # type: ignore[misc]
    """A gRPC status that came as data rather than as a call's end: a send
    or open the hub refused on the agent's stream
    (``hubd.v1.StreamError``: the code, message, reason and ErrorInfo
    metadata a ``Send`` or ``Open`` call would have ended with), or a
    stream that broke under a send or open. It reads as the
    failed call would (``code()``, ``details()``, ``trailing_metadata()``
    with the ``grpc-status-details-bin`` ErrorInfo), so that
    :func:`from_rpc_error` raises the same exception for both transports;
    it is that exception's ``__cause__``."""

    def __init__(
        self, code: grpc.StatusCode, details: str, reason: str = "", metadata: Optional[Dict[str, str]] = None
    ) -> None:
        super().__init__(details)
        self._code, self._details = code, details
        self._trailing: Tuple[Tuple[str, Any], ...] = ()
        if reason:
            st = _status.Status(code=code.value[0], message=details)
            st.details.add().Pack(_error_details.ErrorInfo(reason=reason, domain=ERROR_DOMAIN, metadata=metadata or {}))
            self._trailing = ((_DETAILS_KEY, st.SerializeToString()),)

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> Any:
        return self._trailing

    def initial_metadata(self) -> Any:
        return ()

    def is_active(self) -> bool:
        return False

    def time_remaining(self) -> Optional[float]:
        return None

    def cancel(self) -> bool:
        return False

    def add_callback(self, callback: Any) -> bool:
        return False

    def __str__(self) -> str:
        return f"{self._code.name}: {self._details}"


_CODES: Dict[int, grpc.StatusCode] = {c.value[0]: c for c in grpc.StatusCode}


def status_code(n: int) -> grpc.StatusCode:
    """The gRPC status code of its number (UNKNOWN for one gRPC does not
    have)."""
    return _CODES.get(n, grpc.StatusCode.UNKNOWN)
