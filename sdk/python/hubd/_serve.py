"""The sync agent loop behind :meth:`hubd.Client.serve` (the reference is
the Go SDK's serve.go and docs/API.md, "Writing an agent in any
language")."""

from __future__ import annotations

import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

import grpc

from . import _common, _stream, _trace, errors
from ._model import EVENT_INVITE, Handler, Invite, InviteFunc, Session, Turn, ends, turn_msg_id
from ._pb import hub_pb2 as pb

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client


@dataclass
class _Worker:
    """The turn state of one session."""

    last: int = 0  # the latest trigger seq taken
    pending: Optional[pb.Delivery] = None  # the newest turn not yet started
    running: bool = False
    ended: bool = False
    turn: Optional[Turn] = None  # the running turn


class _Verdict:
    """The session filter's answer about one session, once decided is set."""

    def __init__(self) -> None:
        self.decided = threading.Event()
        self.keep = False


class Serving:
    """One run of Client.serve."""

    def __init__(
        self,
        client: "Client",
        handler: Handler,
        *,
        invites: Optional[InviteFunc],
        session_filter: Optional[Callable[[Session], bool]],
        view: Optional[str],
        window: int,
        backoff: Tuple[float, float],
        observer: Optional[Callable[[pb.Delivery], None]],
        on_session_end: Optional[Callable[[pb.Envelope], None]],
        on_reconnect: Optional[Callable[[errors.HubError], None]],
        stop: Optional[threading.Event],
        handle_signals: bool,
        max_workers: int,
    ) -> None:
        if handler is None:
            raise ValueError("hubd: serve needs a handler")
        self.c = client
        self.h = handler
        self.invites = invites
        self.session_filter = session_filter
        self.verdicts: Dict[str, _Verdict] = {}  # the session filter's answers, under lock
        self.view = view
        self.window = window
        self.base, self.cap = backoff
        self.observe = observer
        self.on_session_end = on_session_end
        self.on_reconnect = on_reconnect
        self.user_stop = stop
        self.handle_signals = handle_signals
        self.log = client.log
        self.halt = threading.Event()
        # cursors: the last seq seen per session; only the reader touches it.
        self.cursors: Dict[str, int] = {}
        self.lock = threading.Lock()
        self.sessions: Dict[str, _Worker] = {}
        self.call: Any = None  # the current subscription (a call, or an AgentStream)
        self.stream: Optional[_stream.AgentStream] = None  # the agent stream being read, if any
        self.pool = ThreadPoolExecutor(max_workers=max(1, max_workers), thread_name_prefix="hubd-serve")

    # The loop.

    def run(self) -> None:
        restore = self._install_signals()
        watcher = threading.Thread(target=self._watch_stop, name="hubd-serve-stop", daemon=True)
        watcher.start()
        try:
            self._loop()
        finally:
            self._stop()
            self.pool.shutdown(wait=True)
            watcher.join()
            restore()

    def _loop(self) -> None:
        attempt = 0
        while not self.halt.is_set():
            got, err = self._subscription()
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
            if self.halt.wait(_common.backoff_delay(attempt, self.base, self.cap)):
                return

    def _request(self) -> pb.SubscribeRequest:
        """The subscription from the cursors, asking each turn notice to
        carry the turn's view (no GetView call before the handler), and
        only what serve acts on (terse) unless an observer wants
        everything."""
        return _common.subscribe_request(self.cursors, False, self.observe is None, self.view, self.window)

    def _subscription(self) -> Tuple[bool, Optional[errors.HubError]]:
        """Read one subscription until it breaks; report whether it delivered
        anything, and the error that broke it (None: a clean end)."""
        if not self.c._unary:
            res = self._agent_stream()
            if res is not None:
                return res
        req = self._request()
        with self.lock:
            if self.halt.is_set():
                return False, None
            self.call = self.c._stub.Subscribe(req, metadata=self.c.metadata, wait_for_ready=True)
        call = self.call
        got = False
        try:
            for d in self._pending_turns():
                self._dispatch(d)
            for d in call:
                got = True
                self._deliver(d)
            return got, None
        except grpc.RpcError as e:
            return got, errors.from_rpc_error("subscribe", e)
        finally:
            call.cancel()

    def _agent_stream(self) -> Optional[Tuple[bool, Optional[errors.HubError]]]:
        """Serve one agent stream until it breaks: its deliveries are acted
        on by its reader thread and the handlers' replies go over it. Reports
        as _subscription does, or None when the hub has no agent stream
        (the client then sends unary and serve subscribes)."""
        got = threading.Event()

        def on_delivery(d: pb.Delivery) -> None:
            got.set()
            self._deliver(d)

        with self.lock:
            if self.halt.is_set():
                return False, None
            # The stream itself tells the pending turns (after what the
            # cursors missed), each with its view: no PendingTurns call.
            st = _stream.AgentStream(
                self.c.raw,
                self.c.metadata,
                self.log,
                subscribe=self._request(),
                on_delivery=on_delivery,
                wait_for_ready=True,
            )
            self.call = st
        try:
            st.wait_ready(None)
        except _stream.NoStream:
            self.c._no_stream("serve subscribes instead")
            return None
        except errors.HubError as e:
            return False, e
        self.stream = st
        try:
            st.done.wait()
        finally:
            self.stream = None
            st.close()
        if st.fatal is not None:
            raise st.fatal
        return got.is_set(), st.error

    def _post(self, sid: str, msg: pb.Envelope) -> None:
        """Post a reply: over serve's stream while it has one, else as the
        client sends."""
        st = self.stream
        if st is not None and not st.done.is_set() and _stream.fits(msg):
            st.send(sid, msg, None)
            return
        self.c._send(sid, msg, 1, None)

    def _pending_turns(self) -> List[pb.Delivery]:
        """The agent's pending turns, once the hub is reachable ([] when
        halted or refused)."""
        fut = self.c.raw.PendingTurns.future(pb.PendingTurnsRequest(), metadata=self.c.metadata, wait_for_ready=True)
        try:
            while not self.halt.is_set():
                try:
                    return list(fut.result(timeout=0.1).turns)
                except grpc.FutureTimeoutError:
                    continue
                except grpc.RpcError as e:
                    self.log.info("hubd: serve: pending turns: %s", errors.from_rpc_error("pending turns", e))
                    return []
            return []
        finally:
            fut.cancel()

    # Stopping.

    def _watch_stop(self) -> None:
        while not self.halt.wait(0.1):
            if self.user_stop is not None and self.user_stop.is_set():
                break
        self._stop()

    def _stop(self) -> None:
        """Halt: end the subscription and tell running turns."""
        with self.lock:
            self.halt.set()
            if self.call is not None:
                self.call.cancel()
            for w in self.sessions.values():
                w.pending = None
                if w.turn is not None:
                    w.turn.cancelled.set()

    def _install_signals(self) -> Callable[[], None]:
        if not self.handle_signals or threading.current_thread() is not threading.main_thread():
            return lambda: None
        previous: List[Tuple[int, Any]] = []

        def on_signal(signum: int, frame: Any) -> None:
            self.halt.set()  # the watcher thread does the rest

        for sig in (signal.SIGINT, signal.SIGTERM):
            previous.append((sig, signal.signal(sig, on_signal)))

        def restore() -> None:
            for sig, h in previous:
                signal.signal(sig, h)

        return restore

    # Deliveries.

    def _deliver(self, d: pb.Delivery) -> None:
        """Act on one delivery of the stream. A hook (the observer,
        on_session_end) that raises is logged, and the delivery is acted on
        as if it had returned: the stream and serve go on."""
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
            self._invite(e)
        if d.your_turn:
            self._dispatch(d)

    def _invite(self, e: pb.Envelope) -> None:
        invitees = list(e.invite.invitees)
        me = self.c.name
        if me and me not in invitees:
            return  # the creator's copy
        inv = Invite(e.session_id, invitees, e)
        try:
            self.pool.submit(self._answer_invite, inv)
        except RuntimeError:  # the pool is shutting down
            pass

    def _answer_invite(self, inv: Invite) -> None:
        if not self._serves(inv.session_id, self.halt):
            return  # another client's to answer
        try:
            decision = _common.invite_decision(self.invites(inv)) if self.invites is not None else None
        except Exception as exc:  # the decider failed: reject, as Go does with its error
            self.log.warning("hubd: serve: deciding the invite to %s: %r", inv.session_id, exc)
            decision = str(exc) or type(exc).__name__
        sid = inv.session_id
        try:
            if decision is None:
                self._retry(lambda: self.c.ack_invite(sid), self.halt)
            else:
                self._retry(lambda: self.c.reject_invite(sid, decision or ""), self.halt)
        except (errors.BadLifecycleTransition, errors.SessionClosed):
            pass  # an invite seen again after a restart, already answered
        except errors.HubError as e:
            if not self.halt.is_set():
                self.log.warning("hubd: serve: answering the invite to %s: %s", sid, e)

    def _dispatch(self, d: pb.Delivery) -> None:
        """Hand a turn to its session's worker, unless that turn (or a later
        one) was already taken."""
        sid, seq = d.envelope.session_id, d.envelope.seq
        with self.lock:
            if self.halt.is_set():
                return
            w = self.sessions.setdefault(sid, _Worker())
            if w.ended or seq <= w.last:
                return
            w.last, w.pending = seq, d
            if w.running:
                return
            w.running = True
            try:
                self.pool.submit(self._work, sid, w)
            except RuntimeError:
                w.running = False

    def _consume(self, sid: str, seq: int) -> None:
        """A handler waiting in session sid (Turn.delegate, Turn.ask,
        Task.wait) took the turn begun at seq itself: that turn, told by the
        stream or by PendingTurns, does not start the handler again."""
        with self.lock:
            w = self.sessions.get(sid)
            if w is None:
                return
            w.last = max(w.last, seq)
            if w.pending is not None and w.pending.envelope.seq <= w.last:
                w.pending = None

    def _end(self, sid: str) -> None:
        """Forget an ended session: its pending turn is dropped and its
        running turn told."""
        with self.lock:
            self.verdicts.pop(sid, None)
            w = self.sessions.get(sid)
            if w is None:
                return
            w.ended, w.pending = True, None
            if w.turn is not None:
                w.turn.cancelled.set()
            if not w.running:
                del self.sessions[sid]

    def _work(self, sid: str, w: _Worker) -> None:
        """Run a session's turns one at a time until none is pending."""
        while True:
            with self.lock:
                d = w.pending
                w.pending = None
                if d is None or self.halt.is_set():
                    w.running, w.turn = False, None
                    if w.ended:
                        self.sessions.pop(sid, None)
                    return
                view = d.view if d.HasField("view") else None  # the notice carried it
                t = Turn(sid, d.envelope, view, self.c, _consume=lambda seq: self._consume(sid, seq))
                w.turn = t
            try:
                self._turn(t)
            except Exception:  # never let a turn kill the worker
                self.log.exception("hubd: serve: turn in session %s", sid)

    def _turn(self, t: Turn) -> None:
        """Run the handler on one turn and post its reply, in the trace of
        the envelope that began the turn: the calls the handler makes and
        its reply continue it."""
        with _trace.continuing(t.trigger.traceparent):
            self._run_turn(t)

    def _serves(self, sid: str, cancelled: threading.Event) -> bool:
        """Whether serve serves session sid: always without a session
        filter; with one, as it answers, asked once per session (another
        thread asking meanwhile waits for the answer)."""
        keep = self.session_filter
        if keep is None:
            return True
        with self.lock:
            v = self.verdicts.get(sid)
            asked = v is not None
            if v is None:
                v = self.verdicts[sid] = _Verdict()
        if asked:
            while not v.decided.wait(0.1):
                if cancelled.is_set() or self.halt.is_set():
                    return False
            return v.keep
        try:
            s = self._retry(lambda: self.c.get_session(sid), cancelled)
            v.keep = bool(keep(s))
        except errors.HubError as err:
            if cancelled.is_set() or self.halt.is_set():
                with self.lock:  # undecided: ask again next time
                    if self.verdicts.get(sid) is v:
                        del self.verdicts[sid]
            else:
                self.log.warning("hubd: serve: session %s not served: reading it for the session filter: %s", sid, err)
        except Exception as exc:  # the filter failed: not served
            self.log.warning("hubd: serve: session %s not served: the session filter raised %r", sid, exc)
        finally:
            v.decided.set()
        return v.keep

    def _run_turn(self, t: Turn) -> None:
        e = t.trigger
        sid = t.session_id
        if not self._serves(sid, t.cancelled):
            return
        if self.view is not None and t.view is None:
            view_name = self.view
            try:
                t.view = self._retry(lambda: self.c.view(sid, view_name, self.window), t.cancelled)
            except errors.HubError as err:
                self._stale(e, "view", err)
                return
        try:
            reply = self.h(t)
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
            self._retry(lambda: self._post(sid, msg), t.cancelled)
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

    def _retry(self, f: Callable[[], Any], cancelled: threading.Event) -> Any:
        """Call f until it succeeds, fails for good, or cancelled is set."""
        attempt = 1
        while True:
            try:
                return f()
            except errors.HubError as e:
                if not e.retryable:
                    raise
                if cancelled.wait(_common.backoff_delay(attempt, self.base, self.cap)) or self.halt.is_set():
                    raise
            attempt += 1
