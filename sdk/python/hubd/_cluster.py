"""Following a hubd cluster (docs/SCALING.md), for the client core (the
sync client runs the same).

A cluster serves each session on one node, the owner of its partition; any
other node answers ``NOT_OWNER`` with the owner's gRPC address in the
ErrorInfo metadata (``owner_addr``). A client given ``peers`` follows it
without its caller noticing, as the Go agentsdk does:

- a unary call refused with ``NOT_OWNER`` is sent again, unchanged (the
  same client message id, so a send is never written twice), to the owner;
  one without an owner yet (a partition changing hands) is sent again to
  the same node after a short wait; one that cannot reach its node (a dead
  node, ``UNAVAILABLE`` with no reason) or that a stopping node refuses
  (``DRAINING``) goes to the next node, which knows the owner. It gives up
  after ``follow_for`` seconds with the last error.
- ``Subscribe`` opens one stream per node and merges them: each node
  delivers the sessions it serves. A node's stream that ends (its
  partitions moved: ``NOT_OWNER``; the node died or restarts) is reopened
  from the merged stream's cursors (the last seq handed out per session), so
  the merged stream sees no gap and no duplicate per session (a pending turn
  may be told again, as after any resubscribe).
- ``Watch`` (one session, or a tree) follows ``NOT_OWNER`` like a unary
  call, and a watch that ends because its partition moved (or its node
  died) is reopened on the owner from the last seq seen per session.

They stand in for the generated stub's methods (:class:`AioFollowingStub`),
so the client's code is the same with and without a cluster; a call that
gives up raises the last ``grpc.RpcError``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, cast

import grpc

from . import _common, errors
from ._pb import hub_pb2 as pb
from ._pb import hub_service_pb2_grpc as pb_grpc

_STREAMS = ("Subscribe", "Watch")


def error_info(err: BaseException) -> Tuple[Optional[grpc.StatusCode], str, Dict[str, str]]:
    """A failed call's status code, hubd ErrorInfo reason and metadata."""
    code: Optional[grpc.StatusCode] = None
    trailing: Any = None
    try:
        code = err.code()  # type: ignore[attr-defined]
        trailing = err.trailing_metadata()  # type: ignore[attr-defined]
    except Exception:  # not a call's error
        return None, "", {}
    reason, md = errors.error_info(trailing)
    return code, reason, md


class Peers:
    """A client's view of a cluster: every node's address (the one dialled
    first, then ``peers``, then owners learned from ``NOT_OWNER``) and a stub
    on a channel to each, made when first needed."""

    def __init__(
        self,
        self_addr: str,
        peers: List[str],
        stub: Any,
        new_stub: Callable[[str], Any],
        follow_for: float,
        log: Any,
    ) -> None:
        self.self_addr = self_addr
        self.addrs = [self_addr] + [a for i, a in enumerate(peers) if a != self_addr and a not in peers[:i]]
        self.follow_for = follow_for if follow_for > 0 else 30.0
        self.log = log
        self._new_stub = new_stub
        self._lock = threading.Lock()
        self._stubs: Dict[str, Any] = {self_addr: stub}

    def nodes(self) -> List[str]:
        with self._lock:
            return list(self.addrs)

    def stub(self, addr: str) -> Any:
        """The stub of node addr, dialling it (lazily) the first time."""
        with self._lock:
            s = self._stubs.get(addr)
            if s is None:
                s = self._stubs[addr] = self._new_stub(addr)
                if addr not in self.addrs:
                    self.addrs.append(addr)
            return s

    def next(self, addr: str) -> str:
        """The node after addr in the ring of known nodes."""
        with self._lock:
            i = self.addrs.index(addr) if addr in self.addrs else -1
            return self.addrs[(i + 1) % len(self.addrs)]

    def redirect(self, err: BaseException, at: str, attempt: int) -> Optional[Tuple[str, float]]:
        """Where a call refused with err at node ``at`` goes next and after
        what wait in seconds; None for an error not to follow."""
        code, reason, md = error_info(err)
        if code is None:
            return None
        wait = _common.backoff_delay(attempt, 0.05, 1.0)
        owner = md.get("owner_addr", "")
        if reason == "NOT_OWNER" and owner and owner != at:
            return owner, (wait if attempt > 1 else 0.0)  # a chain of moves: do not spin
        if reason == "NOT_OWNER":
            return at, wait  # no owner yet: the partition changes hands
        if (reason == "" and code == grpc.StatusCode.UNAVAILABLE) or reason == "DRAINING":
            return self.next(at), wait  # the node is unreachable or stopping: ask another
        return None

    def resumable(self, err: BaseException) -> bool:
        """Whether a node's stream that failed with err is reopened (the
        node died, restarts, or its partitions moved) rather than the
        merged stream failing."""
        if error_info(err)[0] is None:
            return False
        return errors.from_rpc_error("subscribe", err).retryable  # type: ignore[arg-type]


