"""The agent's stream for the asyncio client: what hubd._stream is
for the sync one, with an asyncio queue feeding grpc.aio's writer and one
reader task per stream (nothing blocks the event loop)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, AsyncIterator, Callable, Dict, Optional

import grpc
import grpc.aio

from . import errors
from ._model import Ack, Session
from ._pb import hub_pb2 as pb
from ._stream import NoStream, ack_of, broken, closing, delivered, open_frame, opened, send_frame, unanswered

_END = object()


class AioAgentStream:
    """One agent stream of the asyncio client, opened by :meth:`start`.
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
        on_delivery: Optional[Callable[[pb.Delivery], None]] = None,
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
                elif kind == "delivery":
                    delivered(self.log, self._deliver, f.delivery)
                elif kind == "closing":  # the hub ends the stream: close this side, its status follows
                    self._closing = closing(f.closing)
                    self._q.put_nowait(_END)
        except asyncio.CancelledError:
            err = errors.Canceled("the stream was closed", reason="", code=grpc.StatusCode.CANCELLED, op="connect")
        except grpc.RpcError as e:
            err = errors.from_rpc_error("connect", e)
            if self._closing is not None and err.code == grpc.StatusCode.CANCELLED:
                err = self._closing  # the hub cancelled a stream not closed in time
        except Exception as e:  # the reader itself failed: the stream ends with it
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
        """Send env once and wait at most timeout seconds for its ack (see
        hubd._stream.AgentStream.send)."""
        a = await self._round_trip("send", lambda ref: send_frame(ref, session_id, env), timeout)
        return ack_of(a, env)

    async def open(self, req: pb.OpenRequest, timeout: Optional[float]) -> Session:
        """Open a session once and wait at most timeout seconds for the
        answer (see hubd._stream.AgentStream.open)."""
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
