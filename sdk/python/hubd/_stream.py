"""The agent's stream (``hubd.v1.Hub/AgentStream``): one bidirectional
stream that carries the agent's sends and opens (each with a ref, one
series) and their acknowledgements, and, once subscribed, its deliveries.
The reference is the Go SDK's agentsdk/connect.go.

An asyncio queue feeds grpc.aio's writer and one reader task per stream
hands acks to their senders and deliveries to the stream's callback
(nothing blocks the event loop). The sync client runs the same stream on
its event loop.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, Optional, Union

import grpc
import grpc.aio
from google.protobuf.message import Message

from . import _common, _trace, errors
from ._model import Ack, Session
from ._pb import hub_pb2 as pb

TRANSPORT_STREAM = "stream"
"""Send over the agent's stream (the default)."""
TRANSPORT_UNARY = "unary"
"""Send with one ``Send`` call per envelope; serve reads a ``Subscribe``
stream."""
TRANSPORTS = (TRANSPORT_STREAM, TRANSPORT_UNARY)

MAX_STREAM_ENVELOPE = 1 << 20
"""The largest envelope (encoded) sent on an agent stream: a larger one
goes in a ``Send`` call, which fails alone (TOO_LARGE) where a frame the hub
refuses to read would end the whole stream. The same bounds an open
request sent on the stream (a larger one is an ``Open`` call)."""


class NoStream(Exception):
    """The hub has no agent stream (it answered UNIMPLEMENTED): use unary
    calls."""


def check_transport(transport: str) -> None:
    """Refuse a transport that is neither "stream" nor "unary"."""
    if transport not in TRANSPORTS:
        raise ValueError(f"hubd: transport {transport!r}: want {TRANSPORT_STREAM!r} or {TRANSPORT_UNARY!r}")


def fits(msg: Message) -> bool:
    """Whether an envelope or open request goes on the stream (not over
    MAX_STREAM_ENVELOPE encoded)."""
    size: int = msg.ByteSize()
    return size <= MAX_STREAM_ENVELOPE


def send_frame(ref: int, session_id: str, env: pb.Envelope) -> pb.AgentFrame:
    """The frame of a send, with its trace context (the envelope's
    traceparent, else the caller's), as a Send call carries it in its
    metadata."""
    parent, state = _trace.of_envelope(env.traceparent)
    return pb.AgentFrame(
        send=pb.StreamSend(ref=ref, session_id=session_id, envelope=env, traceparent=parent, tracestate=state)
    )


def open_frame(ref: int, req: pb.OpenRequest) -> pb.AgentFrame:
    """The frame of an open, with the caller's trace context."""
    parent, state = _trace.current()
    return pb.AgentFrame(open=pb.StreamOpen(ref=ref, request=req, traceparent=parent, tracestate=state))


def ack_of(a: pb.StreamAck, env: pb.Envelope) -> Ack:
    """The Ack of a send's answer, or the exception a Send call would have
    raised (the same class, reason, code and ErrorInfo)."""
    if a.HasField("error"):
        raise refusal(a.error)
    return Ack.from_proto(a.response, env.client_msg_id)


def opened(a: pb.StreamAck) -> Session:
    """The Session of an open's answer, or the exception an Open call would
    have raised."""
    if a.HasField("error"):
        raise refusal(a.error, "open")
    return Session(a.opened.session, a.opened.existing)


def refusal(se: pb.StreamError, op: str = "send") -> errors.HubError:
    """The HubError of a StreamError, its cause the equivalent status."""
    reason = ""
    if se.reason:
        try:
            reason = pb.Reason.Name(se.reason)
        except ValueError:  # a reason newer than this SDK: mapped by its code
            reason = ""
    cause = errors.StatusError(errors.status_code(se.code), se.message, reason, dict(se.metadata))
    err = errors.from_rpc_error(op, cause)
    err.__cause__ = cause
    return err


def closing(se: pb.StreamError) -> errors.HubError:
    """The HubError of the hub's closing frame: why it ends the stream (what
    its status says; it stands for a CANCELLED status when this side was
    not closed in time)."""
    return refusal(se, "connect")