def _kw(kwargs: Mapping[str, Any], **over: Any) -> Dict[str, Any]:
    out = dict(kwargs)
    out.update(over)
    return out


def _watch_request(req: pb.WatchRequest, nxt: Mapping[str, int]) -> pb.WatchRequest:
    """req resumed after the seqs seen: nxt is the next seq per session."""
    out = pb.WatchRequest()
    out.CopyFrom(req)
    root = req.session_id
    if root in nxt:
        out.from_seq = nxt[root]
    if req.tree:
        for sid, n in nxt.items():
            if sid != root:
                out.cursors[sid] = n - 1
    return out


def _watch_next(req: pb.WatchRequest) -> Dict[str, int]:
    nxt = {req.session_id: max(req.from_seq, 1)}
    for sid, c in req.cursors.items():
        nxt[sid] = c + 1
    return nxt


def _seen(nxt: Dict[str, int], d: pb.Delivery) -> bool:
    """Whether a watch's delivery was handed out already; advances nxt."""
    e = d.envelope
    if e.seq < nxt.get(e.session_id, 0):
        return True
    nxt[e.session_id] = e.seq + 1
    return False


class AioFollowingStub:
    """The generated stub's methods over a cluster, for grpc.aio: unary
    calls follow ``NOT_OWNER``, Subscribe merges every node's stream, Watch
    follows its session's partition."""

    def __init__(self, peers: Peers) -> None:
        self._peers = peers

    def __getattr__(self, method: str) -> Any:
        if method == "Subscribe":
            return lambda req, **kw: _AioMergedSubscribe(self._peers, req, kw)
        if method == "Watch":
            return lambda req, **kw: _AioFollowedWatch(self._peers, req, kw)
        return lambda req, **kw: self._unary(method, req, kw)

    async def _unary(self, method: str, req: Any, kw: Dict[str, Any]) -> Any:
        p = self._peers
        at = p.self_addr
        try:
            return await getattr(p.stub(at), method)(req, **kw)
        except grpc.RpcError as e:
            err = e
        deadline = time.monotonic() + p.follow_for
        attempt = 1
        while time.monotonic() < deadline:
            where = p.redirect(err, at, attempt)
            if where is None:
                break
            nxt, wait = where
            if wait > 0:
                await asyncio.sleep(wait)
            if nxt != at:
                p.log.info("hubd: %s: following to %s (%s)", method, nxt, errors.from_rpc_error(method, err))
            at = nxt
            try:
                return await getattr(p.stub(at), method)(req, **_kw(kw, wait_for_ready=False))
            except grpc.RpcError as e:
                err = e
            attempt += 1
        raise err


