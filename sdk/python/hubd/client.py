"""The sync client: :class:`Client` connects to a hub as one agent."""

from __future__ import annotations

import logging
import threading
import time
from typing import (
    Any,
    Callable,
    Dict,
    Generator,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

import grpc

from . import _calls, _common, _stream, _trace, errors
from ._calls import Task
from ._model import (
    MODE_BACKGROUND,
    MODE_BLOCKING,
    TYPE_WORKFLOW,
    VIEW_DEFAULT,
    TLS,
    Ack,
    Handler,
    InviteFunc,
    Packet,
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
from ._serve import Serving
from .graph import Graph

__all__ = ["Client", "Stream", "connect"]

_T = TypeVar("_T")

# The standard gRPC health check, which the hub serves without
# authentication: connecting waits until it answers.
_HEALTH_CHECK = "/grpc.health.v1.Health/Check"


class Stream(Iterator[pb.Delivery]):
    """A stream of deliveries from :meth:`Client.subscribe` or
    :meth:`Client.watch`. Iterate over it; it ends when the hub ends it
    cleanly or when you :meth:`close` it, and raises a :class:`HubError` when
    it is cut off (:class:`SlowSubscriber`, :class:`Unavailable`:
    resubscribe from your cursors). Use it as a context manager to close it.
    """

    def __init__(self, op: str, call: Any) -> None:
        self._op = op
        self._call = call
        self._closed = False

    def __iter__(self) -> "Stream":
        return self

    def __next__(self) -> pb.Delivery:
        try:
            return next(self._call)  # type: ignore[no-any-return]
        except grpc.RpcError as e:
            if self._closed:
                raise StopIteration from None
            raise errors.from_rpc_error(self._op, e) from e

    def recv(self) -> Optional[pb.Delivery]:
        """The next delivery, waiting for it; ``None`` when the stream ended
        cleanly."""
        return next(self, None)

    def close(self) -> None:
        """End the stream (a thread blocked reading it stops)."""
        self._closed = True
        self._call.cancel()

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Client:
    """A connection to a hub as one agent. Safe for use from several
    threads. Close it when done (or use it as a context manager).

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

        def dial(addr: str) -> grpc.Channel:
            if tls is not None:
                return grpc.secure_channel(addr, _common.credentials(tls), options=options)
            return grpc.insecure_channel(addr, options=options)

        self._channel = dial(target)
        self._target = target
        self._name = name
        self._md = _common.metadata(name, token)
        self._raw = pb_grpc.HubStub(self._channel)  # type: ignore[no-untyped-call]
        self.log = logger or _common.LOG
        self._stub: Any = self._raw
        self._attempts = max(1, send_attempts)
        self._budget = retry_budget
        # No agent stream: asked for, or a hub without it.
        self._unary = transport == _stream.TRANSPORT_UNARY
        self._stream_lock = threading.Lock()
        self._stream: Optional[_stream.AgentStream] = None
        if connect_timeout is not None:
            try:
                self._probe(connect_timeout)
            except BaseException:
                self._channel.close()
                raise

    @property
    def name(self) -> str:
        """The agent's name as given (empty when a token alone names the
        agent)."""
        return self._name

    @property
    def target(self) -> str:
        """The hub's address as given."""
        return self._target

    @property
    def raw(self) -> pb_grpc.HubStub:
        """The generated gRPC stub on the same channel, for calls the SDK
        does not wrap; pass :attr:`metadata` with each call."""
        return self._raw

    @property
    def metadata(self) -> Tuple[Tuple[str, str], ...]:
        """The call metadata that names the agent."""
        return self._md

    @property
    def channel(self) -> grpc.Channel:
        """The gRPC channel."""
        return self._channel

    @property
    def transport(self) -> str:
        """How the client sends now: ``"stream"``, or ``"unary"`` (asked
        for, or against a hub without the agent stream)."""
        with self._stream_lock:
            return _stream.TRANSPORT_UNARY if self._unary else _stream.TRANSPORT_STREAM

    def close(self) -> None:
        """Close the connection; streams and calls in flight fail."""
        with self._stream_lock:
            st, self._stream = self._stream, None
        if st is not None:
            st.close()
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"hubd.Client({self._target!r}, name={self._name!r})"

    # Calls.

    def _call(
        self,
        op: str,
        method: Callable[..., _T],
        req: Any,
        timeout: Optional[float] = None,
        wait_for_ready: bool = False,
        trace: Optional[_trace.TraceContext] = None,
    ) -> _T:
        """Make a unary call with the agent's metadata and the trace
        context (the caller's unless given)."""
        md = _trace.metadata(self._md, trace)
        try:
            return method(req, metadata=md, timeout=timeout, wait_for_ready=wait_for_ready)
        except grpc.RpcError as e:
            raise errors.from_rpc_error(op, e) from e

    def _probe(self, timeout: float) -> None:
        """Wait until the hub answers a health check (which needs no
        credentials), at most timeout seconds."""
        check = self._channel.unary_unary(_HEALTH_CHECK)
        try:
            check(b"", timeout=timeout, wait_for_ready=True)  # an empty HealthCheckRequest
        except grpc.RpcError as e:
            code = e.code()  # type: ignore[attr-defined]
            if code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE):
                raise errors.Unavailable(
                    f"no connection to {self._target} within {timeout:g}s", reason="", op="connect"
                ) from None
            # Any other answer (no health service, ...) comes from a server.

    def _no_stream(self, why: str) -> None:
        """The hub has no agent stream: send unary from now on."""
        with self._stream_lock:
            if self._unary:
                return
            self._unary = True
        self.log.info("hubd: the hub at %s has no agent stream: %s", self._target, why)

    def _main_stream(self, timeout: Optional[float], wait: bool) -> Optional[_stream.AgentStream]:
        """The client's agent stream for its sends and opens, opened if
        needed (its opening bounded by timeout); None when the client sends
        unary."""
        with self._stream_lock:
            if self._unary:
                return None
            st = self._stream
            if st is not None and not st.done.is_set():
                return st
            st = _stream.AgentStream(self._raw, self._md, self.log, wait_for_ready=wait)
            try:
                st.wait_ready(timeout)
            except _stream.NoStream:
                self._unary = True
                self.log.info("hubd: the hub at %s has no agent stream: sending with unary calls", self._target)
                return None
            self._stream = st
            return st

    def _send_once(self, session_id: str, env: pb.Envelope, timeout: Optional[float], wait: bool) -> Ack:
        """Send env once: over the client's stream, or with a Send call."""
        if _stream.fits(env):
            try:
                st = self._main_stream(timeout, wait)
            except errors.HubError as e:
                e.op = "send"  # the send failed, opening its stream
                raise
            if st is not None:
                return st.send(session_id, env, timeout)
        req = pb.SendRequest(session_id=session_id, envelope=env)
        return Ack.from_proto(self._call(
                "send", self._stub.Send, req, timeout, wait_for_ready=wait, trace=_trace.of_envelope(env.traceparent)
            ), env.client_msg_id)

    def _send(
        self,
        session_id: str,
        env: pb.Envelope,
        attempts: int,
        timeout: Optional[float],
        halt: Optional[threading.Event] = None,
    ) -> Ack:
        deadline = time.monotonic() + max(self._budget, 0.0)
        attempt, wait, last = 1, False, None
        while True:
            call_timeout = timeout
            if wait:  # a retry waits for the connection, within the budget
                left = deadline - time.monotonic()
                call_timeout = left if timeout is None else min(timeout, left)
            try:
                return self._send_once(session_id, env, call_timeout, wait)
            except errors.DeadlineExceeded:
                if wait and last is not None and time.monotonic() >= deadline:
                    raise last from None  # the budget ran out waiting for the hub
                raise
            except errors.Unavailable as e:
                last = e
                if attempt >= attempts or time.monotonic() >= deadline:
                    raise
                self.log.info("hubd: send to %s: %s; retrying (%d/%d)", session_id, e, attempt, attempts)
                delay = _common.backoff_delay(attempt, 0.05, 1.0)
                if halt is not None:
                    if halt.wait(delay):
                        raise
                else:
                    time.sleep(delay)
                attempt, wait = attempt + 1, True

    # Sessions.

    def open(
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
        return self._open(req, timeout)

    def _open(self, req: pb.OpenRequest, timeout: Optional[float]) -> Session:
        """Open once: over the client's stream when the hub takes opens
        there, else (or when the stream would not open: the call then says
        why) with an Open call."""
        if _stream.fits(req):
            try:
                st = self._main_stream(timeout, False)
            except errors.HubError:
                st = None
            if st is not None and st.opens:
                return st.open(req, timeout)
        resp = self._call("open", self._stub.Open, req, timeout)
        return Session(resp.session, resp.existing)

    def open_workflow(self, graph: Graph, *participants: str, timeout: Optional[float] = None) -> Session:
        """Open a workflow session following ``graph`` with the caller as
        creator and the named participants invited, in that order; each must
        acknowledge (an agent running :meth:`serve` does so by default)."""
        return self.open(TYPE_WORKFLOW, graph=graph, participants=invited(*participants), timeout=timeout)

    def get_session(self, session_id: str, *, timeout: Optional[float] = None) -> Session:
        """A session's metadata and current state. Only its participants (or
        an operator) may read it."""
        return Session(
            self._call("get session", self._stub.GetSession, pb.GetSessionRequest(session_id=session_id), timeout)
        )

    def list_sessions(
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
        resp = self._call("list sessions", self._stub.ListSessions, req, timeout)
        return SessionPage([Session(s) for s in resp.sessions], resp.next_page_token)

    def ack_invite(self, session_id: str, *, timeout: Optional[float] = None) -> Ack:
        """Accept the caller's invite to a session; the last ack opens it."""
        resp = self._call("ack invite", self._stub.AckInvite, pb.InviteRequest(session_id=session_id), timeout)
        return Ack.from_proto(resp)

    def reject_invite(self, session_id: str, reason: str = "", *, timeout: Optional[float] = None) -> Ack:
        """Decline the caller's invite; the session closes with
        ``invite_rejected``. ``reason`` (``""``: the hub's ``declined``) is
        logged."""
        req = pb.InviteRequest(session_id=session_id, reason=reason)
        return Ack.from_proto(self._call("reject invite", self._stub.RejectInvite, req, timeout))

    def close_session(self, session_id: str, reason: str = "", *, timeout: Optional[float] = None) -> Ack:
        """End a session with ``reason`` (``""`` is ``explicit_close``). Only
        its creator (or an operator) may close it."""
        req = pb.CloseRequest(session_id=session_id, reason=reason)
        return Ack.from_proto(self._call("close session", self._stub.Close, req, timeout))

    # Sends. Every send takes these keyword arguments:
    #   client_msg_id: the idempotency key (generated when not given): a
    #     send repeated with it is answered with the original's seq
    #     (Ack.duplicate) and writes nothing;
    #   causation_id: the envelope this one answers;
    #   audience: deliver to these participants only (empty: log only);
    #   traceparent: a W3C traceparent carried with the envelope;
    #   timeout: seconds for each attempt.

    def send_text(
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
        return self._send(session_id, env, self._attempts, timeout)

    def send_packet(
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
        return self._send(session_id, env, self._attempts, timeout)

    def set_context(
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
        return self.update_context(
            session_id,
            set=values,
            client_msg_id=client_msg_id,
            causation_id=causation_id,
            audience=audience,
            traceparent=traceparent,
            timeout=timeout,
        )

    def update_context(
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
        return self._send(session_id, env, self._attempts, timeout)

    def send_event(
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
        return self._send(session_id, env, self._attempts, timeout)

    def send(
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
        also a send in flight on an agent stream that broke) is retried up to ``send_attempts`` times within ``retry_budget``
        seconds, each retry waiting for the connection to be ready, with the
        same client message id, so it is written at most once."""
        env = _common.envelope(_common.copy_envelope(envelope), client_msg_id, causation_id, audience, traceparent)
        return self._send(session_id, env, self._attempts, timeout)

    # Reads.

    def read_log(
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
            resp = self._call("read log", self._stub.ReadLog, req, timeout)
            out.extend(resp.envelopes)
            if resp.next_seq == 0 or len(out) >= limit or resp.next_seq <= from_seq:
                return out
            from_seq = resp.next_seq

    def pending_turns(self, *, timeout: Optional[float] = None) -> List[pb.Delivery]:
        """For each open session where it is the caller's turn, the delivery
        of the envelope that began the turn (``your_turn`` set)."""
        return list(self._call("pending turns", self._stub.PendingTurns, pb.PendingTurnsRequest(), timeout).turns)

    def view(
        self, session_id: str, name: str = VIEW_DEFAULT, window: int = 0, *, timeout: Optional[float] = None
    ) -> pb.View:
        """The caller's view of a session: ``name`` is ``"default"`` (the
        session type's), ``"full"``, ``"windowed"`` (the last ``window`` items,
        default 10, older ones counted per speaker) or ``"last"``."""
        req = pb.GetViewRequest(session_id=session_id, name=name, window=window)
        view: pb.View = self._call("view", self._stub.GetView, req, timeout)
        return view

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

    def watch(self, session_id: str, from_seq: int = 0, *, timeout: Optional[float] = None) -> Stream:
        """The envelopes of one session from ``from_seq`` (0 or 1: all), live,
        for dashboards, transcripts and audits: for a participant every
        envelope it may read, for an operator all of them."""
        req = pb.WatchRequest(session_id=session_id, from_seq=from_seq)
        return Stream("watch", self._stub.Watch(req, metadata=self._md, timeout=timeout))

    def follow(
        self,
        session_id: str,
        from_seq: int = 1,
        *,
        timeout: Optional[float] = None,
        stop: Optional[threading.Event] = None,
    ) -> Generator[pb.Envelope, None, None]:
        """Every envelope of a session from ``from_seq``, in order and each
        once, until the session ends: the last one yielded is the envelope
        that ended it (``session_closed`` or ``session_expired``). A watch that
        breaks (a restarting hub, a slow reader cut off) is resumed after the
        last envelope seen. ``timeout`` bounds the whole follow (raises
        :class:`hubd.DeadlineExceeded`); setting ``stop`` ends it early
        (raises :class:`hubd.Canceled`)::

            for e in client.follow(session_id):
                if hubd.is_turn(e):
                    print(hubd.sender(e), hubd.text_of(e))
            print("closed:", hubd.close_reason(e))
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
            unwatch = _cancel_on(stop, call)
            try:
                for d in call:
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
                if stop is not None and stop.is_set():
                    raise errors.Canceled("the follow was stopped", op="watch") from None
                err = errors.from_rpc_error("watch", rpc_err)
                if not err.retryable:
                    raise err from rpc_err
            finally:
                unwatch()
                call.cancel()
            attempt += 1
            self.log.info("hubd: follow %s: %s; watching again from seq %d", session_id, err, nxt)
            delay = _common.backoff_delay(attempt, 0.05, 2.0)
            if stop is not None:
                if stop.wait(delay):
                    raise errors.Canceled("the follow was stopped", op="watch")
            else:
                time.sleep(delay)

    # Delegation, questions and the call tree (docs/DELEGATION.md).

    def _retry_unavailable(self, op: str, method: Callable[..., _T], req: Any, timeout: Optional[float]) -> _T:
        """Call an idempotent RPC (one with a client message id), retrying
        while the hub is unavailable, up to send_attempts."""
        attempt = 1
        while True:
            try:
                return self._call(op, method, req, timeout)
            except errors.Unavailable as e:
                if attempt >= self._attempts:
                    raise
                self.log.info("hubd: %s: %s; retrying (%d/%d)", op, e, attempt, self._attempts)
                time.sleep(_common.backoff_delay(attempt, 0.05, 1.0))
                attempt += 1

    def delegate(
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
        resp = self._retry_unavailable("delegate", self._stub.Delegate, req, timeout)
        return [
            Task(
                self,
                ch.meta.session_id,
                session_id,
                ch.meta.delegation_id,
                mode or MODE_BLOCKING,
                resp.delegation.seq,
            )
            for ch in resp.children
        ]

    def task(self, session_id: str, *, timeout: Optional[float] = None) -> Task:
        """The :class:`hubd.Task` of a delegated child session (the caller
        must take part in it, as its delegator does), e.g. after a restart.

        Raises:
            hubd.Malformed: the session was not delegated.
        """
        m = self.get_session(session_id, timeout=timeout).meta
        if not m.parent_session_id or not m.delegation_id:
            raise errors.Malformed(f"session {session_id} was not delegated", op="task")
        return Task(self, session_id, m.parent_session_id, m.delegation_id, MODE_BACKGROUND, 1)

    def answer_question(
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
        resp = self._retry_unavailable("answer", self._stub.Answer, req, timeout)
        return Ack.from_proto(resp, req.client_msg_id)

    def list_questions(
        self, answerer: str = "", root: str = "", *, timeout: Optional[float] = None
    ) -> List[pb.PendingQuestion]:
        """The pending questions the caller must answer (an operator:
        everyone's, or ``answerer``'s), oldest first; with ``root``, only
        those of that session's tree. Each has ``session_id``, ``asker`` and
        the question ``envelope``."""
        req = pb.ListQuestionsRequest(answerer=answerer, root_session_id=root)
        return list(self._call("list questions", self._stub.ListQuestions, req, timeout).questions)

    def tree(self, session_id: str, *, timeout: Optional[float] = None) -> pb.TreeNode:
        """A session's call tree from it down: per node its session (state,
        close reason), turns, usage, duration and children, oldest first."""
        node: pb.TreeNode = self._call("tree", self._stub.GetTree, pb.GetTreeRequest(session_id=session_id), timeout)
        return node

    def replay(self, session_id: str, *, timeout: Optional[float] = None) -> pb.ReplayResponse:
        """Re-fold a session from its log with no agent called and say
        whether the result equals the live state (``equal``; operators)."""
        resp: pb.ReplayResponse = self._call(
            "replay", self._stub.Replay, pb.ReplayRequest(session_id=session_id), timeout
        )
        return resp

    def follow_tree(
        self,
        root_id: str,
        *,
        verbose: bool = False,
        from_seq: int = 1,
        timeout: Optional[float] = None,
    ) -> Iterator[pb.Envelope]:
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
                for d in call:
                    e = d.envelope
                    if e.seq < nxt.get(e.session_id, 0):
                        continue
                    nxt[e.session_id] = e.seq + 1
                    attempt = 0
                    yield e
                    if e.session_id == root_id and ends(e):
                        end = e
                if end is not None:
                    return  # the hub ends a tree watch after the root's end
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
            time.sleep(_common.backoff_delay(attempt, 0.05, 2.0))

    # Serving.

    def serve(
        self,
        handler: Handler,
        *,
        invites: Optional[InviteFunc] = None,
        session_filter: Optional[Callable[[Session], bool]] = None,
        view: Optional[str] = VIEW_DEFAULT,
        window: int = 0,
        backoff: Tuple[float, float] = (0.1, 5.0),
        observer: Optional[Callable[[pb.Delivery], None]] = None,
        on_session_end: Optional[Callable[[pb.Envelope], None]] = None,
        on_reconnect: Optional[Callable[[errors.HubError], None]] = None,
        stop: Optional[threading.Event] = None,
        handle_signals: bool = True,
        max_workers: int = 16,
    ) -> None:
        """Run the agent until stopped.

        Subscribes to the agent's deliveries (on an agent stream of its
        own, which also carries the replies; with ``transport="unary"``, in
        a cluster or against a hub without it, a ``Subscribe`` stream and a
        ``Send`` call per reply), answers invites (accepting
        them unless ``invites`` decides otherwise) and calls ``handler`` for
        each of the agent's turns with a :class:`hubd.Turn` (the session, the
        triggering envelope, the agent's view), then posts its reply: a
        ``str`` (text), a :class:`hubd.Packet`, or ``None`` (nothing: the turn
        stays the agent's). ``handler`` is called once per turn, one turn at a
        time per session, in a pool of ``max_workers`` threads so that turns
        of different sessions run concurrently; a turn superseded by a newer
        one of the same session before the handler started on it is skipped.
        An exception in the handler is logged and posts nothing.

        A reply is posted with the client message id
        ``turn/<session>/<trigger seq>`` (:func:`hubd.turn_msg_id`), so a post
        retried after a broken connection is written once. When the stream
        breaks (the hub restarts or drains, the connection drops, the hub
        cuts the agent off as a slow subscriber), serve resubscribes with
        jittered exponential backoff (``backoff`` = (base, max) seconds) from
        the cursors it keeps (the last seq seen per session), so nothing is
        missed or seen twice, and the hub offers its pending turns again.
        Each turn notice carries the agent's view. Without ``observer`` the
        stream is terse (``subscribe(terse=True)``): the hub sends the agent
        its turns, the invites naming it, questions and the ends of its
        sessions, not every envelope of its sessions. A reply the hub
        refuses because its turn has passed (OUT_OF_TURN, SESSION_CLOSED,
        SESSION_NOT_OPEN) is logged and dropped.

        Args:
            handler: called with each turn.
            invites: decides invites: returns ``None``/``True`` to accept,
                ``False`` or a reason string to reject.
            session_filter: serves only the sessions it returns ``True``
                for. serve reads a session the first time it sees it (an
                invite, a turn; one ``get_session``, retried while the hub
                is unavailable) and calls it with the :class:`hubd.Session`,
                from a worker thread; the answer holds until the session
                ends. Of a session it refuses, serve answers no invite (it
                stays pending for another client of the agent's name, or
                until it times out) and takes no turn; ``observer`` and
                ``on_session_end`` still see what the stream carries of it.
                A session serve cannot read, or for which the filter
                raises, is not served (logged). Every client of an agent's
                name is offered the sessions the name is invited to: keep
                yours by their labels (``lambda s: s.labels.get("run") ==
                run``), set by whoever opens them.
            view: the view given to the handler (``"default"``, ``"full"``,
                ``"windowed"``, ``"last"``), carried by the turn notice
                itself (a ``GetView`` call only when the hub could not
                build it); ``None`` gives none.
            window: for ``"windowed"``, how many recent items.
            backoff: the reconnect backoff, (base, max) in seconds.
            observer: called with every delivery of the agent's stream, in
                order, before serve acts on it (on the reader thread: while
                it blocks, nothing is read, over the agent stream the
                acknowledgements of the replies neither). With it, the
                stream carries every envelope addressed to the agent;
                without it, only what serve acts on.
            on_session_end: called with the envelope that ended each of the
                agent's sessions (``session_closed`` or ``session_expired``)
                when the stream delivers it, before serve cancels that
                session's running turn; on the reader thread, as
                ``observer``. It keeps the stream terse: an agent that opens
                sessions and waits for their ends needs no observer.
            on_reconnect: called with the error that broke the stream each
                time serve resubscribes.
            stop: serve returns once this event is set.
            handle_signals: when serve runs in the main thread, SIGINT and
                SIGTERM stop it (the previous handlers are restored after).
            max_workers: threads running handlers and invite answers.

        Returns when stopped (by ``stop`` or a signal), after every running
        handler has returned.

        Raises:
            hubd.HubError: an error reconnecting cannot cure
                (:class:`hubd.Unauthenticated`, ...).
        """
        Serving(
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
            max_workers=max_workers,
        ).run()


def _cancel_on(stop: Optional[threading.Event], call: Any) -> Callable[[], None]:
    """Cancel a gRPC call once stop is set; returns what ends the
    watching."""
    if stop is None:
        return lambda: None
    done, ev = threading.Event(), stop

    def watch() -> None:
        while not done.is_set():
            if ev.wait(0.05):
                call.cancel()
                return

    threading.Thread(target=watch, name="hubd-follow-stop", daemon=True).start()
    return done.set


def connect(target: str = "127.0.0.1:7420", **kwargs: Any) -> Client:
    """Connect to the hub at ``target``: ``hubd.connect(addr, name="me")`` is
    ``hubd.Client(addr, name="me")``."""
    return Client(target, **kwargs)
