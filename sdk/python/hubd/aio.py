"""The asyncio client: :class:`Client` is :class:`hubd.Client` with
coroutines, and :meth:`Client.serve` runs handlers as tasks.

::

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
import signal
import time
from dataclasses import dataclass
from typing import (
    Any,
    AsyncIterator,
    Awaitable,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
    TypeVar,
    Union,
)

import grpc
import grpc.aio

from . import _calls, _common, _stream, _trace, errors
from ._aiostream import AioAgentStream
from ._aiocalls import Task, Turn, await_all, await_any
from ._calls import TaskStatus
from ._model import (
    EVENT_INVITE,
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
    turn_msg_id,
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
    """A connection to a hub as one agent, for asyncio. The arguments are
    those of :class:`hubd.Client`; the connection is made by :meth:`connect`
    (or ``async with``, or :func:`hubd.aio.connect`), which waits up to
    ``connect_timeout`` seconds for it.

    Create it inside the event loop that uses it (gRPC's asyncio channels
    belong to one loop). ``transport`` is as for :class:`hubd.Client`:
    ``"stream"`` (the default) sends (and opens, when the hub takes opens
    there) over one agent stream per client and serve reads (and replies
    on) a stream of its own; ``"unary"`` a ``Send`` call per envelope, an
    ``Open`` call per open and a ``Subscribe`` stream.
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
        self._stream: Optional[AioAgentStream] = None
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

    async def _main_stream(self, timeout: Optional[float], wait: bool) -> Optional[AioAgentStream]:
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
            st = AioAgentStream(self._raw, self._md, self.log, wait_for_ready=wait)
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
        """Create a session (see :meth:`hubd.Client.open`; over the client's
        agent stream as its sends go, when the hub takes opens there)."""
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
        """A session's metadata and current state."""
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
        """One page of the sessions the caller takes part in (see
        :meth:`hubd.Client.list_sessions`)."""
        req = _common.list_request(state, creator, participant, labels, page_token, page_size)
        resp = await self._call("list sessions", self._stub.ListSessions, req, timeout)
        return SessionPage([Session(s) for s in resp.sessions], resp.next_page_token)

    async def ack_invite(self, session_id: str, *, timeout: Optional[float] = None) -> Ack:
        """Accept the caller's invite to a session."""
        req = pb.InviteRequest(session_id=session_id)
        return Ack.from_proto(await self._call("ack invite", self._stub.AckInvite, req, timeout))

    async def reject_invite(self, session_id: str, reason: str = "", *, timeout: Optional[float] = None) -> Ack:
        """Decline the caller's invite; the session closes with
        ``invite_rejected``."""
        req = pb.InviteRequest(session_id=session_id, reason=reason)
        return Ack.from_proto(await self._call("reject invite", self._stub.RejectInvite, req, timeout))

    async def close_session(self, session_id: str, reason: str = "", *, timeout: Optional[float] = None) -> Ack:
        """End a session (its creator or an operator)."""
        req = pb.CloseRequest(session_id=session_id, reason=reason)
        return Ack.from_proto(await self._call("close session", self._stub.Close, req, timeout))

    # Sends (keyword arguments as for hubd.Client).

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
        """Take a turn with a packet."""
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
        """Set session context variables; not a turn."""
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
        """Send a custom event, never a turn."""
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
        """Send any envelope (not modified); retried while the hub is
        unavailable with the same client message id."""
        env = _common.envelope(_common.copy_envelope(envelope), client_msg_id, causation_id, audience, traceparent)
        return await self._send(session_id, env, self._attempts, timeout)

    # Reads.

    async def read_log(
        self, session_id: str, from_seq: int = 0, limit: int = 0, *, timeout: Optional[float] = None
    ) -> List[pb.Envelope]:
        """Up to ``limit`` envelopes (0: 1000) of a session's log the caller
        may see, read page by page (see Client.read_log)."""
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
        """The caller's pending turns."""
        resp = await self._call("pending turns", self._stub.PendingTurns, pb.PendingTurnsRequest(), timeout)
        return list(resp.turns)

    async def view(
        self, session_id: str, name: str = VIEW_DEFAULT, window: int = 0, *, timeout: Optional[float] = None
    ) -> pb.View:
        """The caller's view of a session."""
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
        """The caller's delivery stream; with ``view``, every ``your_turn``
        delivery carries the caller's view of its session (see
        :meth:`hubd.Client.subscribe`)."""
        req = _common.subscribe_request(cursors, include_ended, terse, view, window)
        return Stream("subscribe", self._stub.Subscribe(req, metadata=self._md, timeout=timeout))

    def watch(self, session_id: str, from_seq: int = 0, *, timeout: Optional[float] = None) -> Stream:
        """One session's envelopes from ``from_seq``, live (see
        :meth:`hubd.Client.watch`)."""
        req = pb.WatchRequest(session_id=session_id, from_seq=from_seq)
        return Stream("watch", self._stub.Watch(req, metadata=self._md, timeout=timeout))

    async def follow(
        self, session_id: str, from_seq: int = 1, *, timeout: Optional[float] = None
    ) -> AsyncIterator[pb.Envelope]:
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

    # Delegation, questions and the call tree (see hubd.Client).

    async def _retry_unavailable(self, op: str, method: Callable[..., Any], req: Any, timeout: Optional[float]) -> Any:
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
        """Open children of a session on the caller's turn there; a
        :class:`Task` per child (see :meth:`hubd.Client.delegate`)."""
        req = _calls.delegate_request(session_id, children, mode, await_, notify, client_msg_id or new_msg_id())
        resp = await self._retry_unavailable("delegate", self._stub.Delegate, req, timeout)
        mode = mode or MODE_BLOCKING
        seq = resp.delegation.seq
        return [Task(self, ch.meta.session_id, session_id, ch.meta.delegation_id, mode, seq) for ch in resp.children]

    async def task(self, session_id: str, *, timeout: Optional[float] = None) -> Task:
        """The :class:`Task` of a delegated child session (see
        :meth:`hubd.Client.task`)."""
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
        """Answer a pending question (see :meth:`hubd.Client.answer_question`)."""
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
        """The pending questions the caller must answer (see
        :meth:`hubd.Client.list_questions`)."""
        req = pb.ListQuestionsRequest(answerer=answerer, root_session_id=root)
        return list((await self._call("list questions", self._stub.ListQuestions, req, timeout)).questions)

    async def tree(self, session_id: str, *, timeout: Optional[float] = None) -> pb.TreeNode:
        """A session's call tree from it down."""
        req = pb.GetTreeRequest(session_id=session_id)
        return await self._call("tree", self._stub.GetTree, req, timeout)  # type: ignore[no-any-return]

    async def replay(self, session_id: str, *, timeout: Optional[float] = None) -> pb.ReplayResponse:
        """Re-fold a session from its log (operators)."""
        req = pb.ReplayRequest(session_id=session_id)
        return await self._call("replay", self._stub.Replay, req, timeout)  # type: ignore[no-any-return]

    async def follow_tree(
        self,
        root_id: str,
        *,
        verbose: bool = False,
        from_seq: int = 1,
        timeout: Optional[float] = None,
    ) -> AsyncIterator[pb.Envelope]:
        """Every envelope of a root session and its descendants, each once,
        until the root has ended (see :meth:`hubd.Client.follow_tree`)."""
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
        observer: Optional[Callable[[pb.Delivery], None]] = None,
        on_session_end: Optional[Callable[[pb.Envelope], None]] = None,
        on_reconnect: Optional[Callable[[errors.HubError], None]] = None,
        stop: Optional[asyncio.Event] = None,
        handle_signals: bool = True,
    ) -> None:
        """Run the agent until stopped: :meth:`hubd.Client.serve` under
        asyncio. Each turn runs as a task (one at a time per session, sessions
        concurrently); a coroutine handler is awaited on the loop, a plain one
        runs in a worker thread. A turn whose session ends is cancelled.
        ``observer`` and ``on_session_end`` are plain functions called on
        the event loop as serve reads (without ``observer`` the stream is
        terse). ``session_filter`` may be a coroutine function.

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
        await _AsyncServing(
            self,
            handler,
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
        ).run()


async def connect(target: str = "127.0.0.1:7420", **kwargs: Any) -> Client:
    """Connect to the hub at ``target`` and wait until the connection is up:
    ``await hubd.aio.connect(addr, name="me")``."""
    c = Client(target, **kwargs)
    try:
        return await c.connect()
    except BaseException:
        await c.close()
        raise


@dataclass
class _Worker:
    last: int = 0
    pending: Optional[pb.Delivery] = None
    task: Optional["asyncio.Task[None]"] = None
    ended: bool = False
    turn: Optional[Turn] = None


class _AsyncServing:
    """One run of aio.Client.serve (the same loop as hubd._serve, with
    tasks)."""

    def __init__(
        self,
        client: Client,
        handler: AsyncHandler,
        *,
        invites: Optional[AsyncInviteFunc],
        session_filter: Optional[AsyncSessionFilter],
        view: Optional[str],
        window: int,
        backoff: Tuple[float, float],
        observer: Optional[Callable[[pb.Delivery], None]],
        on_session_end: Optional[Callable[[pb.Envelope], None]],
        on_reconnect: Optional[Callable[[errors.HubError], None]],
        stop: Optional[asyncio.Event],
        handle_signals: bool,
    ) -> None:
        if handler is None:
            raise ValueError("hubd: serve needs a handler")
        self.c = client
        self.h = handler
        self.invites = invites
        self.session_filter = session_filter
        self.verdicts: Dict[str, "asyncio.Future[bool]"] = {}  # the session filter's answers
        self.view = view
        self.window = window
        self.base, self.cap = backoff
        self.observe = observer
        self.on_session_end = on_session_end
        self.on_reconnect = on_reconnect
        self.user_stop = stop
        self.handle_signals = handle_signals
        self.log = client.log
        self.halt = asyncio.Event()
        self.cursors: Dict[str, int] = {}
        self.sessions: Dict[str, _Worker] = {}
        self.tasks: Set["asyncio.Task[Any]"] = set()
        self.stream: Optional[AioAgentStream] = None  # the agent stream being read, if any

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        installed: List[signal.Signals] = []
        if self.handle_signals:
            for signum in (signal.SIGINT, signal.SIGTERM):
                try:
                    loop.add_signal_handler(signum, self.halt.set)
                    installed.append(signum)
                except (NotImplementedError, RuntimeError, ValueError):
                    pass
        waiters = [asyncio.ensure_future(self.halt.wait())]
        if self.user_stop is not None:
            waiters.append(asyncio.ensure_future(self.user_stop.wait()))
        reader = asyncio.ensure_future(self._loop())
        try:
            await asyncio.wait([reader, *waiters], return_when=asyncio.FIRST_COMPLETED)
            if reader.done():
                reader.result()  # raises what ended it
        finally:
            self.halt.set()
            for waiter in waiters:
                waiter.cancel()
            if not reader.done():
                reader.cancel()
            for signum in installed:
                loop.remove_signal_handler(signum)
            for w in self.sessions.values():
                if w.turn is not None:
                    w.turn.cancelled.set()
                if w.task is not None:
                    w.task.cancel()
            pending = [t for t in (reader, *self.tasks) if not t.done()]
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)

    def _spawn(self, coro: Awaitable[Any]) -> "asyncio.Task[Any]":
        t = asyncio.ensure_future(coro)
        self.tasks.add(t)
        t.add_done_callback(self.tasks.discard)
        return t

    async def _sleep(self, seconds: float) -> bool:
        """Sleep, or return True early when halted."""
        try:
            await asyncio.wait_for(self.halt.wait(), seconds)
            return True
        except asyncio.TimeoutError:
            return False

    async def _loop(self) -> None:
        attempt = 0
        while not self.halt.is_set():
            got, err = await self._subscription()
            if self.halt.is_set():
                return
            if err is not None and not err.retryable:
                raise err
            if got:
                attempt = 0
            attempt += 1
            if err is None:
                err = errors.Unavailable("the stream ended", reason="", op="subscribe")
            if self.on_reconnect is not None:
                self.on_reconnect(err)
            self.log.info("hubd: serve: stream ended: %s; resubscribing (attempt %d)", err, attempt)
            if await self._sleep(_common.backoff_delay(attempt, self.base, self.cap)):
                return

    def _request(self) -> pb.SubscribeRequest:
        """The subscription from the cursors, asking each turn notice to
        carry the turn's view (no GetView call before the handler), and
        only what serve acts on (terse) unless an observer wants
        everything."""
        return _common.subscribe_request(self.cursors, False, self.observe is None, self.view, self.window)

    async def _agent_stream(self) -> Optional[Tuple[bool, Optional[errors.HubError]]]:
        """Serve one agent stream until it breaks (see hubd._serve);
        None when the hub has no agent stream."""
        got = False

        def on_delivery(d: pb.Delivery) -> None:
            nonlocal got
            got = True
            self._deliver(d)

        # The stream itself tells the pending turns, each with its view.
        st = AioAgentStream(self.c.raw, self.c.metadata, self.log, on_delivery=on_delivery, wait_for_ready=True)
        try:
            try:
                await st.start(self._request(), None)
            except _stream.NoStream:
                self.c._no_stream("serve subscribes instead")
                return None
            except errors.HubError as e:
                return False, e
            self.stream = st
            await st.done.wait()
        finally:
            self.stream = None
            st.close()
        if st.fatal is not None:
            raise st.fatal
        return got, st.error

    async def _post(self, sid: str, msg: pb.Envelope) -> None:
        """Post a reply: over serve's stream while it has one, else as the
        client sends."""
        st = self.stream
        if st is not None and not st.done.is_set() and _stream.fits(msg):
            await st.send(sid, msg, None)
            return
        await self.c._send(sid, msg, 1, None)

    async def _subscription(self) -> Tuple[bool, Optional[errors.HubError]]:
        if not self.c._unary:
            res = await self._agent_stream()
            if res is not None:
                return res
        await self.c.channel.channel_ready()
        call = self.c._stub.Subscribe(self._request(), metadata=self.c.metadata, wait_for_ready=True)
        got = False
        try:
            try:
                turns = await self.c.pending_turns()
            except errors.HubError as e:
                self.log.info("hubd: serve: pending turns: %s", e)
                turns = []
            for d in turns:
                self._dispatch(d)
            async for d in call:
                got = True
                self._deliver(d)
            return got, None
        except grpc.RpcError as e:
            return got, errors.from_rpc_error("subscribe", e)
        finally:
            call.cancel()

    def _deliver(self, d: pb.Delivery) -> None:
        """Act on one delivery (see hubd._serve): a hook that raises is
        logged, and the delivery acted on as if it had returned."""
        e = d.envelope
        if self.observe is not None:
            _common.hook(self.log, "observer", e, self.observe, d)
        sid = e.session_id
        if e.seq > self.cursors.get(sid, 0):
            self.cursors[sid] = e.seq
        if ends(e):
            if self.on_session_end is not None:
                _common.hook(self.log, "on_session_end", e, self.on_session_end, e)
            self.cursors.pop(sid, None)
            self._end(sid)
            return
        if e.type == EVENT_INVITE:
            invitees = list(e.invite.invitees)
            if not self.c.name or self.c.name in invitees:
                self._spawn(self._answer_invite(Invite(sid, invitees, e)))
        if d.your_turn:
            self._dispatch(d)

    async def _answer_invite(self, inv: Invite) -> None:
        if not await self._serves(inv.session_id):
            return  # another client's to answer
        decision: Optional[str] = None
        if self.invites is not None:
            try:
                r = self.invites(inv)
                if inspect.isawaitable(r):
                    r = await r
                decision = _common.invite_decision(r)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.log.warning("hubd: serve: deciding the invite to %s: %r", inv.session_id, exc)
                decision = str(exc) or type(exc).__name__
        sid = inv.session_id
        try:
            if decision is None:
                await self._retry(lambda: self.c.ack_invite(sid))
            else:
                reason = decision
                await self._retry(lambda: self.c.reject_invite(sid, reason))
        except (errors.BadLifecycleTransition, errors.SessionClosed):
            pass
        except errors.HubError as e:
            if not self.halt.is_set():
                self.log.warning("hubd: serve: answering the invite to %s: %s", sid, e)

    def _dispatch(self, d: pb.Delivery) -> None:
        sid, seq = d.envelope.session_id, d.envelope.seq
        if self.halt.is_set():
            return
        w = self.sessions.setdefault(sid, _Worker())
        if w.ended or seq <= w.last:
            return
        w.last, w.pending = seq, d
        if w.task is None:
            w.task = self._spawn(self._work(sid, w))

    def _consume(self, sid: str, seq: int) -> None:
        """A handler waiting in session sid took the turn begun at seq
        itself: that turn does not start the handler again."""
        w = self.sessions.get(sid)
        if w is None:
            return
        w.last = max(w.last, seq)
        if w.pending is not None and w.pending.envelope.seq <= w.last:
            w.pending = None

    def _end(self, sid: str) -> None:
        self.verdicts.pop(sid, None)
        w = self.sessions.get(sid)
        if w is None:
            return
        w.ended, w.pending = True, None
        if w.turn is not None:
            w.turn.cancelled.set()
        if w.task is not None:
            w.task.cancel()
        else:
            del self.sessions[sid]

    async def _work(self, sid: str, w: _Worker) -> None:
        try:
            while w.pending is not None and not self.halt.is_set():
                d, w.pending = w.pending, None
                view = d.view if d.HasField("view") else None  # the notice carried it
                t = Turn(sid, d.envelope, view, self.c, _consume=lambda seq: self._consume(sid, seq))
                w.turn = t
                try:
                    await self._turn(t)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    self.log.exception("hubd: serve: turn in session %s", sid)
        finally:
            w.task, w.turn = None, None
            if w.ended:
                self.sessions.pop(sid, None)

    async def _turn(self, t: Turn) -> None:
        """Run the handler on one turn and post its reply, in the trace of
        the envelope that began the turn (see hubd._serve)."""
        with _trace.continuing(t.trigger.traceparent):
            await self._run_turn(t)

    async def _serves(self, sid: str) -> bool:
        """Whether serve serves session sid: always without a session
        filter; with one, as it answers, asked once per session (another
        task asking meanwhile awaits the answer)."""
        keep = self.session_filter
        if keep is None:
            return True
        v = self.verdicts.get(sid)
        if v is not None:
            return await asyncio.shield(v)
        v = self.verdicts[sid] = asyncio.get_running_loop().create_future()
        verdict = False
        try:
            s = await self._retry(lambda: self.c.get_session(sid))
            r = keep(s)
            verdict = bool(await r if inspect.isawaitable(r) else r)
        except asyncio.CancelledError:
            if self.verdicts.get(sid) is v:
                del self.verdicts[sid]  # undecided: ask again next time
            raise
        except errors.HubError as err:
            if not self.halt.is_set():
                self.log.warning("hubd: serve: session %s not served: reading it for the session filter: %s", sid, err)
        except Exception as exc:  # the filter failed: not served
            self.log.warning("hubd: serve: session %s not served: the session filter raised %r", sid, exc)
        finally:
            if not v.done():
                v.set_result(verdict)
        return verdict

    async def _run_turn(self, t: Turn) -> None:
        e, sid = t.trigger, t.session_id
        if not await self._serves(sid):
            return
        if self.view is not None and t.view is None:
            name = self.view
            try:
                t.view = await self._retry(lambda: self.c.view(sid, name, self.window))
            except errors.HubError as err:
                self._stale(e, "view", err)
                return
        try:
            if inspect.iscoroutinefunction(self.h):
                reply = await self.h(t)
            else:
                reply = await asyncio.to_thread(self.h, t)
                if inspect.isawaitable(reply):
                    reply = await reply
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.log.warning(
                "hubd: serve: handler for session %s (turn begun by seq %d): %r", sid, e.seq, exc, exc_info=True
            )
            return
        try:
            env = _common.reply_envelope(reply)
        except (TypeError, ValueError) as exc:
            self.log.warning("hubd: serve: reply in session %s: %s", sid, exc)
            return
        if env is None:
            return
        msg: pb.Envelope = env
        msg.client_msg_id = turn_msg_id(sid, e.seq)
        msg.causation_id = e.id
        msg.traceparent = _trace.current()[0]  # the turn's trace: the next agent continues from it
        try:
            await self._retry(lambda: self._post(sid, msg))
        except errors.HubError as err:
            self._stale(e, "reply", err)

    def _stale(self, e: pb.Envelope, step: str, err: errors.HubError) -> None:
        if isinstance(err, errors.Canceled) or self.halt.is_set():
            return
        if isinstance(err, _common.STALE):
            self.log.info(
                "hubd: serve: stale turn in session %s (begun by seq %d) ignored: %s", e.session_id, e.seq, err
            )
        else:
            self.log.warning("hubd: serve: %s in session %s (turn begun by seq %d): %s", step, e.session_id, e.seq, err)

    async def _retry(self, f: Callable[[], Awaitable[_T]]) -> _T:
        attempt = 1
        while True:
            try:
                return await f()
            except errors.HubError as e:
                if not e.retryable or await self._sleep(_common.backoff_delay(attempt, self.base, self.cap)):
                    raise
            attempt += 1