class _AioMergedSubscribe:
    """Subscribe on every node, merged: read it, cancel it. Each node's
    stream runs in a task and is reopened from the cursors when it ends."""

    def __init__(self, peers: Peers, req: pb.SubscribeRequest, kw: Dict[str, Any]) -> None:
        self._peers = peers
        self._req = req
        self._kw = _kw(kw, wait_for_ready=False)
        timeout = self._kw.pop("timeout", None)
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._cursors: Dict[str, int] = dict(req.cursors)
        self._q: "asyncio.Queue[Tuple[Optional[pb.Delivery], Optional[BaseException]]]" = asyncio.Queue(maxsize=256)
        self._halted = False
        self._calls: Dict[str, Any] = {}
        self._tasks = [asyncio.ensure_future(self._node(a)) for a in peers.nodes()]

    async def _node(self, addr: str) -> None:
        attempt = 0
        while not self._halted:
            req = pb.SubscribeRequest()
            req.CopyFrom(self._req)
            req.cursors.clear()
            req.cursors.update(self._cursors)
            left = None if self._deadline is None else max(0.0, self._deadline - time.monotonic())
            call = self._peers.stub(addr).Subscribe(req, timeout=left, **self._kw)
            self._calls[addr] = call
            err: Optional[BaseException] = None
            try:
                async for d in call:
                    attempt = 0
                    await self._q.put((d, None))
            except grpc.RpcError as e:
                err = e
            except asyncio.CancelledError:
                return
            if self._halted:
                return
            if err is not None and not self._peers.resumable(err):
                await self._q.put((None, err))
                return
            attempt += 1
            self._peers.log.info("hubd: subscribe: the stream of %s ended (%s); reopening from the cursors", addr, err)
            await asyncio.sleep(_common.backoff_delay(attempt, 0.05, 1.0))

    def __aiter__(self) -> "_AioMergedSubscribe":
        return self

    async def __anext__(self) -> pb.Delivery:
        d = await self.read()
        if d is grpc.aio.EOF:
            raise StopAsyncIteration
        return cast(pb.Delivery, d)

    async def read(self) -> Any:
        while True:
            if self._halted:
                return grpc.aio.EOF
            d, err = await self._q.get()
            if self._halted:
                return grpc.aio.EOF
            if err is not None:
                self.cancel()
                raise err
            assert d is not None
            e = d.envelope
            fresh = e.seq > self._cursors.get(e.session_id, 0)
            if fresh:
                self._cursors[e.session_id] = e.seq
            if fresh or d.your_turn:
                return d

    def cancel(self) -> bool:
        self._halted = True
        for c in self._calls.values():
            c.cancel()
        for t in self._tasks:
            t.cancel()
        try:
            self._q.put_nowait((None, None))  # wakes a reader
        except asyncio.QueueFull:
            pass
        return True


class _AioFollowedWatch:
    """A Watch that follows its session's partition: refused with
    ``NOT_OWNER`` (or ended by a move, or by its node's death) it is
    reopened where the session is served, after the last seq seen."""

    def __init__(self, peers: Peers, req: pb.WatchRequest, kw: Dict[str, Any]) -> None:
        self._peers = peers
        self._req = req
        self._kw = dict(kw)
        timeout = self._kw.pop("timeout", None)
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._next = _watch_next(req)
        self._at = peers.self_addr
        self._closed = False
        self._call: Any = None

    def __aiter__(self) -> "_AioFollowedWatch":
        return self

    async def __anext__(self) -> pb.Delivery:
        d = await self.read()
        if d is grpc.aio.EOF:
            raise StopAsyncIteration
        return cast(pb.Delivery, d)

    async def read(self) -> Any:
        attempt, since = 1, 0.0
        while True:
            if self._closed:
                return grpc.aio.EOF
            if self._call is None:
                left = None if self._deadline is None else max(0.0, self._deadline - time.monotonic())
                self._call = self._peers.stub(self._at).Watch(
                    _watch_request(self._req, self._next), timeout=left, **self._kw
                )
            try:
                d = await self._call.read()
            except grpc.RpcError as e:
                if self._closed:
                    raise
                since = since or time.monotonic()
                where = self._peers.redirect(e, self._at, attempt)
                if where is None or time.monotonic() - since > self._peers.follow_for:
                    raise
                nxt, wait = where
                if wait > 0:
                    await asyncio.sleep(wait)
                if nxt != self._at:
                    self._peers.log.info("hubd: watch: following to %s (%s)", nxt, errors.from_rpc_error("watch", e))
                self._at, self._call = nxt, None
                self._kw["wait_for_ready"] = False
                attempt += 1
                continue
            if d is grpc.aio.EOF:
                return d
            if not _seen(self._next, d):
                return d

    def cancel(self) -> bool:
        self._closed = True
        if self._call is not None:
            self._call.cancel()
        return True


def new_stub(channel: Any) -> Any:
    return pb_grpc.HubStub(channel)  # type: ignore[no-untyped-call]
