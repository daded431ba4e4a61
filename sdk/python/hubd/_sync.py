"""The sync client's layer over the asyncio core (:mod:`hubd.aio`).

Each :class:`hubd.Client` owns one event loop, run by a thread of its own,
and its asyncio core lives there: a call submits the core's coroutine to
that loop (``asyncio.run_coroutine_threadsafe``) and waits for its result.
What a caller gives as plain functions (serve's handler, invite and
session-filter functions and hooks) runs in threads, never on the loop, so
it may call the client again. Nothing here holds SDK logic: that is the
core's, once.

A wait the caller gives up (Ctrl-C, a ``stop`` event) cancels the
coroutine it waited for; closing the client cancels what still runs on its
loop and ends the thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import (
    TYPE_CHECKING,
    Any,
    AsyncGenerator,
    Awaitable,
    Callable,
    Coroutine,
    Generator,
    Generic,
    List,
    Optional,
    Tuple,
    TypeVar,
)

from . import _calls, _serve, errors
from ._model import MODE_BLOCKING, Turn
from ._pb import hub_pb2 as pb

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Concatenate, ParamSpec

    from .client import Client

    P = ParamSpec("P")

T = TypeVar("T")
R = TypeVar("R")

_POLL = 0.05
"""How often a wait with a ``stop`` event looks at it, in seconds."""


def _quiet_grpc_race(loop: asyncio.AbstractEventLoop, context: Any) -> None:
    """The loop's exception handler. grpcio's asyncio poller (as in Debian
    12's 1.51) wakes every event loop of a process with one byte on a
    shared socket; the loop that reads it hands every event on to its own
    loop, and the others log the BlockingIOError of their empty read. That
    one is dropped here; anything else goes to the default handler."""
    if isinstance(context.get("exception"), BlockingIOError) and "PollerCompletionQueue" in repr(context.get("handle")):
        return
    loop.default_exception_handler(context)


class Loop:
    """An asyncio event loop in a thread of its own, for one sync client."""

    def __init__(self, name: str = "hubd-client") -> None:
        self._loop = asyncio.new_event_loop()
        self._loop.set_exception_handler(_quiet_grpc_race)
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> "concurrent.futures.Future[T]":
        """Start coro on the loop; its future.

        Raises:
            ValueError: the client is closed.
            RuntimeError: called on the loop's own thread, where waiting
                would wait forever.
        """
        with self._lock:
            if not self._closed and threading.current_thread() is not self._thread:
                return asyncio.run_coroutine_threadsafe(coro, self._loop)
        coro.close()
        if self._closed:
            raise ValueError("hubd: the client is closed")
        raise RuntimeError("hubd: a blocking call of a sync client on its own event loop")

    def run(
        self, coro: Coroutine[Any, Any, T], stop: Optional[threading.Event] = None, *, op: str = "", why: str = ""
    ) -> T:
        """Run coro on the loop and return its result. Setting ``stop`` (or
        an exception in this thread, as Ctrl-C's KeyboardInterrupt) cancels
        it: stop raises :class:`hubd.Canceled` (``why``, for ``op``)."""
        fut = self.submit(coro)
        try:
            if stop is None:
                return fut.result()
            while True:
                try:
                    return fut.result(_POLL)
                except concurrent.futures.TimeoutError:
                    if stop.is_set():
                        fut.cancel()
                        raise errors.Canceled(why or "stopped", op=op) from None
        except concurrent.futures.CancelledError:
            raise errors.Canceled(why or "the call was cancelled (the client closed)", op=op) from None
        except BaseException:
            fut.cancel()
            raise

    def call_soon(self, f: Callable[[], Any]) -> None:
        """Call f on the loop, from any thread (nothing once closed)."""
        with self._lock:
            if not self._closed:
                self._loop.call_soon_threadsafe(f)

    def iterate(
        self, agen: AsyncGenerator[T, None], stop: Optional[threading.Event] = None, *, op: str = "", why: str = ""
    ) -> Generator[T, None, None]:
        """The items of an async generator of the core, one blocking step at
        a time (``stop`` as for :meth:`run`); closing this generator closes
        it, once a step given up has ended."""
        steps = _Steps(agen)
        try:
            while True:
                try:
                    item = self.run(steps.next(), stop, op=op, why=why)
                except StopAsyncIteration:
                    return
                yield item
        finally:
            if threading.current_thread() is self._thread:  # collected on the loop
                asyncio.ensure_future(steps.close())
            else:
                try:
                    self.run(steps.close())
                except (ValueError, errors.Canceled):  # closed meanwhile
                    pass

    def close(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run coro (the core's close), cancel what still runs on the loop
        and end its thread. Closing again does nothing."""
        try:
            self.run(coro)
        except ValueError:  # closed already
            return
        finally:
            with self._lock:
                closed, self._closed = self._closed, True
            if not closed:
                done = asyncio.run_coroutine_threadsafe(_cancel_all(), self._loop)
                try:
                    done.result(10)
                finally:
                    self._loop.call_soon_threadsafe(self._loop.stop)
                    self._thread.join(10)
                    if not self._thread.is_alive():
                        self._loop.close()


class _Steps(Generic[T]):
    """The steps of an async generator, one at a time: its closing waits for
    a step being cancelled to end (an async generator cannot be closed
    while it runs). Used on the loop only."""

    def __init__(self, agen: AsyncGenerator[T, None]) -> None:
        self._agen = agen
        self._lock: Optional[asyncio.Lock] = None  # made on the loop

    def _locked(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    async def next(self) -> T:
        async with self._locked():
            return await self._agen.__anext__()

    async def close(self) -> None:
        async with self._locked():
            await self._agen.aclose()


async def _cancel_all() -> None:
    """Cancel every task of the running loop but this one, and wait for
    them."""
    me = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not me]
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def arguments_of(
    f: "Callable[Concatenate[Any, P], None]",
) -> "Callable[[Callable[..., None]], Callable[Concatenate[Any, P], None]]":
    """Gives a facade's ``__init__`` the arguments, and the documentation,
    of its core's (f), for callers and type checkers alike."""

    def decorate(init: Callable[..., None]) -> "Callable[Concatenate[Any, P], None]":
        @functools.wraps(f)
        def call(self: Any, /, *args: "P.args", **kwargs: "P.kwargs") -> None:
            init(self, *args, **kwargs)

        return call

    return decorate


def blocking(f: "Callable[Concatenate[Any, P], Coroutine[Any, Any, T]]") -> "Callable[Concatenate[Any, P], T]":
    """The blocking method of a sync facade (an object with ``_loop``, a
    :class:`Loop`, and ``_core``, the core object) that runs the core's
    coroutine method f there: the same arguments, documentation and
    result."""

    @functools.wraps(f)
    def call(self: Any, /, *args: "P.args", **kwargs: "P.kwargs") -> T:
        loop: Loop = self._loop
        return loop.run(f(self._core, *args, **kwargs), op=f.__name__)

    return call


def blocking_as(
    f: "Callable[Concatenate[Any, P], Coroutine[Any, Any, T]]", then: Callable[[Any, T], R]
) -> "Callable[Concatenate[Any, P], R]":
    """:func:`blocking`, its result made the facade's with then(self,
    result) (a core Task into a sync Task)."""
    g = blocking(f)

    @functools.wraps(f)
    def call(self: Any, /, *args: "P.args", **kwargs: "P.kwargs") -> R:
        return then(self, g(self, *args, **kwargs))

    return call


def iterating(
    f: "Callable[Concatenate[Any, P], AsyncGenerator[T, None]]", op: str
) -> "Callable[Concatenate[Any, P], Generator[T, None, None]]":
    """The blocking method of a facade over a core's async generator method
    f: the same arguments and documentation, its items one blocking step at
    a time (see :meth:`Loop.iterate`)."""

    @functools.wraps(f)
    def call(self: Any, /, *args: "P.args", **kwargs: "P.kwargs") -> Generator[T, None, None]:
        loop: Loop = self._loop
        return loop.iterate(f(self._core, *args, **kwargs), op=op)

    return call


# Delegation.


class Task:
    """The handle of a delegated child session: :class:`hubd.aio.Task`
    (its attributes, ``client`` the :class:`hubd.Client` that delegated)
    with blocking calls; :meth:`hubd.Client.task` rebuilds one from the
    child's id."""

    def __init__(
        self,
        client: "Client",
        id: str,
        parent: str,
        delegation_id: str,
        mode: str = MODE_BLOCKING,
        from_seq: int = 1,
        consume: Optional[Callable[[int], None]] = None,
    ) -> None:
        self.client = client
        self._loop: Loop = client._loop
        self._core = _calls.Task(client._core, id, parent, delegation_id, mode, from_seq, consume)

    @classmethod
    def of(cls, client: "Client", core: _calls.Task) -> "Task":
        """The sync handle of a core task."""
        t = cls.__new__(cls)
        t.client, t._loop, t._core = client, client._loop, core
        return t

    @property
    def id(self) -> str:
        return self._core.id

    @property
    def parent(self) -> str:
        return self._core.parent

    @property
    def delegation_id(self) -> str:
        return self._core.delegation_id

    @property
    def mode(self) -> str:
        return self._core.mode

    def __repr__(self) -> str:
        return f"Task(id={self.id!r}, parent={self.parent!r}, mode={self.mode!r})"

    poll = blocking(_calls.Task.poll)
    message = blocking(_calls.Task.message)  # type: ignore[arg-type]
    message_and_wait = blocking(_calls.Task.message_and_wait)  # type: ignore[arg-type]
    cancel = blocking(_calls.Task.cancel)

    def wait(self, *, timeout: Optional[float] = None, stop: Optional[threading.Event] = None) -> pb.DelegationResult:
        """The task's result once it is posted into the parent (see
        :meth:`hubd.aio.Task.wait`); setting ``stop`` ends the wait
        (:class:`hubd.Canceled`)."""
        return await_all(self, timeout=timeout, stop=stop)[0]


def tasks_of(client: "Client", tasks: List[_calls.Task]) -> List[Task]:
    """The sync handles of core tasks."""
    return [Task.of(client, t) for t in tasks]


def await_all(
    *tasks: Task, timeout: Optional[float] = None, stop: Optional[threading.Event] = None
) -> List[pb.DelegationResult]:
    """The results of every task (of one parent session), in the order they
    closed. Blocking tasks of one delegation release the delegator's turn
    when the last is done; for background tasks it only waits. ``timeout``
    bounds the wait (:class:`hubd.DeadlineExceeded`); setting ``stop`` ends
    it (:class:`hubd.Canceled`)."""
    loop = _loop_of(tasks)
    return loop.run(_calls.await_all(*(t._core for t in tasks), timeout=timeout), stop, op="await", why="stopped")


def await_any(
    *tasks: Task, timeout: Optional[float] = None, stop: Optional[threading.Event] = None
) -> pb.DelegationResult:
    """The first result among the tasks (of one parent session); the others
    go on."""
    loop = _loop_of(tasks)
    return loop.run(_calls.await_any(*(t._core for t in tasks), timeout=timeout), stop, op="await", why="stopped")


def _loop_of(tasks: Tuple[Task, ...]) -> Loop:
    if not tasks:
        raise errors.Malformed("await of no task", op="await")
    return tasks[0]._loop


def on_turn(turn: Turn, f: Callable[[_calls.Turn], Awaitable[T]]) -> T:
    """Run f on the asyncio core's turn of a sync turn (made once, sharing
    its cancelled event and its ties to serve), on the client's loop; the
    turn's cancellation ends the wait (:class:`hubd.Canceled`)."""
    c: "Client" = turn.client
    core = turn._core_turn
    if core is None:
        core = turn._core_turn = _calls.Turn(
            turn.session_id, turn.trigger, turn.view, c._core, turn.cancelled, _consume=turn._consume
        )

    async def run() -> T:
        return await f(core)

    return c._loop.run(run(), turn.cancelled, op="turn", why="the turn was cancelled")


# Serving.


def _in(executor: ThreadPoolExecutor, f: Optional[Callable[[Any], Any]]) -> Optional[Callable[[Any], Awaitable[Any]]]:
    """A plain function of the caller as a coroutine function that runs it
    in executor's threads, in the caller's context (its trace)."""
    if f is None:
        return None
    fn = f

    async def call(arg: Any) -> Any:
        ctx = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(executor, ctx.run, fn, arg)

    return call


def serve(
    client: "Client",
    handler: Any,
    *,
    stop: Optional[threading.Event],
    handle_signals: bool,
    max_workers: int,
    **options: Any,
) -> None:
    """Run the core's serve for a sync client (see :meth:`hubd.Client.serve`):
    the handler, invite and session-filter functions in a pool of
    max_workers threads, the hooks in a thread of their own (in order:
    serve reads on once a hook returns), a sync :class:`hubd.Turn` per turn;
    ``stop`` and, in the main thread, SIGINT and SIGTERM stop it; it
    returns once every handler has."""
    if handler is None:
        raise ValueError("hubd: serve needs a handler")
    loop = client._loop
    pool = ThreadPoolExecutor(max_workers=max(1, max_workers), thread_name_prefix="hubd-serve")
    hooks = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hubd-serve-hooks")
    halt: asyncio.Event = loop.run(_event())
    o = _serve.Options(
        invites=_in(pool, options.pop("invites")),
        session_filter=_in(pool, options.pop("session_filter")),
        observer=_in(hooks, options.pop("observer")),
        on_session_end=_in(hooks, options.pop("on_session_end")),
        on_reconnect=_in(hooks, options.pop("on_reconnect")),
        stop=halt,
        handle_signals=False,
        cancel_turns=False,
        **options,
    )

    def turn(sid: str, trigger: pb.Envelope, view: Optional[pb.View], consume: Callable[[int], None]) -> Turn:
        return Turn(sid, trigger, view, client, _consume=consume)

    run_handler = _in(pool, handler)
    assert run_handler is not None
    h: Callable[[Any], Awaitable[Any]] = run_handler

    async def run() -> None:  # made on the loop (Python 3.9 binds asyncio's Events to one)
        await _serve.Serving(client._core, h, turn, o).run()

    restore = _install_signals(handle_signals, lambda: loop.call_soon(halt.set))
    try:
        fut = loop.submit(run())
        _wait(fut, stop, lambda: loop.call_soon(halt.set))
    finally:
        restore()
        pool.shutdown(wait=True)
        hooks.shutdown(wait=True)


async def _event() -> asyncio.Event:
    return asyncio.Event()  # made on the loop (Python 3.9 binds an Event to one)


def _wait(fut: "concurrent.futures.Future[None]", stop: Optional[threading.Event], halt: Callable[[], None]) -> None:
    """Wait for serve, halting it once stop is set; an exception in this
    thread (KeyboardInterrupt) halts it too, and is raised once it
    returned."""
    interrupted: Optional[BaseException] = None
    while True:
        try:
            fut.result(None if stop is None or interrupted is not None else 0.1)
            break
        except concurrent.futures.TimeoutError:
            if stop is not None and stop.is_set():
                halt()
        except concurrent.futures.CancelledError:
            raise errors.Canceled("the client was closed", op="serve") from None
        except (KeyboardInterrupt, SystemExit) as e:
            if interrupted is not None:
                fut.cancel()
                raise
            interrupted = e
            halt()
    if interrupted is not None:
        raise interrupted


def _install_signals(handle: bool, halt: Callable[[], None]) -> Callable[[], None]:
    """In the main thread, SIGINT and SIGTERM halt serve; returns what puts
    the previous handlers back."""
    if not handle or threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous: List[Tuple[int, Any]] = []

    def on_signal(signum: int, frame: Any) -> None:
        halt()

    for sig in (signal.SIGINT, signal.SIGTERM):
        previous.append((sig, signal.signal(sig, on_signal)))

    def restore() -> None:
        for sig, h in previous:
            signal.signal(sig, h)

    return restore

