"""The agent loop behind :meth:`hubd.aio.Client.serve`, and under it
:meth:`hubd.Client.serve` (the reference is the Go SDK's serve.go and
docs/API.md, "Writing an agent in any language"): one asyncio core. Each
session's turns run as a task, one at a time; sessions run concurrently.

What the caller gives (the handler, the invite and session-filter
functions, the hooks) may be plain functions or coroutine functions: a
coroutine is awaited. The sync client gives coroutine functions that run
its plain functions in threads, and a turn of its own (:class:`hubd.Turn`
with blocking calls).
"""

from __future__ import annotations

import asyncio
import inspect
import signal
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Dict, List, Optional, Set, Tuple, TypeVar, Union, cast

import grpc

from . import _common, _stream, _trace, errors
from ._model import EVENT_INVITE, Invite, InviteDecision, Reply, Session, Turn, ends, turn_msg_id
from ._pb import hub_pb2 as pb

if TYPE_CHECKING:  # pragma: no cover
    from .aio import Client

_T = TypeVar("_T")

Handler = Callable[[Any], Union[Reply, Awaitable[Reply]]]  # given the client's kind of Turn
InviteFunc = Callable[[Invite], Union[InviteDecision, Awaitable[InviteDecision]]]
SessionFilter = Callable[[Session], Union[bool, Awaitable[bool]]]
Hook = Callable[[Any], Union[None, Awaitable[None]]]
MakeTurn = Callable[[str, pb.Envelope, Optional[pb.View], Callable[[int], None]], Turn]


async def _maybe(r: Union[_T, Awaitable[_T]]) -> _T:
    """r, awaited when it is awaitable."""
    if inspect.isawaitable(r):
        return cast(_T, await r)
    return cast(_T, r)


@dataclass
class _Worker:
    """The turn state of one session."""

    last: int = 0  # the latest trigger seq taken
    pending: Optional[pb.Delivery] = None  # the newest turn not yet started
    task: Optional["asyncio.Task[None]"] = None  # the session's worker, while it runs
    ended: bool = False
    turn: Optional[Turn] = None  # the running turn


@dataclass
class Options:
    """What serve was given (see :meth:`hubd.aio.Client.serve`)."""

    invites: Optional[InviteFunc] = None
    session_filter: Optional[SessionFilter] = None
    view: Optional[str] = None
    window: int = 0
    backoff: Tuple[float, float] = (0.1, 5.0)
    observer: Optional[Hook] = None
    on_session_end: Optional[Hook] = None
    on_reconnect: Optional[Hook] = None
    stop: Optional[asyncio.Event] = None
    handle_signals: bool = True
    cancel_turns: bool = True
    """Cancel a running turn's task when its session ends or serve stops
    (a plain handler's thread runs on); otherwise serve sets the turn's
    ``cancelled`` and waits for the handler."""


