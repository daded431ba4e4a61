"""The sync client is the asyncio core run on an event loop of its own
(hubd._sync): a blocking call given up (a stop event, Ctrl-C) cancels what
it waited for and leaves the client working; closing the client ends the
waits of its other threads and its loop's thread; serve's functions run in
threads, so they may call the client."""

from __future__ import annotations

import asyncio
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from typing import Callable, List

import pytest

import hubd

from .conftest import SDK, Hub, Names, Serving, transcript

Connect = Callable[..., hubd.Client]


def conversation(alice: hubd.Client, other: str) -> hubd.Session:
    return alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(other))


def test_a_stopped_follow_leaves_the_client_working(connect: Connect, names: Names) -> None:
    alice = connect(names("alice"))
    s = conversation(alice, names("bob"))
    stop = threading.Event()
    got: "queue.Queue[BaseException]" = queue.Queue()

    def follow() -> None:
        try:
            for _ in alice.follow(s.id, stop=stop):
                pass
        except BaseException as e:  # noqa: BLE001 - checked below
            got.put(e)

    th = threading.Thread(target=follow)
    th.start()
    alice.send_text(s.id, "one")  # the follow is under way: it ends with the session only
    stop.set()
    err = got.get(timeout=10)
    th.join(10)
    assert isinstance(err, hubd.Canceled) and err.op == "watch", repr(err)
    assert alice.send_text(s.id, "two").seq > 0
    assert [hubd.text_of(e) for e in alice.read_log(s.id) if hubd.is_turn(e)] == ["one", "two"]


def test_closing_ends_the_waits_of_other_threads(hub: Hub, names: Names) -> None:
    alice = hubd.Client(hub.addr, name=names("alice"))
    s = conversation(alice, names("bob"))
    w = alice.watch(s.id, from_seq=3)  # after the invite and the opening: nothing yet
    got: "queue.Queue[object]" = queue.Queue()

    def wait(f: Callable[[], object]) -> threading.Thread:
        def run() -> None:
            try:
                got.put(f())
            except BaseException as e:  # noqa: BLE001 - checked below
                got.put(e)

        th = threading.Thread(target=run)
        th.start()
        return th

    before = tasks(alice)
    threads = [wait(lambda: list(w)), wait(lambda: list(alice.follow(s.id, from_seq=3)))]
    deadline = time.monotonic() + 10
    while tasks(alice) < before + 2:  # each call waiting is a task on the client's loop
        assert time.monotonic() < deadline, "the calls did not start"
        threading.Event().wait(0.01)
    alice.close()
    ends = [got.get(timeout=10) for _ in threads]
    for th in threads:
        th.join(10)
    assert all(isinstance(e, hubd.Canceled) for e in ends), ends
    with pytest.raises(ValueError, match="closed"):
        alice.send_text(s.id, "after")
    alice.close()  # again: nothing
    assert not alice._loop._thread.is_alive(), "the client's loop thread outlived it"


def tasks(c: hubd.Client) -> int:
    """How many tasks run on c's event loop."""

    async def count() -> int:
        return len(asyncio.all_tasks()) - 1  # not this one

    return c._loop.run(count())


def test_serve_functions_may_call_the_client(connect: Connect, names: Names, serving: Serving) -> None:
    """The handler, the observer, on_session_end, the invite function and
    the session filter run in threads: each may make blocking calls of the
    client serving (on the client's loop they would wait forever)."""
    A, B = names("alice"), names("bob")
    alice, bob = connect(A), connect(B)
    seen: List[str] = []
    ended: "queue.Queue[str]" = queue.Queue()

    def observe(d: hubd.pb.Delivery) -> None:
        seen.append(bob.get_session(d.envelope.session_id).state)

    def end(e: hubd.pb.Envelope) -> None:
        ended.put(bob.get_session(e.session_id).close_reason)

    serving.start(
        bob,
        lambda t: "bob read " + str(len(bob.read_log(t.session_id))),
        observer=observe,
        on_session_end=end,
        invites=lambda inv: bob.get_session(inv.session_id).creator == A,
        session_filter=lambda s: bob.get_session(s.id).creator == A,
    )
    s = alice.open_workflow(hubd.sequence(A, B), B)
    for d in alice.subscribe({s.id: 0}, timeout=20):
        if d.your_turn:
            alice.send_text(s.id, "go")
            break
    turns, reason = transcript(alice, s.id)
    assert turns[-1].startswith(f"{B}: bob read ") and reason == "sequence_complete"
    assert ended.get(timeout=10) == "sequence_complete"
    assert seen and set(seen) <= {hubd.STATE_PENDING, hubd.STATE_OPEN, hubd.STATE_CLOSED}


AGENT = textwrap.dedent(
    """
    import sys, threading
    sys.path.insert(0, {sdk!r})
    import hubd
    c = hubd.Client({addr!r}, name={name!r})
    s = c.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted("nobody"))
    try:
        for e in c.follow(s.id):
            if e.seq == 1:
                print("following", flush=True)  # the session never ends: only Ctrl-C stops this
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    print("sent", c.send_text(s.id, "still here").seq > 0, flush=True)
    c.close()
    print("threads", sorted(t.name for t in threading.enumerate() if t.name.startswith("hubd")), flush=True)
    """
)


def test_ctrl_c_during_a_blocking_call(hub: Hub, names: Names) -> None:
    code = AGENT.format(sdk=str(SDK), addr=hub.addr, name=names("alice"))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "following\n"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert out == "interrupted\nsent True\nthreads []\n", (out, err)
