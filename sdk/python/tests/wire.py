"""What a client's streams bring over the wire: gRPC client interceptors,
put on the channels of the clients made inside :meth:`Received.dialing`
(sync or asyncio: the sync client speaks through its asyncio core), record
each delivery that a stream (agent-stream frames and Subscribe messages
alike) receives, as ``"type"`` or ``"type [your turn]"``."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, AsyncIterator, Callable, Iterator, List, Optional
from unittest import mock

import grpc.aio

from hubd import pb


class Received:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._got: List[str] = []

    def record(self, msg: Any) -> None:
        d: Optional[pb.Delivery] = None
        if isinstance(msg, pb.HubFrame):
            if msg.WhichOneof("frame") == "delivery":
                d = msg.delivery
        elif isinstance(msg, pb.Delivery):
            d = msg
        if d is None:
            return
        with self._lock:
            self._got.append(d.envelope.type + (" [your turn]" if d.your_turn else ""))

    def get(self) -> List[str]:
        with self._lock:
            return list(self._got)

    @contextmanager
    def dialing(self) -> Iterator[None]:
        """Clients made inside record what their streams receive."""
        real = grpc.aio.insecure_channel

        def dial(target: str, options: Any = None, compression: Any = None) -> grpc.aio.Channel:
            # (grpc.aio files an interceptor under one kind only.)
            return real(target, options, compression, interceptors=[_AioUnaryStream(self), _AioStreamStream(self)])

        with mock.patch.object(grpc.aio, "insecure_channel", dial):
            yield


async def _recorded(call: Any, r: Received) -> AsyncIterator[Any]:
    async for m in call:
        r.record(m)
        yield m


class _AioUnaryStream(grpc.aio.UnaryStreamClientInterceptor):
    def __init__(self, r: Received) -> None:
        self._r = r

    async def intercept_unary_stream(self, continuation: Callable[..., Any], details: Any, request: Any) -> Any:
        return _recorded(await continuation(details, request), self._r)


class _AioStreamStream(grpc.aio.StreamStreamClientInterceptor):
    def __init__(self, r: Received) -> None:
        self._r = r

    async def intercept_stream_stream(self, continuation: Callable[..., Any], details: Any, requests: Any) -> Any:
        return _recorded(await continuation(details, requests), self._r)