class Serving:
    """One run of serve."""

    def __init__(self, client: "Client", handler: Handler, make_turn: MakeTurn, o: Options) -> None:
        if handler is None:
            raise ValueError("hubd: serve needs a handler")
        self.c = client
        self.h = handler
        self.make_turn = make_turn
        self.o = o
        self.base, self.cap = o.backoff
        self.log = client.log
        self.halt = asyncio.Event()
        self.cursors: Dict[str, int] = {}  # the last seq seen per session
        self.sessions: Dict[str, _Worker] = {}
        self.verdicts: Dict[str, "asyncio.Future[bool]"] = {}  # the session filter's answers
        self.tasks: Set["asyncio.Task[Any]"] = set()
        self.stream: Optional[_stream.AgentStream] = None  # the agent stream being read, if any

    # The loop.

    async def run(self) -> None:
        """Serve until halted (stop, a signal, or cancelled), then wait for
        every running turn."""
        loop = asyncio.get_running_loop()
        installed: List[signal.Signals] = []
        if self.o.handle_signals:
            for signum in (signal.SIGINT, signal.SIGTERM):
                try:
                    loop.add_signal_handler(signum, self.halt.set)
                    installed.append(signum)
                except (NotImplementedError, RuntimeError, ValueError):
                    pass
        waiters = [asyncio.ensure_future(self.halt.wait())]
        if self.o.stop is not None:
            waiters.append(asyncio.ensure_future(self.o.stop.wait()))
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
                w.pending = None
                if w.turn is not None:
                    w.turn.cancelled.set()
                if w.task is not None and self.o.cancel_turns:
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
            if self.o.on_reconnect is not None:
                await _maybe(self.o.on_reconnect(err))
            self.log.info("hubd: serve: stream ended: %s; resubscribing (attempt %d)", err, attempt)
            if await self._sleep(_common.backoff_delay(attempt, self.base, self.cap)):
                return

    def _request(self) -> pb.SubscribeRequest:
        """The subscription from the cursors, asking each turn notice to
        carry the turn's view (no GetView call before the handler), and
        only what serve acts on (terse) unless an observer wants
        everything."""
        return _common.subscribe_request(self.cursors, False, self.o.observer is None, self.o.view, self.o.window)

    async def _subscription(self) -> Tuple[bool, Optional[errors.HubError]]:
        """Read one subscription until it breaks; report whether it delivered
        anything, and the error that broke it (None: a clean end)."""
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
                await self._deliver(d)
            return got, None
        except grpc.RpcError as e:
            return got, errors.from_rpc_error("subscribe", e)
        finally:
            call.cancel()

    async def _agent_stream(self) -> Optional[Tuple[bool, Optional[errors.HubError]]]:
        """Serve one agent stream until it breaks: its deliveries are acted
        on by its reader and the handlers' replies go over it. Reports as
        _subscription does, or None when the hub has no agent stream (the
        client then sends unary and serve subscribes)."""
        got = False

        async def on_delivery(d: pb.Delivery) -> None:
            nonlocal got
            got = True
            await self._deliver(d)

        # The stream itself tells the pending turns (after what the cursors
        # missed), each with its view: no PendingTurns call.
        st = _stream.AgentStream(self.c.raw, self.c.metadata, self.log, on_delivery=on_delivery, wait_for_ready=True)
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

    # Deliveries.

    async def _deliver(self, d: pb.Delivery) -> None:
        """Act on one delivery of the stream. A hook (the observer,
        on_session_end) that raises is logged, and the delivery is acted on
        as if it had returned: the stream and serve go on."""
        e = d.envelope
        if self.o.observer is not None:
            await _common.guarded(self.log, "serve: observer on", e, self.o.observer, d)
        sid = e.session_id
        if e.seq > self.cursors.get(sid, 0):
            self.cursors[sid] = e.seq
        if ends(e):
            if self.o.on_session_end is not None:
                await _common.guarded(self.log, "serve: on_session_end on", e, self.o.on_session_end, e)
            self.cursors.pop(sid, None)
            self._end(sid)
            return
        if e.type == EVENT_INVITE:
            invitees = list(e.invite.invitees)
            if not self.c.name or self.c.name in invitees:  # not the creator's copy
                self._spawn(self._answer_invite(Invite(sid, invitees, e)))
        if d.your_turn:
            self._dispatch(d)

    async def _answer_invite(self, inv: Invite) -> None:
        sid = inv.session_id
        if not await self._serves(sid, None):
            return  # another client's to answer
        decision: Optional[str] = None
        if self.o.invites is not None:
            try:
                decision = _common.invite_decision(await _maybe(self.o.invites(inv)))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the decider failed: reject, as Go does with its error
                self.log.warning("hubd: serve: deciding the invite to %s: %r", sid, exc)
                decision = str(exc) or type(exc).__name__
        try:
            if decision is None:
                await self._retry(lambda: self.c.ack_invite(sid), None)
            else:
                reason = decision
                await self._retry(lambda: self.c.reject_invite(sid, reason), None)
        except (errors.BadLifecycleTransition, errors.SessionClosed):
            pass  # an invite seen again after a restart, already answered
        except errors.HubError as e:
            if not self.halt.is_set():
                self.log.warning("hubd: serve: answering the invite to %s: %s", sid, e)

    def _dispatch(self, d: pb.Delivery) -> None:
        """Hand a turn to its session's worker, unless that turn (or a later
        one) was already taken."""
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
        """A handler waiting in session sid (Turn.delegate, Turn.ask,
        Task.wait) took the turn begun at seq itself: that turn, told by the
        stream or by PendingTurns, does not start the handler again."""
        w = self.sessions.get(sid)
        if w is None:
            return
        w.last = max(w.last, seq)
        if w.pending is not None and w.pending.envelope.seq <= w.last:
            w.pending = None

    def _end(self, sid: str) -> None:
        """Forget an ended session: its pending turn is dropped and its
        running turn told (and cancelled, with cancel_turns)."""
        self.verdicts.pop(sid, None)
        w = self.sessions.get(sid)
        if w is None:
            return
        w.ended, w.pending = True, None
        if w.turn is not None:
            w.turn.cancelled.set()
        if w.task is None:
            del self.sessions[sid]
        elif self.o.cancel_turns:
            w.task.cancel()

    async def _work(self, sid: str, w: _Worker) -> None:
        """Run a session's turns one at a time until none is pending."""
        try:
            while w.pending is not None and not self.halt.is_set():
                d, w.pending = w.pending, None
                view = d.view if d.HasField("view") else None  # the notice carried it
                t = self.make_turn(sid, d.envelope, view, lambda seq: self._consume(sid, seq))
                w.turn = t
                try:
                    await self._turn(t)
                except asyncio.CancelledError:
                    raise
                except Exception:  # never let a turn kill the worker
                    self.log.exception("hubd: serve: turn in session %s", sid)
        finally:
            w.task, w.turn = None, None
            if w.ended:
                self.sessions.pop(sid, None)

    async def _turn(self, t: Turn) -> None:
        """Run the handler on one turn and post its reply, in the trace of
        the envelope that began the turn: the calls the handler makes and
        its reply continue it."""
        with _trace.continuing(t.trigger.traceparent):
            await self._run_turn(t)

    async def _serves(self, sid: str, cancelled: Optional[threading.Event]) -> bool:
        """Whether serve serves session sid: always without a session
        filter; with one, as it answers, asked once per session (another
        task asking meanwhile awaits the answer)."""
        keep = self.o.session_filter
        if keep is None:
            return True
        v = self.verdicts.get(sid)
        if v is not None:
            return await asyncio.shield(v)
        v = self.verdicts[sid] = asyncio.get_running_loop().create_future()
        verdict = False
        try:
            s = await self._retry(lambda: self.c.get_session(sid), cancelled)
            verdict = bool(await _maybe(keep(s)))
        except asyncio.CancelledError:
            if self.verdicts.get(sid) is v:
                del self.verdicts[sid]  # undecided: ask again next time
            raise
        except errors.HubError as err:
            if self.halt.is_set() or (cancelled is not None and cancelled.is_set()):
                if self.verdicts.get(sid) is v:
                    del self.verdicts[sid]  # undecided: ask again next time
            else:
                self.log.warning("hubd: serve: session %s not served: reading it for the session filter: %s", sid, err)
        except Exception as exc:  # the filter failed: not served
            self.log.warning("hubd: serve: session %s not served: the session filter raised %r", sid, exc)
        finally:
            if not v.done():
                v.set_result(verdict)
        return verdict

    async def _run_turn(self, t: Turn) -> None:
        e, sid = t.trigger, t.session_id
        if not await self._serves(sid, t.cancelled):
            return
        if self.o.view is not None and t.view is None:
            name = self.o.view
            try:
                t.view = await self._retry(lambda: self.c.view(sid, name, self.o.window), t.cancelled)
            except errors.HubError as err:
                self._stale(e, "view", err)
                return
        try:
            reply = await _maybe(self.h(t))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if isinstance(exc, errors.Canceled) and t.cancelled.is_set():
                return  # a wait given up as serve stopped or the session ended
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
            await self._retry(lambda: self._post(sid, msg), t.cancelled)
        except errors.HubError as err:
            self._stale(e, "reply", err)

    def _stale(self, e: pb.Envelope, step: str, err: errors.HubError) -> None:
        """Log a failed step of a turn: quietly for a turn that had passed."""
        if isinstance(err, errors.Canceled) or self.halt.is_set():
            return
        if isinstance(err, _common.STALE):
            self.log.info(
                "hubd: serve: stale turn in session %s (begun by seq %d) ignored: %s", e.session_id, e.seq, err
            )
        else:
            self.log.warning("hubd: serve: %s in session %s (turn begun by seq %d): %s", step, e.session_id, e.seq, err)

    async def _retry(self, f: Callable[[], Awaitable[_T]], cancelled: Optional[threading.Event]) -> _T:
        """Call f until it succeeds, fails for good, serve halts or cancelled
        is set."""
        attempt = 1
        while True:
            try:
                return await f()
            except errors.HubError as e:
                if not e.retryable or await self._sleep(_common.backoff_delay(attempt, self.base, self.cap)):
                    raise
                if cancelled is not None and cancelled.is_set():
                    raise
            attempt += 1
