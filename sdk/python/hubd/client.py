"""The sync client: :class:`Client` connects to a hub as one agent.

It is a thin layer over the asyncio client (:mod:`hubd.aio`), the SDK's
one core: each client runs that core on an event loop in a thread of its
own, and each call here is the core's coroutine run there, so the two
clients behave alike (hubd._sync).
"""

from __future__ import annotations

import functools
import threading
from typing import TYPE_CHECKING, Any, Callable, Generator, Iterator, Optional, Tuple

import grpc

from . import _common, _sync, aio, errors
from ._model import VIEW_DEFAULT, Handler, InviteFunc, Session
from ._pb import hub_pb2 as pb
from ._pb import hub_service_pb2_grpc as pb_grpc
from ._sync import Task, blocking, blocking_as

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Concatenate, ParamSpec

    P = ParamSpec("P")

__all__ = ["Client", "Stream", "connect"]


class Stream(Iterator[pb.Delivery]):
    """A stream of deliveries from :meth:`Client.subscribe` or
    :meth:`Client.watch`. Iterate over it; it ends when the hub ends it
    cleanly or when you :meth:`close` it, and raises a :class:`HubError` when
    it is cut off (:class:`SlowSubscriber`, :class:`Unavailable`:
    resubscribe from your cursors). Use it as a context manager to close it.
    ``call`` is what it reads: a gRPC streaming call (``raw``'s), or the
    client's own.
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


class _Deliveries(Iterator[pb.Delivery]):
    """A core stream (hubd.aio.Stream) read one blocking step at a time."""

    def __init__(self, loop: _sync.Loop, stream: aio.Stream, op: str) -> None:
        self._loop = loop
        self._stream = stream
        self._op = op

    def __next__(self) -> pb.Delivery:
        d = self._loop.run(self._stream.recv(), op=self._op)
        if d is None:
            raise StopIteration
        return d

    def cancel(self) -> None:
        self._loop.call_soon(self._stream.close)

    def __del__(self) -> None:  # an abandoned stream's call ends on its loop
        self.cancel()


def streaming(f: "Callable[Concatenate[Any, P], aio.Stream]", op: str) -> "Callable[Concatenate[Any, P], Stream]":
    """The sync client's method over a core's stream-opening method f: the
    same arguments and documentation, a :class:`Stream` read one blocking
    step at a time."""

    @functools.wraps(f)
    def call(self: Any, /, *args: "P.args", **kwargs: "P.kwargs") -> Stream:
        async def open() -> aio.Stream:  # on the loop: its call belongs to it
            return f(self._core, *args, **kwargs)

        loop: _sync.Loop = self._loop
        return Stream(op, _Deliveries(loop, loop.run(open()), op))

    return call


class Client:
    """A connection to a hub as one agent, with blocking calls. Safe for
    use from several threads. Close it when done (or use it as a context
    manager).

    The arguments, and every call, are those of :class:`hubd.aio.Client`
    (described there): this client runs that one on an event loop in a
    thread of its own, and connects in its constructor (within
    ``connect_timeout`` seconds; ``None`` connects lazily). What serve is
    given as functions runs in threads, never on that loop, so a handler
    may call the client.

    Raises:
        ValueError, hubd.Unavailable: as :class:`hubd.aio.Client` and its
            :meth:`~hubd.aio.Client.connect`.
    """

    @_sync.arguments_of(aio.Client.__init__)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._loop = _sync.Loop()
        self._sync_channel: Optional[grpc.Channel] = None
        self._channel_lock = threading.Lock()

        async def core() -> aio.Client:
            return aio.Client(*args, **kwargs)

        try:
            self._core = self._loop.run(core())
        except BaseException:
            self._loop.close(_nothing())
            raise
        self.log = self._core.log
        if self._core._connect_timeout is not None:
            try:
                self._loop.run(self._core.connect())
            except BaseException:
                self.close()
                raise

    @property
    def name(self) -> str:
        """The agent's name as given (empty when a token alone names the
        agent)."""
        return self._core.name

    @property
    def target(self) -> str:
        """The hub's address as given."""
        return self._core.target

    @property
    def raw(self) -> pb_grpc.HubStub:
        """The generated gRPC stub (blocking calls) on a channel of the
        client's own settings, dialled on first use, for calls the SDK does
        not wrap; pass :attr:`metadata` with each call."""
        return pb_grpc.HubStub(self.channel)  # type: ignore[no-untyped-call]

    @property
    def metadata(self) -> Tuple[Tuple[str, str], ...]:
        """The call metadata that names the agent."""
        return self._core.metadata

    @property
    def channel(self) -> grpc.Channel:
        """A gRPC channel (blocking calls) to the hub with the client's
        settings, dialled on first use and closed with the client."""
        with self._channel_lock:
            if self._sync_channel is None:
                c = self._core
                if c._tls is not None:
                    creds = _common.credentials(c._tls)
                    self._sync_channel = grpc.secure_channel(c.target, creds, options=c._options)
                else:
                    self._sync_channel = grpc.insecure_channel(c.target, options=c._options)
            return self._sync_channel

    @property
    def transport(self) -> str:
        """How the client sends now: ``"stream"``, or ``"unary"`` (asked
        for, or against a hub without the agent stream)."""
        return self._core.transport

    def close(self) -> None:
        """Close the connection; streams and calls in flight fail."""
        self._loop.close(self._core.close())
        if self._sync_channel is not None:
            self._sync_channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"hubd.Client({self.target!r}, name={self.name!r})"

    # The calls: those of hubd.aio.Client, run on the client's loop.

    open = blocking(aio.Client.open)
    open_workflow = blocking(aio.Client.open_workflow)
    get_session = blocking(aio.Client.get_session)
    list_sessions = blocking(aio.Client.list_sessions)
    ack_invite = blocking(aio.Client.ack_invite)
    reject_invite = blocking(aio.Client.reject_invite)
    close_session = blocking(aio.Client.close_session)
    fork = blocking(aio.Client.fork)
    steer = blocking(aio.Client.steer)
    send_text = blocking(aio.Client.send_text)
    send_packet = blocking(aio.Client.send_packet)
    set_context = blocking(aio.Client.set_context)
    update_context = blocking(aio.Client.update_context)
    send_event = blocking(aio.Client.send_event)
    send = blocking(aio.Client.send)
    send_delta = blocking(aio.Client.send_delta)
    read_log = blocking(aio.Client.read_log)
    pending_turns = blocking(aio.Client.pending_turns)
    view = blocking(aio.Client.view)
    delegate = blocking_as(aio.Client.delegate, lambda c, tasks: _sync.tasks_of(c, tasks))
    task = blocking_as(aio.Client.task, lambda c, t: Task.of(c, t))
    answer_question = blocking(aio.Client.answer_question)
    list_questions = blocking(aio.Client.list_questions)
    tree = blocking(aio.Client.tree)
    replay = blocking(aio.Client.replay)
    purge = blocking(aio.Client.purge)
    erase = blocking(aio.Client.erase)
    import_sessions = blocking(aio.Client.import_sessions)

    # Streams.

    subscribe = streaming(aio.Client.subscribe, "subscribe")
    watch = streaming(aio.Client.watch, "watch")

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
        agen = self._core.follow(session_id, from_seq, timeout=timeout)
        return self._loop.iterate(agen, stop, op="watch", why="the follow was stopped")

    follow_tree = _sync.iterating(aio.Client.follow_tree, "watch")

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
                order, before serve acts on it (in serve's hook thread:
                while it blocks, nothing is read, over the agent stream the
                acknowledgements of the replies neither). With it, the
                stream carries every envelope addressed to the agent;
                without it, only what serve acts on.
            on_session_end: called with the envelope that ended each of the
                agent's sessions (``session_closed`` or ``session_expired``)
                when the stream delivers it, before serve cancels that
                session's running turn; in the hook thread, as
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
        _sync.serve(
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
        )


async def _nothing() -> None:
    pass


def connect(target: str = "127.0.0.1:7420", **kwargs: Any) -> Client:
    """Connect to the hub at ``target``: ``hubd.connect(addr, name="me")`` is
    ``hubd.Client(addr, name="me")``."""
    return Client(target, **kwargs)