def broken(why: Optional[errors.HubError], op: str = "send") -> errors.HubError:
    """The error of a send or open (op) the stream could not answer:
    unavailable, its outcome unknown, so that it is sent again with its
    client message id (an open: with its idempotency key)."""
    text = "agent stream: " + (str(why) if why is not None else "the stream broke")
    cause = errors.StatusError(grpc.StatusCode.UNAVAILABLE, text)
    err = errors.from_rpc_error(op, cause)
    err.__cause__ = cause
    return err


def unanswered(timeout: Optional[float], op: str = "send") -> errors.HubError:
    """The error of a send or open (op) whose ack did not come within its
    timeout."""
    return errors.DeadlineExceeded(
        f"no acknowledgement within {timeout:g}s" if timeout is not None else "no acknowledgement",
        reason="",
        code=grpc.StatusCode.DEADLINE_EXCEEDED,
        op=op,
    )


Deliver = Callable[[pb.Delivery], Union[None, Awaitable[None]]]
"""A stream's delivery callback: a function, or a coroutine function
(awaited: the stream reads nothing meanwhile)."""


_END = object()


class AgentStream:
    """One agent stream, opened by :meth:`start`.
    Sends and opens in flight are answered in any order; when the stream
    breaks each raises :class:`hubd.Unavailable` (send it again with the
    same client message id, or idempotency key) and :attr:`done` is set.
    :attr:`opens` says whether the hub takes opens on it. Belongs to the
    running loop."""

    def __init__(
        self,
        stub: Any,
        metadata: Any,
        log: logging.Logger,
        *,
        on_delivery: Optional[Deliver] = None,
        wait_for_ready: bool = False,
    ) -> None:
        self.log = log
        self.agent = ""
        self.opens = False  # the hub takes opens on the stream
        self.done = asyncio.Event()
        self.fatal: Optional[BaseException] = None  # what broke the reader
        self._deliver = on_delivery
        self._q: "asyncio.Queue[Any]" = asyncio.Queue()
        self._next = 0
        self._waiting: Dict[int, "asyncio.Future[Optional[pb.StreamAck]]"] = {}
        self._err: Optional[errors.HubError] = None
        self._closing: Optional[errors.HubError] = None  # the hub's closing frame
        self._reader: Optional["asyncio.Task[None]"] = None
        self._call = stub.AgentStream(self._frames(), metadata=metadata, wait_for_ready=wait_for_ready)

    async def _frames(self) -> AsyncIterator[pb.AgentFrame]:
        while True:
            f = await self._q.get()
            if f is _END:
                return
            yield f

    @property
    def error(self) -> Optional[errors.HubError]:
        """Why the stream ended (None while it runs)."""
        return self._err

    async def start(self, subscribe: Optional[pb.SubscribeRequest], timeout: Optional[float]) -> None:
        """Wait for the hub's ready frame (at most timeout seconds), then
        subscribe when asked and start reading.

        Raises:
            NoStream: the hub has no agent stream.
            hubd.HubError: the stream failed to open.
        """
        try:
            first = await asyncio.wait_for(self._call.read(), timeout)
        except asyncio.TimeoutError:
            self.close()
            raise errors.DeadlineExceeded(
                f"the hub did not open the stream within {timeout:g}s",
                reason="",
                code=grpc.StatusCode.DEADLINE_EXCEEDED,
                op="connect",
            ) from None
        except grpc.RpcError as e:
            err = errors.from_rpc_error("connect", e)
            self._fail(err)
            if err.code == grpc.StatusCode.UNIMPLEMENTED:
                raise NoStream() from None
            raise err from None
        except BaseException:
            self.close()
            raise
        if first is grpc.aio.EOF or first.WhichOneof("frame") != "ready":
            err = errors.Unavailable("the hub ended the stream before it was ready", reason="", op="connect")
            self._fail(err)
            raise err
        self.agent = first.ready.agent
        self.opens = first.ready.opens
        if subscribe is not None:
            self._q.put_nowait(pb.AgentFrame(subscribe=subscribe))
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        err: errors.HubError
        try:
            while True:
                f = await self._call.read()
                if f is grpc.aio.EOF:
                    err = errors.Unavailable("the hub ended the stream", reason="", op="connect")
                    break
                kind = f.WhichOneof("frame")
                if kind == "ack":
                    fut = self._waiting.pop(f.ack.ref, None)
                    if fut is not None and not fut.done():
                        fut.set_result(f.ack)
                elif kind == "delivery" and self._deliver is not None:
                    await _common.guarded(self.log, "the delivery of", f.delivery.envelope, self._deliver, f.delivery)
                elif kind == "closing":  # the hub ends the stream: close this side, its status follows
                    self._closing = closing(f.closing)
                    self._q.put_nowait(_END)
        except asyncio.CancelledError:
            err = errors.Canceled("the stream was closed", reason="", code=grpc.StatusCode.CANCELLED, op="connect")
        except grpc.RpcError as e:
            err = errors.from_rpc_error("connect", e)
            if self._closing is not None and err.code == grpc.StatusCode.CANCELLED:
                err = self._closing  # the hub cancelled a stream not closed in time
        except BaseException as e:  # the reader failed, or a callback raised SystemExit: the stream ends
            self.fatal = e
            err = errors.Canceled(f"the stream's reader failed: {e!r}", reason="", op="connect")
        self._fail(err)

    def _fail(self, err: errors.HubError) -> None:
        if self._err is not None:
            return
        self._err = err
        waiting, self._waiting = self._waiting, {}
        self._q.put_nowait(_END)
        self._call.cancel()
        for fut in waiting.values():
            if not fut.done():
                fut.set_result(None)  # no ack: broken
        self.done.set()

    def close(self) -> None:
        """End the stream; sends in flight raise Unavailable."""
        self._fail(errors.Canceled("the stream was closed", reason="", code=grpc.StatusCode.CANCELLED, op="connect"))
        if self._reader is not None and not self._reader.done() and self._reader is not asyncio.current_task():
            self._reader.cancel()

    async def send(self, session_id: str, env: pb.Envelope, timeout: Optional[float]) -> Ack:
        """Send env once and wait at most timeout seconds for its ack.

        Raises:
            hubd.HubError: what a Send call would raise; Unavailable when
                the stream broke with the send in flight (send it again,
                with the same client message id).
        """
        a = await self._round_trip("send", lambda ref: send_frame(ref, session_id, env), timeout)
        return ack_of(a, env)

    async def open(self, req: pb.OpenRequest, timeout: Optional[float]) -> Session:
        """Open a session once (its creator the stream's agent) and wait at
        most timeout seconds for the answer. Only on a stream that
        :attr:`opens`.

        Raises:
            hubd.HubError: what an Open call would raise; Unavailable when
                the stream broke with the open in flight (its outcome
                unknown: open again with the same idempotency key).
        """
        a = await self._round_trip("open", lambda ref: open_frame(ref, req), timeout)
        return opened(a)

    async def _round_trip(
        self, op: str, frame: Callable[[int], pb.AgentFrame], timeout: Optional[float]
    ) -> pb.StreamAck:
        """Write the frame made with a new ref and wait at most timeout
        seconds for that ref's ack. A stream that breaks first fails it
        with Unavailable (for op)."""
        if self._err is not None:
            raise broken(self._err, op)
        if self._closing is not None:  # this side is closed: nothing more is written
            raise broken(self._closing, op)
        self._next += 1
        ref = self._next
        fut: "asyncio.Future[Optional[pb.StreamAck]]" = asyncio.get_running_loop().create_future()
        self._waiting[ref] = fut
        self._q.put_nowait(frame(ref))
        try:
            a = await (fut if timeout is None else asyncio.wait_for(fut, timeout))
        except asyncio.TimeoutError:
            self._waiting.pop(ref, None)
            raise unanswered(timeout, op) from None
        except asyncio.CancelledError:
            self._waiting.pop(ref, None)
            raise
        if a is None:
            raise broken(self._err, op)  # the stream broke with it in flight
        return a
