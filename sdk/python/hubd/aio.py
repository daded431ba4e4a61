"""The asyncio client: :class:`Client` connects to a hub as one agent, with
coroutines, and :meth:`Client.serve` runs handlers as tasks.

It is the SDK's one client core: the sync :class:`hubd.Client` is a thin
layer over it (an event loop in a thread of its own per client, each call
a coroutine of this client run there), so both behave alike::

    import asyncio, hubd.aio

    async def main() -> None:
        async with hubd.aio.Client("127.0.0.1:7420", name="writer") as c:
            await c.serve(lambda turn: "Draft: " + turn.text)

    asyncio.run(main())
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from typing import (
    Any,
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
    cast,
)

import grpc
import grpc.aio

from . import _calls, _common, _ops, _serve, _stream, _trace, errors
from ._calls import Task, TaskStatus, Turn, await_all, await_any
from ._delta import TurnStream
from ._model import (
    MODE_BACKGROUND,
    MODE_BLOCKING,
    TYPE_WORKFLOW,
    VIEW_DEFAULT,
    TLS,
    Ack,
    Invite,
    InviteDecision,
    Packet,
    Reply,
    Seconds,
    Session,
    SessionPage,
    ends,
    invited,
    new_msg_id,
    open_request,
)
from ._pb import hub_pb2 as pb
from ._pb import hub_service_pb2_grpc as pb_grpc
from .graph import Graph

__all__ = [
    "Client",
    "Stream",
    "connect",
    "AsyncHandler",
    "AsyncInviteFunc",
    "Task",
    "TaskStatus",
    "Turn",
    "TurnStream",
    "await_all",
    "await_any",
]

_T = TypeVar("_T")

AsyncHandler = Callable[[Turn], Union[Reply, Awaitable[Reply]]]
"""A serve handler under asyncio: a coroutine function (awaited on the event
loop) or a plain function (run in a worker thread)."""

AsyncInviteFunc = Callable[[Invite], Union[InviteDecision, Awaitable[InviteDecision]]]
"""Decides an invite (see :data:`hubd.InviteDecision`); may be a coroutine
function."""

AsyncSessionFilter = Callable[[Session], Union[bool, Awaitable[bool]]]
"""Decides whether serve serves a session; may be a coroutine function."""


class Stream(AsyncIterator[pb.Delivery]):
    """A stream of deliveries from :meth:`Client.subscribe` or
    :meth:`Client.watch`: ``async for d in stream``. It ends when the hub ends
    it cleanly or when you :meth:`close` it, and raises a
    :class:`hubd.HubError` when it is cut off (:class:`hubd.SlowSubscriber`,
    :class:`hubd.Unavailable`: resubscribe from your cursors)."""

    def __init__(self, op: str, call: Any) -> None:
        self._op = op
        self._call = call
        self._closed = False

    def __aiter__(self) -> "Stream":
        return self

    async def __anext__(self) -> pb.Delivery:
        d = await self.recv()
        if d is None:
            raise StopAsyncIteration
        return d

    async def recv(self) -> Optional[pb.Delivery]:
        """The next delivery, waiting for it; ``None`` when the stream ended
        (cleanly, or closed)."""
        try:
            d = await self._call.read()
        except asyncio.CancelledError:
            if self._closed:
                return None
            raise
        except grpc.RpcError as e:
            if self._closed:
                return None
            raise errors.from_rpc_error(self._op, e) from e
        if d is grpc.aio.EOF:
            return None
        return d  # type: ignore[no-any-return]

    def close(self) -> None:
        """End the stream."""
        self._closed = True
        self._call.cancel()

    async def __aenter__(self) -> "Stream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()


class Client:
    """A connection to a hub as one agent, for asyncio. The connection is
    made by :meth:`connect` (or ``async with``, or :func:`hubd.aio.connect`),
    which waits up to ``connect_timeout`` seconds for it. Close it when done.

    Create it inside the event loop that uses it (gRPC's asyncio channels
    belong to one loop). :class:`hubd.Client` takes the same arguments and
    connects in its constructor.

    Args:
        target: the hub's ``host:port`` (or any gRPC target).
        name: the agent's name. Without a token it is sent as the
            ``x-hubd-agent`` metadata (the hub's development mode, loopback
            only). With a token the hub knows the agent from the token; the
            name may then be left empty, or must be the token's agent (serve
            uses it to recognise its invites).
        token: sent as ``authorization: Bearer <token>`` on every call.
        tls: secures the connection (:class:`hubd.TLS`); ``None`` means
            plaintext, which carries a token only to a loopback address
            unless ``insecure`` is set. With a client certificate (mTLS) the
            hub names the agent by the certificate's common name.
        insecure: allow a token over plaintext to a non-loopback target.
        send_attempts: how many times a send is tried while the hub is
            unavailable, always with the same client message id so a retry
            never duplicates; 1 disables retries.
        retry_budget: seconds a send keeps being retried while the hub is
            unavailable, from its first try; each retry waits for the
            connection to be ready (gRPC's wait_for_ready) within it, so a
            send made during a hub restart goes through once it is back.
        connect_timeout: wait this many seconds for the connection and raise
            :class:`hubd.Unavailable` if it is not up (a wrong address fails
            here, not at the first call); ``None`` connects lazily.
        channel_options: gRPC channel options, after the SDK's own.
        logger: receives the client's diagnostics (reconnects, stale turns,
            ignored errors); default the ``"hubd"`` logger.
        transport: how the client sends. ``"stream"`` (the default): one
            agent stream per client carries its sends and opens and their
            acknowledgements, and :meth:`serve` reads its deliveries from
            (and posts its replies on) a stream of its own; a refused send
            or open raises exactly what a ``Send`` or ``Open`` call would.
            ``"unary"``: a ``Send`` call per envelope, an ``Open`` call per
            open and a ``Subscribe`` stream for :meth:`serve`. For an
            envelope or open request over 1 MiB, and against a hub
            without the agent stream (UNIMPLEMENTED), the
            client sends unary whatever this says; it opens with an
            ``Open`` call against a hub that does not take opens on the
            stream.

    Raises:
        ValueError: the settings cannot work (no name, token or client
            certificate; a token over plaintext to a remote host; an
            unknown transport).
        hubd.Unavailable: no connection within ``connect_timeout``.
    """

    def __init__(
        self,
        target: str = "127.0.0.1:7420",
        *,
        name: str = "",
        token: str = "",
        tls: Optional[TLS] = None,
        insecure: bool = False,
        send_attempts: int = 3,
        retry_budget: float = 10.0,
        connect_timeout: Optional[float] = 10.0,
        channel_options: Sequence[Tuple[str, Any]] = (),
        logger: Optional[logging.Logger] = None,
        transport: str = _stream.TRANSPORT_STREAM,
    ) -> None:
        _common.check(target, name, token, tls, insecure)
        _stream.check_transport(transport)
        options = _common.channel_options(tls, channel_options)
        self._tls, self._options = tls, options  # (the sync client dials its raw channel with them)

        def dial(addr: str) -> grpc.aio.Channel:
            if tls is not None:
                return grpc.aio.secure_channel(addr, _common.credentials(tls), options=options)
            return grpc.aio.insecure_channel(addr, options=options)

        self._channel = dial(target)
        self._target = target
        self._name = name
        self._md = _common.metadata(name, token)
        self._raw = pb_grpc.HubStub(self._channel)  # type: ignore[no-untyped-call]
        self._stub: Any = self._raw
        self._attempts = max(1, send_attempts)
        self._budget = retry_budget
        self._connect_timeout = connect_timeout
        self.log = logger or _common.LOG
        # No agent stream: asked for, or a hub without it.
        self._unary = transport == _stream.TRANSPORT_UNARY
        self._stream: Optional[_stream.AgentStream] = None
        self._stream_lock: Optional[asyncio.Lock] = None  # made in the loop

    async def connect(self) -> "Client":
        """Wait until the connection is up (at most ``connect_timeout``
        seconds; raises :class:`hubd.Unavailable`); returns the client."""
        try:
            await asyncio.wait_for(self._channel.channel_ready(), self._connect_timeout)
        except asyncio.TimeoutError:
            raise errors.Unavailable(
                f"no connection to {self._target} within {self._connect_timeout:g}s", reason="", op="connect"
            ) from None
        return self

    @property
    def name(self) -> str:
        """The agent's name as given."""
        return self._name

    @property
    def target(self) -> str:
        """The hub's address as given."""
        return self._target

    @property
    def raw(self) -> pb_grpc.HubStub:
        """The generated gRPC stub on the same channel; pass
        :attr:`metadata` with each call."""
        return self._raw

    @property
    def metadata(self) -> Tuple[Tuple[str, str], ...]:
        """The call metadata that names the agent."""
        return self._md

    @property
    def channel(self) -> grpc.aio.Channel:
        """The gRPC channel."""
        return self._channel

    @property
    def transport(self) -> str:
        """How the client sends now: ``"stream"``, or ``"unary"`` (asked
        for, or against a hub without the agent stream)."""
        return _stream.TRANSPORT_UNARY if self._unary else _stream.TRANSPORT_STREAM

    async def close(self) -> None:
        """Close the connection; streams and calls in flight fail."""
        st, self._stream = self._stream, None
        if st is not None:
            st.close()
        await self._channel.close()

    async def __aenter__(self) -> "Client":
        if self._connect_timeout is not None:
            try:
                await self.connect()
            except BaseException:
                await self.close()
                raise
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"hubd.aio.Client({self._target!r}, name={self._name!r})"

    async def _call(
        self,
        op: str,
        method: Callable[..., Any],
        req: Any,
        timeout: Optional[float] = None,
        wait_for_ready: bool = False,
        trace: Optional[_trace.TraceContext] = None,
    ) -> Any:
        """Make a unary call with the agent's metadata and the trace
        context (the caller's unless given)."""
        md = _trace.metadata(self._md, trace)
        try:
            return await method(req, metadata=md, timeout=timeout, wait_for_ready=wait_for_ready)
        except grpc.RpcError as e:
            raise errors.from_rpc_error(op, e) from e

    def _no_stream(self, why: str) -> None:
        """The hub has no agent stream: send unary from now on."""
        if not self._unary:
            self._unary = True
            self.log.info("hubd: the hub at %s has no agent stream: %s", self._target, why)

    async def _main_stream(self, timeout: Optional[float], wait: bool) -> Optional[_stream.AgentStream]:
        """The client's agent stream for its sends and opens, opened if
        needed (its opening bounded by timeout); None when the client sends
        unary."""
        if self._stream_lock is None:
            self._stream_lock = asyncio.Lock()
        async with self._stream_lock:
            if self._unary:
                return None
            st = self._stream
            if st is not None and not st.done.is_set():
                return st
            st = _stream.AgentStream(self._raw, self._md, self.log, wait_for_ready=wait)
            try:
                await st.start(None, timeout)
            except _stream.NoStream:
                self._no_stream("sending with unary calls")
                return None
            self._stream = st
            return st

    async def _send_once(self, session_id: str, env: pb.Envelope, timeout: Optional[float], wait: bool) -> Ack:
        """Send env once: over the client's stream, or with a Send call."""
        if _stream.fits(env):
            st = self._stream
            if st is None or st.done.is_set():
                try:
                    st = await self._main_stream(timeout, wait)
                except errors.HubError as e:
                    e.op = "send"  # the send failed, opening its stream
                    raise
            if st is not None:
                return await st.send(session_id, env, timeout)
        req = pb.SendRequest(session_id=session_id, envelope=env)
        return Ack.from_proto(
            await self._call(
                "send", self._stub.Send, req, timeout, wait_for_ready=wait, trace=_trace.of_envelope(env.traceparent)
            ), env.client_msg_id
        )

    async def _send(self, session_id: str, env: pb.Envelope, attempts: int, timeout: Optional[float]) -> Ack:
        deadline = time.monotonic() + max(self._budget, 0.0)
        attempt, wait, last = 1, False, None
        while True:
            call_timeout = timeout
            if wait:  # a retry waits for the connection, within the budget
                left = deadline - time.monotonic()
                call_timeout = left if timeout is None else min(timeout, left)
            try:
                return await self._send_once(session_id, env, call_timeout, wait)
            except errors.DeadlineExceeded:
                if wait and last is not None and time.monotonic() >= deadline:
                    raise last from None  # the budget ran out waiting for the hub
                raise
            except errors.Unavailable as e:
                last = e
                if attempt >= attempts or time.monotonic() >= deadline:
                    raise
                self.log.info("hubd: send to %s: %s; retrying (%d/%d)", session_id, e, attempt, attempts)
                await asyncio.sleep(_common.backoff_delay(attempt, 0.05, 1.0))
                attempt, wait = attempt + 1, True

    # Sessions.

    async def open(
        self,
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
        timeout: Optional[float] = None,
    ) -> Session:
        """Create a session; the caller is its creator and first participant.

        It is logged with its invite and opens once every participant not
        auto-accepted has acknowledged (at once when none must); the first
        speaker is then told it is its turn. The arguments are those of
        :func:`hubd.open_request` (participants given by name are invited:
        they must acknowledge; use :func:`hubd.auto_accepted` for those who
        need not).

        With ``transport="stream"`` it goes over the client's agent
        stream, as its sends do, when the hub takes opens there (an
        ``Open`` call otherwise, and for a request over 1 MiB); a refusal
        raises what the call would. An open is not retried: when it fails
        with :class:`hubd.Unavailable` its outcome is unknown, and opening
        again with the same ``idempotency_key`` returns the session it
        made, if any (``existing``).
        """
        req = open_request(
            session_type,
            participants=participants,
            graph=graph,
            knobs=knobs,
            labels=labels,
            ttl=ttl,
            invite_timeout=invite_timeout,
            expectations=expectations,
            parent=parent,
            idempotency_key=idempotency_key,
            task=task,
            delegates=delegates,
            budget=budget,
            thread_key=thread_key,
        )
        return await self._open(req, timeout)

    async def _open(self, req: pb.OpenRequest, timeout: Optional[float]) -> Session:
        """Open once: over the client's stream when the hub takes opens
        there, else (or when the stream would not open: the call then says
        why) with an Open call."""
        if _stream.fits(req):
            st = self._stream
            if st is None or st.done.is_set():
                try:
                    st = await self._main_stream(timeout, False)
                except errors.HubError:
                    st = None
            if st is not None and st.opens:
                return await st.open(req, timeout)
        resp = await self._call("open", self._stub.Open, req, timeout)
        return Session(resp.session, resp.existing)

    async def open_workflow(self, graph: Graph, *participants: str, timeout: Optional[float] = None) -> Session:
        """Open a workflow session following ``graph`` with the named
        participants invited (see :meth:`hubd.Client.open_workflow`)."""
        return await self.open(TYPE_WORKFLOW, graph=graph, participants=invited(*participants), timeout=timeout)

    async def get_session(self, session_id: str, *, timeout: Optional[float] = None) -> Session:
        """A session's metadata and current state. Only its participants (or
        an operator) may read it."""
        req = pb.GetSessionRequest(session_id=session_id)
        return Session(await self._call("get session", self._stub.GetSession, req, timeout))

    async def list_sessions(
        self,
        *,
        state: str = "",
        creator: str = "",
        participant: str = "",
        labels: Optional[Mapping[str, str]] = None,
        page_token: str = "",
        page_size: int = 0,
        timeout: Optional[float] = None,
    ) -> SessionPage:
        """One page of the sessions the caller takes part in (all, for an
        operator), oldest first, with only their metadata, state, seq and
        close reason filled in. Empty filters match everything; ``page_size``
        0 is the hub's default (100, at most 1000)."""
        req = _common.list_request(state, creator, participant, labels, page_token, page_size)
        resp = await self._call("list sessions", self._stub.ListSessions, req, timeout)
        return SessionPage([Session(s) for s in resp.sessions], resp.next_page_token)

    async def ack_invite(self, session_id: str, *, timeout: Optional[float] = None) -> Ack:
        """Accept the caller's invite to a session; the last ack opens it."""
        req = pb.InviteRequest(session_id=session_id)
        return Ack.from_proto(await self._call("ack invite", self._stub.AckInvite, req, timeout))

    async def reject_invite(self, session_id: str, reason: str = "", *, timeout: Optional[float] = None) -> Ack:
        """Decline the caller's invite; the session closes with
        ``invite_rejected``. ``reason`` (``""``: the hub's ``declined``) is
        logged."""
        req = pb.InviteRequest(session_id=session_id, reason=reason)
        return Ack.from_proto(await self._call("reject invite", self._stub.RejectInvite, req, timeout))

    async def close_session(self, session_id: str, reason: str = "", *, timeout: Optional[float] = None) -> Ack:
        """End a session with ``reason`` (``""`` is ``explicit_close``). Only
        its creator (or an operator) may close it."""
        req = pb.CloseRequest(session_id=session_id, reason=reason)
        return Ack.from_proto(await self._call("close session", self._stub.Close, req, timeout))

    async def fork(
        self,
        session_id: str,
        at_seq: int,
        *,
        set: Optional[Mapping[str, Any]] = None,
        delete: Sequence[str] = (),
        next_speaker: str = "",
        labels: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> Session:
        """Open a new session that continues ``session_id`` from its seq
        ``at_seq`` (1 to its last seq), and return it (open at once).

        The fork has the source's type, graph, knobs and participants and
        its state at that seq (turns, context, usage, who speaks next; no
        held turn, pending question or children), then the edits: context
        variables ``delete`` d, then ``set`` (any JSON values), the
        participant ``next_speaker`` expected ("": whoever the source
        expected; workflow sessions only), ``labels`` added to the
        source's; the hub labels it ``forked_from``. The source is not
        changed; an ended source can be forked. A participant of the
        source (or an operator) may fork it. Not retried: each call opens
        a new session.

        Raises:
            hubd.UnknownSession: no such source.
            hubd.PermissionDenied: the caller takes no part in the source.
            hubd.Malformed: ``at_seq`` outside the source's log (the message
                names the range), context edits that are not valid, a
                ``next_speaker`` who is not a participant or for a session
                type without a speaker order.
            hubd.BadLifecycleTransition: a seq where an invite still awaited
                its answer, or a source that never opened.
        """
        req = _ops.fork_request(session_id, at_seq, set, delete, next_speaker, labels)
        return Session((await self._call("fork", self._stub.Fork, req, timeout)).session)

    async def steer(
        self,
        session_id: str,
        reason: str,
        *,
        set_context: Optional[Mapping[str, Any]] = None,
        unset_context: Sequence[str] = (),
        next_speaker: Optional[str] = None,
        release_result: Optional[str] = None,
        extend_timer: Optional[Tuple[str, Seconds]] = None,
        cancel_timer: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Ack:
        """As an operator, act on a live session, saying why (``reason``,
        required). The hub writes the action as an ``operator_action``
        envelope naming the operator and the reason, delivers it like any
        envelope and folds it into the session's state. Give exactly one
        action:

        - ``set_context`` / ``unset_context`` (together one action): delete,
          then set, context variables, as a ``context_set`` would;
        - ``next_speaker``: that participant speaks next, once, over the
          graph's choice (workflow sessions);
        - ``release_result``: release the held turn (a question's or a
          blocking delegation's) with this result as its answer;
        - ``extend_timer=(name, seconds)``: the running period of the
          expectation ``name`` falls due that much later;
        - ``cancel_timer=name``: that period does not fire.

        Not retried (the action has no idempotency key).

        Raises:
            ValueError: no action, or more than one.
            hubd.PermissionDenied: the caller is not an operator.
            hubd.NothingToSteer: nothing to act on now (no held turn to
                release, no running period of the expectation named).
            hubd.Malformed: no reason, a deleted variable that is not set,
                a next speaker who is not a participant or a session type
                without a turn order, an unknown expectation (the message
                names what would be valid).
            hubd.TurnHeld: a next speaker while a turn is held.
            hubd.SessionClosed, hubd.SessionNotOpen: the session is not live.
        """
        req = _ops.steer_request(
            session_id, reason, set_context, unset_context, next_speaker, release_result, extend_timer, cancel_timer
        )
        return Ack.from_proto(await self._call("steer", self._stub.Steer, req, timeout))

    # Sends. Every send takes these keyword arguments:
    #   client_msg_id: the idempotency key (generated when not given): a
    #     send repeated with it is answered with the original's seq
    #     (Ack.duplicate) and writes nothing;
    #   causation_id: the envelope this one answers;
    #   audience: deliver to these participants only (empty: log only);
    #   traceparent: a W3C traceparent carried with the envelope;
    #   timeout: seconds for each attempt.

    async def send_text(
        self,
        session_id: str,
        text: str,
        *,
        client_msg_id: Optional[str] = None,
        causation_id: Optional[str] = None,
        audience: Optional[Sequence[str]] = None,
        traceparent: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Ack:
        """Take a turn with plain text."""
        env = _common.envelope(_common.text_envelope(text), client_msg_id, causation_id, audience, traceparent)
        return await self._send(session_id, env, self._attempts, timeout)

    async def send_packet(
        self,
        session_id: str,
        packet: Packet,
        *,
        client_msg_id: Optional[str] = None,
        causation_id: Optional[str] = None,
        audience: Optional[Sequence[str]] = None,
        traceparent: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Ack:
        """Take a turn with a packet: its body, its routing (handoff,
        finish, escalate), its context updates (applied before routing) and
        its usage."""
        env = _common.envelope(_common.packet_envelope(packet), client_msg_id, causation_id, audience, traceparent)
        return await self._send(session_id, env, self._attempts, timeout)

    async def set_context(
        self,
        session_id: str,
        values: Mapping[str, Any],
        *,
        client_msg_id: Optional[str] = None,
        causation_id: Optional[str] = None,
        audience: Optional[Sequence[str]] = None,
        traceparent: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Ack:
        """Set session context variables (any JSON values). Any participant
        may do so at any time; it is not a turn."""
        return await self.update_context(
            session_id,
            set=values,
            client_msg_id=client_msg_id,
            causation_id=causation_id,
            audience=audience,
            traceparent=traceparent,
            timeout=timeout,
        )

    async def update_context(
        self,
        session_id: str,
        *,
        set: Optional[Mapping[str, Any]] = None,
        delete: Sequence[str] = (),
        client_msg_id: Optional[str] = None,
        causation_id: Optional[str] = None,
        audience: Optional[Sequence[str]] = None,
        traceparent: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Ack:
        """Delete, then set, session context variables; not a turn."""
        env = _common.envelope(
            _common.context_envelope(set, delete), client_msg_id, causation_id, audience, traceparent
        )
        return await self._send(session_id, env, self._attempts, timeout)

    async def send_event(
        self,
        session_id: str,
        event_type: str,
        data: bytes = b"",
        *,
        client_msg_id: Optional[str] = None,
        causation_id: Optional[str] = None,
        audience: Optional[Sequence[str]] = None,
        traceparent: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Ack:
        """Send a custom event: an application type with opaque data, logged
        and delivered, never a turn."""
        env = _common.envelope(
            _common.event_envelope(event_type, data), client_msg_id, causation_id, audience, traceparent
        )
        return await self._send(session_id, env, self._attempts, timeout)

    async def send(
        self,
        session_id: str,
        envelope: pb.Envelope,
        *,
        client_msg_id: Optional[str] = None,
        causation_id: Optional[str] = None,
        audience: Optional[Sequence[str]] = None,
        traceparent: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Ack:
        """Send any envelope (questions, answers, task progress, ...); the hub
        sets its session, seq, id, sender and time. ``envelope`` is not
        modified. A send the hub cannot take now (:class:`hubd.Unavailable`,
        also a send in flight on an agent stream that broke) is retried up
        to ``send_attempts`` times within ``retry_budget`` seconds, each
        retry waiting for the connection to be ready, with the same client
        message id, so it is written at most once."""
        env = _common.envelope(_common.copy_envelope(envelope), client_msg_id, causation_id, audience, traceparent)
        return await self._send(session_id, env, self._attempts, timeout)

    async def send_delta(
        self, session_id: str, stream_id: str, index: int, text: str, *, timeout: Optional[float] = None
    ) -> pb.DeltaResponse:
        """Forward a piece of the reply the agent is writing on its turn:
        the session's watchers and the subscribers that asked for deltas
        get it at once; the hub writes nothing. ``stream_id`` is the client
        message id the reply's final envelope will carry; ``index`` counts
        the pieces from 0. Refused as a send would be
        (:class:`hubd.OutOfTurn`, ...) and past the hub's caps
        (:class:`hubd.LimitReached`). ``turn.stream()`` does this for a
        handler."""
        req = pb.Delta(session_id=session_id, stream_id=stream_id, index=index, text=text)
        return await self._call("send delta", self._stub.SendDelta, req, timeout)  # type: ignore[no-any-return]

    # Reads.

    async def read_log(
        self, session_id: str, from_seq: int = 0, limit: int = 0, *, timeout: Optional[float] = None
    ) -> List[pb.Envelope]:
        """Up to ``limit`` envelopes (0: 1000) of a session's log from
        ``from_seq`` (0 or 1: the start), those the caller may see, in seq
        order. The hub answers in capped pages (at most 1000 envelopes,
        about 2 MiB); this reads as many as ``limit`` takes, so fewer than
        ``limit`` envelopes means the log ended."""
        limit = limit if limit > 0 else 1000
        out: List[pb.Envelope] = []
        while True:
            req = pb.ReadLogRequest(session_id=session_id, from_seq=from_seq, limit=min(limit - len(out), 1000))
            resp = await self._call("read log", self._stub.ReadLog, req, timeout)
            out.extend(resp.envelopes)
            if resp.next_seq == 0 or len(out) >= limit or resp.next_seq <= from_seq:
                return out
            from_seq = resp.next_seq

    async def pending_turns(self, *, timeout: Optional[float] = None) -> List[pb.Delivery]:
        """For each open session where it is the caller's turn, the delivery
        of the envelope that began the turn (``your_turn`` set)."""
        resp = await self._call("pending turns", self._stub.PendingTurns, pb.PendingTurnsRequest(), timeout)
        return list(resp.turns)

    async def view(
        self, session_id: str, name: str = VIEW_DEFAULT, window: int = 0, *, timeout: Optional[float] = None
    ) -> pb.View:
        """The caller's view of a session: ``name`` is ``"default"`` (the
        session type's), ``"full"``, ``"windowed"`` (the last ``window`` items,
        default 10, older ones counted per speaker) or ``"last"``."""
        req = pb.GetViewRequest(session_id=session_id, name=name, window=window)
        return await self._call("view", self._stub.GetView, req, timeout)  # type: ignore[no-any-return]

    # Streams.

    def subscribe(
        self,
        cursors: Optional[Mapping[str, int]] = None,
        *,
        include_ended: bool = False,
        terse: bool = False,
        view: Optional[str] = None,
        window: int = 0,
        timeout: Optional[float] = None,
    ) -> Stream:
        """The caller's delivery stream: what it missed after its cursors
        (the last seq processed per session id; sessions without one from
        their start unless ended, or with ``include_ended``), then its pending
        turns, then everything live. Per session, seqs arrive in order with no
        gap and no duplicate. With ``terse`` it carries only what asks the
        caller to act or ends its work: its turns, invites naming it,
        questions and their withdrawals, and the ends of its sessions (a hub
        older than the option delivers everything). With ``view`` (a view
        name as :meth:`view` takes, ``window`` for ``"windowed"``) every
        ``your_turn`` delivery carries the caller's view of its session as
        the notice left the hub (``Delivery.view``), so answering a turn
        needs no :meth:`view` call; without it none does."""
        req = _common.subscribe_request(cursors, include_ended, terse, view, window)
        return Stream("subscribe", self._stub.Subscribe(req, metadata=self._md, timeout=timeout))

    def watch(self, session_id: str, from_seq: int = 0, *, deltas: bool = False, timeout: Optional[float] = None) -> Stream:
        """The envelopes of one session from ``from_seq`` (0 or 1: all), live,
        for dashboards, transcripts and audits: for a participant every
        envelope it may read, for an operator all of them. With ``deltas``,
        also the pieces of replies being written: deliveries whose
        ``delta`` is set (``d.HasField("delta")``), best-effort, before
        their reply's final envelope."""
        req = pb.WatchRequest(session_id=session_id, from_seq=from_seq, deltas=deltas)
        return Stream("watch", self._stub.Watch(req, metadata=self._md, timeout=timeout))

    async def follow(
        self, session_id: str, from_seq: int = 1, *, timeout: Optional[float] = None
    ) -> AsyncGenerator[pb.Envelope, None]:
        """Every envelope of a session from ``from_seq``, each once, until
        the one that ends it (yielded last), across reconnects; ``timeout``
        bounds the whole follow (raises :class:`hubd.DeadlineExceeded`)::

            async for e in client.follow(session_id):
                ...
        """
        nxt = max(from_seq, 1)
        attempt = 0
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            call = self._stub.Watch(
                pb.WatchRequest(session_id=session_id, from_seq=nxt),
                metadata=self._md,
                wait_for_ready=True,
                timeout=left,
            )
            try:
                async for d in call:
                    e = d.envelope
                    if e.seq < nxt:
                        continue
                    nxt = e.seq + 1
                    attempt = 0
                    yield e
                    if ends(e):
                        return
                err: errors.HubError = errors.Unavailable("the watch ended", reason="", op="watch")
            except grpc.RpcError as rpc_err:
                err = errors.from_rpc_error("watch", rpc_err)
                if not err.retryable:
                    raise err from rpc_err
            finally:
                call.cancel()
            attempt += 1
            self.log.info("hubd: follow %s: %s; watching again from seq %d", session_id, err, nxt)
            await asyncio.sleep(_common.backoff_delay(attempt, 0.05, 2.0))

    # Delegation, questions and the call tree (docs/DELEGATION.md).

    async def _retry_unavailable(self, op: str, method: Callable[..., Any], req: Any, timeout: Optional[float]) -> Any:
        """Call an idempotent RPC (one with a client message id), retrying
        while the hub is unavailable, up to send_attempts."""
        attempt = 1
        while True:
            try:
                return await self._call(op, method, req, timeout)
            except errors.Unavailable as e:
                if attempt >= self._attempts:
                    raise
                self.log.info("hubd: %s: %s; retrying (%d/%d)", op, e, attempt, self._attempts)
                await asyncio.sleep(_common.backoff_delay(attempt, 0.05, 1.0))
                attempt += 1

    async def delegate(
        self,
        session_id: str,
        children: Sequence[pb.OpenRequest],
        *,
        mode: str = MODE_BLOCKING,
        await_: str = "",
        notify: str = "",
        client_msg_id: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> List[Task]:
        """Open children of a session on the caller's turn there (the
        delegation logged in the parent in the same write) and return a
        :class:`hubd.Task` per child, in order. Each child is a
        :func:`hubd.open_request` (its ``task`` is the child's first input;
        the caller becomes its creator and the hub sets its parent).

        A blocking delegation (``mode=MODE_BLOCKING``) holds the caller's
        turn until the children are done (``await_``: ``AWAIT_ALL``, the
        default, or ``AWAIT_ANY``); wait with :func:`hubd.await_all` or
        :func:`hubd.await_any`; the hub then appends their results to the
        parent and gives the caller its turn back. A background one
        (``MODE_BACKGROUND``) leaves the turn as it is; with
        ``notify=NOTIFY_TURN`` a result gives the caller a turn. A serve
        handler uses :meth:`hubd.Turn.delegate`, ``delegate_all``,
        ``delegate_any`` or ``spawn`` instead.

        ``client_msg_id`` (generated when not given) makes it idempotent: a
        retry returns the first delegation's tasks.

        Raises:
            hubd.OutOfTurn, hubd.TurnHeld, hubd.SessionClosed,
            hubd.DepthExceeded, hubd.DelegateNotAllowed, hubd.Malformed.
        """
        req = _calls.delegate_request(session_id, children, mode, await_, notify, client_msg_id or new_msg_id())
        resp = await self._retry_unavailable("delegate", self._stub.Delegate, req, timeout)
        mode = mode or MODE_BLOCKING
        seq = resp.delegation.seq
        return [Task(self, ch.meta.session_id, session_id, ch.meta.delegation_id, mode, seq) for ch in resp.children]

    async def task(self, session_id: str, *, timeout: Optional[float] = None) -> Task:
        """The :class:`hubd.Task` of a delegated child session (the caller
        must take part in it, as its delegator does), e.g. after a restart.

        Raises:
            hubd.Malformed: the session was not delegated.
        """
        m = (await self.get_session(session_id, timeout=timeout)).meta
        if not m.parent_session_id or not m.delegation_id:
            raise errors.Malformed(f"session {session_id} was not delegated", op="task")
        return Task(self, session_id, m.parent_session_id, m.delegation_id, MODE_BACKGROUND, 1)

    async def answer_question(
        self,
        session_id: str,
        question_id: str = "",
        *,
        option_ids: Sequence[str] = (),
        text: str = "",
        answer: Optional[pb.Answer] = None,
        client_msg_id: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Ack:
        """Answer a pending question of a session, as its answerer or as an
        operator on someone's behalf: with ``option_ids`` (a question with
        options) or ``text`` (free text, checked against the question's
        schema), or a whole ``answer`` message. The asker is told its turn
        with the answer as trigger.

        Raises:
            hubd.BadAnswer: no such pending question, not the answerer, an
                unknown option, several for a single choice, text that does
                not meet the schema (the message names what would be
                valid).
        """
        req = pb.AnswerRequest(
            session_id=session_id,
            answer=_calls.answer_of(question_id, option_ids, text, answer),
            client_msg_id=client_msg_id or new_msg_id(),
        )
        resp = await self._retry_unavailable("answer", self._stub.Answer, req, timeout)
        return Ack.from_proto(resp, req.client_msg_id)

    async def list_questions(
        self, answerer: str = "", root: str = "", *, timeout: Optional[float] = None
    ) -> List[pb.PendingQuestion]:
        """The pending questions the caller must answer (an operator:
        everyone's, or ``answerer``'s), oldest first; with ``root``, only
        those of that session's tree. Each has ``session_id``, ``asker`` and
        the question ``envelope``."""
        req = pb.ListQuestionsRequest(answerer=answerer, root_session_id=root)
        return list((await self._call("list questions", self._stub.ListQuestions, req, timeout)).questions)

    async def tree(self, session_id: str, *, timeout: Optional[float] = None) -> pb.TreeNode:
        """A session's call tree from it down: per node its session (state,
        close reason), turns, usage, duration and children, oldest first."""
        req = pb.GetTreeRequest(session_id=session_id)
        return await self._call("tree", self._stub.GetTree, req, timeout)  # type: ignore[no-any-return]

    async def purge(self, session_id: str, *, timeout: Optional[float] = None) -> pb.PurgeResponse:
        """Archive (unless the hub runs without an archive) and purge an
        ended session whose whole tree ended, at once, whatever its
        retention (operators). Every read of it raises ``Purged``
        afterwards. Refused: ``PermissionDenied`` for an agent that is not
        an operator; ``BadTransition`` for a session that is open, in a
        tree with a session still open, or a fork's source."""
        req = pb.PurgeRequest(session_id=session_id)
        return await self._call("purge", self._stub.Purge, req, timeout)  # type: ignore[no-any-return]

    async def erase(
        self,
        *session_ids: str,
        reason: str,
        thread_key: str = "",
        creator: str = "",
        participant: str = "",
        timeout: Optional[float] = None,
    ) -> List[pb.ErasedSession]:
        """Erase sessions for good (operators): by id, a creator's thread
        (``thread_key`` with ``creator``), or every session ``participant``
        takes part in. Live ones are closed first; then their content
        leaves the hub's log, its files, its archives and its caches, and
        every read of them raises ``Erased``. Returns each one's tombstone
        (when, by whom, why). Refused: ``PermissionDenied`` for an agent
        that is not an operator; ``Malformed`` without a reason or
        sessions; ``BadTransition`` for a fork's source erased without
        the fork. Not retried."""
        req = pb.EraseRequest(session_ids=list(session_ids), thread_key=thread_key, creator=creator,
                              participant=participant, reason=reason)
        return list((await self._call("erase", self._stub.Erase, req, timeout)).sessions)

    async def import_sessions(
        self, archive: str, *session_ids: str, timeout: Optional[float] = None
    ) -> List[pb.ImportedSession]:
        """Write purged sessions back into the hub's log from ``archive``, the
        name of a file of the hub's archive directory
        (``hubd-archive-2026-11-29.hubarc``): those of ``session_ids``, or
        every session of the file (operators). Each comes back ended,
        labelled ``imported_from``, and every read answers it again.
        Refused, importing nothing: ``PermissionDenied`` for an agent that
        is not an operator; ``Malformed`` for a path or a file the
        directory does not hold, or a session the file does not hold;
        ``BadLifecycleTransition`` for a session the log holds (imported
        already); ``Erased`` for an erased one."""
        req = pb.ImportRequest(archive=archive, session_ids=list(session_ids))
        return list((await self._call("import sessions", self._stub.Import, req, timeout)).sessions)

    async def replay(self, session_id: str, *, timeout: Optional[float] = None) -> pb.ReplayResponse:
        """Re-fold a session from its log with no agent called and say
        whether the result equals the live state (``equal``; operators)."""
        req = pb.ReplayRequest(session_id=session_id)
        return await self._call("replay", self._stub.Replay, req, timeout)  # type: ignore[no-any-return]

    async def follow_tree(
        self,
        root_id: str,
        *,
        verbose: bool = False,
        from_seq: int = 1,
        timeout: Optional[float] = None,
    ) -> AsyncGenerator[pb.Envelope, None]:
        """Every envelope of a root session and its descendants (each
        labelled with its session and depth in ``envelope.call``), each once
        and in seq order per session, until the root has ended and
        everything written with its end (the descendants it closed) has been
        yielded. Not ``verbose``: only the root's own envelopes plus the
        descendants' questions, answers, delegations and results. A watch
        that breaks is resumed from the last seq seen per session. The
        caller must be an operator or take part in the sessions it reads (a
        descendant it may not read is left out). ``timeout`` bounds the whole
        follow."""
        nxt: Dict[str, int] = {root_id: max(from_seq, 1)}
        attempt = 0
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            req = _calls.tree_request(root_id, verbose, nxt)
            call = self._stub.Watch(req, metadata=self._md, wait_for_ready=True, timeout=left)
            end = None
            try:
                async for d in call:
                    e = d.envelope
                    if e.seq < nxt.get(e.session_id, 0):
                        continue
                    nxt[e.session_id] = e.seq + 1
                    attempt = 0
                    yield e
                    if e.session_id == root_id and ends(e):
                        end = e
                if end is not None:
                    return
                err: errors.HubError = errors.Unavailable("the watch ended", reason="", op="watch")
            except grpc.RpcError as rpc_err:
                if end is not None:
                    return
                err = errors.from_rpc_error("watch", rpc_err)
                if not err.retryable:
                    raise err from rpc_err
            finally:
                call.cancel()
            attempt += 1
            self.log.info("hubd: follow tree %s: %s; watching again", root_id, err)
            await asyncio.sleep(_common.backoff_delay(attempt, 0.05, 2.0))

    # Serving.

    async def serve(
        self,
        handler: AsyncHandler,
        *,
        invites: Optional[AsyncInviteFunc] = None,
        session_filter: Optional[AsyncSessionFilter] = None,
        view: Optional[str] = VIEW_DEFAULT,
        window: int = 0,
        backoff: Tuple[float, float] = (0.1, 5.0),
        observer: Optional[Callable[[pb.Delivery], Union[None, Awaitable[None]]]] = None,
        on_session_end: Optional[Callable[[pb.Envelope], Union[None, Awaitable[None]]]] = None,
        on_reconnect: Optional[Callable[[errors.HubError], Union[None, Awaitable[None]]]] = None,
        stop: Optional[asyncio.Event] = None,
        handle_signals: bool = True,
    ) -> None:
        """Run the agent until stopped: :meth:`hubd.Client.serve` under
        asyncio. Each turn runs as a task (one at a time per session, sessions
        concurrently); a coroutine handler is awaited on the loop, a plain one
        runs in a worker thread. A turn whose session ends is cancelled.
        ``observer``, ``on_session_end`` and ``on_reconnect`` are called on
        the event loop as serve reads (a coroutine function is awaited, and
        nothing is read meanwhile; without ``observer`` the stream is
        terse). ``invites`` and ``session_filter`` may be coroutine
        functions.

        Args:
            stop: serve returns once this event is set (cancelling the task
                that awaits serve works too).
            handle_signals: SIGINT and SIGTERM stop serve (through the event
                loop; where the loop cannot handle signals, this is skipped).

        The other arguments are those of :meth:`hubd.Client.serve`.

        Raises:
            hubd.HubError: an error reconnecting cannot cure
                (:class:`hubd.Unauthenticated`, ...).
        """
        o = _serve.Options(
            invites=invites,
            session_filter=session_filter,
            view=view,
            window=window,
            backoff=backoff,
            observer=observer,
            on_session_end=on_session_end,
            on_reconnect=on_reconnect,
            stop=stop,
            handle_signals=handle_signals,
        )
        if not inspect.iscoroutinefunction(handler):
            handler = _in_thread(handler)
        await _serve.Serving(self, handler, self._turn, o).run()

    def _turn(self, sid: str, trigger: pb.Envelope, view: Optional[pb.View], consume: Callable[[int], None]) -> Turn:
        """A turn of serve: its delegation and question methods coroutines."""
        return Turn(sid, trigger, view, self, _consume=consume)


def _in_thread(handler: AsyncHandler) -> AsyncHandler:
    """A plain handler as a coroutine function that runs it in a worker
    thread (awaiting what it returns, when that is awaitable)."""

    async def run(t: Turn) -> Reply:
        reply = await asyncio.to_thread(handler, t)
        if inspect.isawaitable(reply):
            reply = await reply
        return cast(Reply, reply)

    return run


async def connect(target: str = "127.0.0.1:7420", **kwargs: Any) -> Client:
    """Connect to the hub at ``target`` and wait until the connection is up:
    ``await hubd.aio.connect(addr, name="me")``."""
    c = Client(target, **kwargs)
    try:
        return await c.connect()
    except BaseException:
        await c.close()
        raise
