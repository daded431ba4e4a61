"""The asyncio client against the real hub: every call, and serve."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import textwrap
import threading
from typing import Any, Awaitable, List, TypeVar

import grpc
import pytest

import hubd
import hubd.aio
from hubd import pb

from .conftest import SDK, Hub, Names, free_port
from .test_serve import EVERYTHING, TERSE
from .wire import Received

T = TypeVar("T")


def run(coro: Awaitable[T]) -> T:
    return asyncio.run(asyncio.wait_for(coro, 60))  # type: ignore[arg-type]


def test_connect(hub: Hub, names: Names) -> None:
    async def main() -> None:
        c = await hubd.aio.connect(hub.addr, name=names("alice"))
        assert c.name == names("alice") and c.target == hub.addr
        assert (await c.list_sessions()).sessions == []
        resp = await c.raw.ListSessions(pb.ListSessionsRequest(), metadata=c.metadata)
        assert list(resp.sessions) == []
        await c.close()
        with pytest.raises(hubd.Unavailable):
            await hubd.aio.connect(f"127.0.0.1:{free_port()}", name="a", connect_timeout=0.3)
        with pytest.raises(ValueError):
            hubd.aio.Client("hub.example.com:1", token="t" * 20)

    run(main())


def test_every_call(hub: Hub, names: Names) -> None:
    A, B, C = names("alice"), names("bob"), names("carol")

    async def main() -> None:
        async with hubd.aio.Client(hub.addr, name=A) as alice, hubd.aio.Client(
            hub.addr, name=B
        ) as bob, hubd.aio.Client(hub.addr, name=C) as carol:
            s = await alice.open_workflow(hubd.sequence(A, B, C), B, C)
            assert s.state == hubd.STATE_PENDING
            sub = bob.subscribe(timeout=20)
            first = await sub.recv()
            assert first is not None and first.envelope.type == hubd.EVENT_INVITE
            await bob.ack_invite(s.id)
            await carol.ack_invite(s.id)
            turns = await alice.pending_turns()
            assert [d.envelope.session_id for d in turns] == [s.id]
            a1 = await alice.send_text(s.id, "one", client_msg_id="x-1")
            again = await alice.send_text(s.id, "one", client_msg_id="x-1")
            assert again.duplicate and again.seq == a1.seq
            async for d in sub:
                if d.your_turn:
                    break
            sub.close()
            assert await sub.recv() is None
            await bob.set_context(s.id, {"k": 1})
            await bob.update_context(s.id, set={"j": [1]}, delete=["k"])
            await bob.send_event(s.id, "note", b"\x01")
            await bob.send(s.id, pb.Envelope(type="task_progress", task_progress=pb.TaskProgress(task="t", percent=1)))
            await bob.send_packet(s.id, hubd.Packet("two").set("stage", "draft"), causation_id=a1.id)
            info = await carol.get_session(s.id)
            assert info.expected == [C] and info.context == {"j": [1], "stage": "draft"}
            view = await carol.view(s.id, hubd.VIEW_FULL)
            assert [i.text for i in view.items] == ["one", "two"]
            watch = carol.watch(s.id, 1, timeout=20)
            seqs = []
            async for d in watch:
                seqs.append(d.envelope.seq)
                if hubd.text_of(d.envelope) == "two":
                    break
            watch.close()
            assert seqs == list(range(1, seqs[-1] + 1))
            fin = await carol.send_packet(s.id, hubd.Packet("three").finish("done"))
            assert fin.closed and fin.close_reason == "done"
            envs = [e async for e in alice.follow(s.id, timeout=20)]
            assert hubd.close_reason(envs[-1]) == "done"
            log = await alice.read_log(s.id, from_seq=1, limit=1000)
            assert [e.seq for e in log] == [e.seq for e in envs if e.seq in {x.seq for x in log}]
            page = await alice.list_sessions(state=hubd.STATE_CLOSED)
            assert [x.id for x in page.sessions] == [s.id]
            conv = await alice.open(hubd.TYPE_CONVERSATION, participants=[B])
            assert (await bob.reject_invite(conv.id, "no")).close_reason == "invite_rejected"
            other = await alice.open(hubd.TYPE_DISCUSSION, participants=hubd.auto_accepted(B))
            assert (await alice.close_session(other.id, "bye")).close_reason == "bye"
            with pytest.raises(hubd.OutOfTurn) as e:
                cons = await alice.open(hubd.TYPE_CONSULTING, participants=hubd.auto_accepted(B))
                await bob.send_text(cons.id, "I speak first?")
            assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION
            with pytest.raises(hubd.SessionClosed):
                await alice.send_text(s.id, "late")

    run(main())


def test_serve(hub: Hub, names: Names) -> None:
    R, W, E = names("researcher"), names("writer"), names("editor")

    async def main() -> None:
        stop = asyncio.Event()
        async with hubd.aio.Client(hub.addr, name=R) as r, hubd.aio.Client(hub.addr, name=W) as w, hubd.aio.Client(
            hub.addr, name=E
        ) as e:

            async def researcher(t: hubd.Turn) -> hubd.Reply:
                return "Findings: x."

            def writer(t: hubd.Turn) -> hubd.Reply:  # a plain function runs in a thread
                assert threading.current_thread() is not threading.main_thread()
                return hubd.Packet("Draft from " + t.text)

            async def editor(t: hubd.Turn) -> hubd.Reply:
                assert t.view is not None
                return f"Approved after reading {len(t.view.items)} turns."

            servers = [
                asyncio.ensure_future(c.serve(h, stop=stop)) for c, h in ((r, researcher), (w, writer), (e, editor))
            ]
            s = await r.open_workflow(hubd.sequence(R, W, E), W, E)
            turns = [
                f"{hubd.sender(x)}: {hubd.text_of(x)}" async for x in r.follow(s.id, timeout=30) if hubd.is_turn(x)
            ]
            stop.set()
            await asyncio.gather(*servers)
            assert turns == [
                f"{R}: Findings: x.",
                f"{W}: Draft from Findings: x.",
                f"{E}: Approved after reading 2 turns.",
            ]

    run(main())


def test_serve_concurrency_and_end(hub: Hub, names: Names) -> None:
    A, B = names("alice"), names("bob")

    async def main() -> None:
        async with hubd.aio.Client(hub.addr, name=A) as alice, hubd.aio.Client(hub.addr, name=B) as bob:
            arrived: List[str] = []
            both = asyncio.Event()
            cancelled: List[str] = []

            async def handler(t: hubd.Turn) -> hubd.Reply:
                arrived.append(t.session_id)
                if len(arrived) == 2:
                    both.set()
                if t.text == "hang":
                    try:
                        await asyncio.sleep(60)
                    except asyncio.CancelledError:
                        cancelled.append(t.session_id)
                        raise
                await asyncio.wait_for(both.wait(), 10)  # both sessions' turns run at once
                return "done " + t.text

            stop = asyncio.Event()
            server = asyncio.ensure_future(bob.serve(handler, stop=stop, view=None))
            ids = []
            for i in range(2):
                s = await alice.open(graph=hubd.sequence(A, B), participants=hubd.auto_accepted(B))
                ids.append(s.id)
                await alice.send_text(s.id, f"job {i}")
            for i, sid in enumerate(ids):
                turns = [hubd.text_of(x) async for x in alice.follow(sid, timeout=20) if hubd.is_turn(x)]
                assert turns == [f"job {i}", f"done job {i}"]
            # A turn whose session ends is cancelled.
            hang = await alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B))
            await alice.send_text(hang.id, "hang")
            while hang.id not in arrived:
                await asyncio.sleep(0.01)
            await alice.close_session(hang.id)
            for _ in range(500):
                if cancelled:
                    break
                await asyncio.sleep(0.01)
            assert cancelled == [hang.id]
            stop.set()
            await server

    run(main())


def test_serve_options(hub: Hub, names: Names) -> None:
    A, B = names("alice"), names("bob")

    async def main() -> None:
        async with hubd.aio.Client(hub.addr, name=A) as alice, hubd.aio.Client(hub.addr, name=B) as bob:
            seen: List[int] = []

            async def decide(inv: hubd.Invite) -> hubd.InviteDecision:
                info = await bob.get_session(inv.session_id)
                return True if info.type == hubd.TYPE_WORKFLOW else "workflows only"

            stop = asyncio.Event()
            server = asyncio.ensure_future(
                bob.serve(
                    lambda t: f"saw {len(t.view.items) if t.view else -1}",
                    invites=decide,
                    view=hubd.VIEW_WINDOWED,
                    window=1,
                    observer=lambda d: seen.append(d.envelope.seq),
                    stop=stop,
                )
            )
            conv = await alice.open(hubd.TYPE_CONVERSATION, participants=[B])
            ends = [e async for e in alice.follow(conv.id, timeout=20)]
            assert hubd.close_reason(ends[-1]) == "invite_rejected"
            wf = await alice.open_workflow(hubd.sequence(A, B), B)
            async for d in alice.subscribe({wf.id: 0}, timeout=20):
                if d.your_turn:
                    await alice.send_text(wf.id, "one")
                    break
            turns = [hubd.text_of(e) async for e in alice.follow(wf.id, timeout=20) if hubd.is_turn(e)]
            assert turns == ["one", "saw 1"]
            stop.set()
            await server
            assert seen, "the observer saw the deliveries"

    run(main())


def test_subscribe_terse(hub: Hub, names: Names) -> None:
    A, B, C = names("alice"), names("bob"), names("carol")

    async def main() -> None:
        async with hubd.aio.Client(hub.addr, name=A) as alice, hubd.aio.Client(hub.addr, name=B) as bob:
            s = await alice.open(graph=hubd.sequence(A, B, C), participants=hubd.auto_accepted(B, C))
            await alice.send_event(s.id, "note", b"aside")
            await alice.send_text(s.id, "go")
            got: List[str] = []
            sub = bob.subscribe(terse=True, timeout=20)
            async for d in sub:
                got.append(d.envelope.type + (" [your turn]" if d.your_turn else ""))
                if d.your_turn:
                    await alice.close_session(s.id, "enough")
                if hubd.ends(d.envelope):
                    break
            sub.close()
            assert got == ["text [your turn]", "session_closed"]

    run(main())


def test_subscribe_turn_view(hub: Hub, names: Names) -> None:
    """A your_turn delivered live on a stream with a view carries bob's
    view of the session as view() returns it then; without a view, none."""
    A, B, C = names("alice"), names("bob"), names("carol")

    async def main() -> None:
        async with hubd.aio.Client(hub.addr, name=A) as alice, hubd.aio.Client(hub.addr, name=B) as bob:
            s = await alice.open(graph=hubd.sequence(A, B, C), participants=hubd.auto_accepted(B, C))
            await alice.send_event(s.id, "note", b"aside")
            sub = bob.subscribe(view=hubd.VIEW_LAST, timeout=20)
            async for d in sub:
                if d.your_turn:
                    break
                assert not d.HasField("view")
                if d.envelope.type == "note":
                    await alice.send_text(s.id, "one")
            sub.close()
            assert hubd.text_of(d.envelope) == "one"
            assert d.view == await bob.view(s.id, hubd.VIEW_LAST) and [i.text for i in d.view.items] == ["one"]
            sub = bob.subscribe(terse=True, timeout=20)
            async for d in sub:
                break
            sub.close()
            assert d.your_turn and not d.HasField("view")

    run(main())


@pytest.mark.parametrize(
    "transport, observe, want",
    [("stream", False, TERSE), ("unary", False, TERSE), ("stream", True, EVERYTHING)],
    ids=["stream", "unary", "observer"],
)
def test_terse(hub: Hub, names: Names, transport: str, observe: bool, want: List[str]) -> None:
    """tests/test_serve.py's test_terse under asyncio: serve's stream is
    terse unless an observer is given, over either transport, and
    on_session_end is told of the end."""
    A, B, C = names("alice"), names("bob"), names("carol")
    wire = Received()

    async def main() -> None:
        with wire.dialing():
            bob = hubd.aio.Client(hub.addr, name=B, transport=transport)
        async with hubd.aio.Client(hub.addr, name=A) as alice, hubd.aio.Client(hub.addr, name=C) as carol, bob:
            ended: "asyncio.Queue[pb.Envelope]" = asyncio.Queue()
            observed: List[str] = []
            stop = asyncio.Event()
            servers = [
                asyncio.ensure_future(
                    bob.serve(
                        lambda t: "from bob",
                        observer=(lambda d: observed.append(d.envelope.type)) if observe else None,
                        on_session_end=ended.put_nowait,
                        stop=stop,
                        handle_signals=False,
                    )
                ),
                asyncio.ensure_future(carol.serve(lambda t: "from carol", stop=stop, handle_signals=False)),
            ]
            s = await alice.open(graph=hubd.sequence(A, B, C), participants=hubd.auto_accepted(B, C))
            await alice.send_event(s.id, "note", b"aside")
            await alice.send_text(s.id, "go")
            e = await asyncio.wait_for(ended.get(), 20)
            assert (e.session_id, e.type) == (s.id, hubd.EVENT_CLOSED)
            assert wire.get() == want
            if observe:
                assert observed == ["session_invite", "session_opened", "note", "text", "text", "session_closed"]
            stop.set()
            await asyncio.gather(*servers)
            assert bob.transport == transport and ended.empty()

    run(main())


AGENT = textwrap.dedent(
    """
    import asyncio, sys
    sys.path.insert(0, {sdk!r})
    import hubd.aio

    async def main():
        async with hubd.aio.Client({addr!r}, name={name!r}) as c:
            print("serving", flush=True)
            await c.serve(lambda t: "pong")
        print("stopped", flush=True)

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stops_on_signal(hub: Hub, names: Names, sig: signal.Signals) -> None:
    code = AGENT.format(sdk=str(SDK), addr=hub.addr, name=names("bob"))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "serving\n"
        alice = hubd.Client(hub.addr, name=names("alice"))
        s = alice.open(graph=hubd.sequence(names("bob")), participants=[names("bob")])
        turns = [hubd.text_of(e) for e in alice.follow(s.id, timeout=20) if hubd.is_turn(e)]
        assert turns == ["pong"]
        alice.close()
    finally:
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    assert out == "stopped\n", err


def test_handler_types(hub: Hub, names: Names) -> None:
    # Whatever a handler is, a bad reply is logged and posts nothing.
    async def main() -> None:
        async with hubd.aio.Client(hub.addr, name=names("alice")) as alice, hubd.aio.Client(
            hub.addr, name=names("bob")
        ) as bob:
            got: List[Any] = []

            async def handler(t: hubd.Turn) -> Any:
                got.append(t.seq)
                return object()

            stop = asyncio.Event()
            server = asyncio.ensure_future(bob.serve(handler, stop=stop, view=None))
            s = await alice.open(
                graph=hubd.sequence(names("alice"), names("bob")), participants=hubd.auto_accepted(names("bob"))
            )
            await alice.send_text(s.id, "hi")
            while not got:
                await asyncio.sleep(0.01)
            stop.set()
            await server
            assert (await alice.get_session(s.id)).expected == [names("bob")]

    run(main())


def test_serve_session_filter(hub: Hub, names: Names) -> None:
    """aio serve(session_filter=), a coroutine function: a session another
    client opened with the agent gets nothing from it."""
    A, B, P = names("alice"), names("bob"), names("person")

    async def main() -> None:
        async with hubd.aio.Client(hub.addr, name=A) as alice, hubd.aio.Client(
            hub.addr, name=B
        ) as bob, hubd.aio.Client(hub.addr, name=P) as person:
            invited = await person.open_workflow(hubd.sequence(P, B), B)
            first = await person.open(graph=hubd.sequence(B, P), participants=hubd.auto_accepted(B))
            asked: "asyncio.Queue[str]" = asyncio.Queue()

            async def keep(s: hubd.Session) -> bool:
                await asyncio.sleep(0)
                asked.put_nowait(s.id)
                return s.labels.get("run") == "ours"

            stop = asyncio.Event()
            servers = [
                asyncio.ensure_future(c.serve(lambda t, n=c.name: f"from {n}", session_filter=keep, stop=stop))
                for c in (alice, bob)
            ]
            ours = await alice.open(graph=hubd.sequence(A, B), participants=[B], labels={"run": "ours"})
            follow = alice.follow(ours.id, timeout=30)
            turns = [f"{hubd.sender(x)}: {hubd.text_of(x)}" async for x in follow if hubd.is_turn(x)]
            assert turns == [f"{A}: from {A}", f"{B}: from {B}"]
            seen: List[str] = []
            while not {invited.id, first.id} <= set(seen):
                seen.append(await asyncio.wait_for(asked.get(), 10))
            stop.set()
            await asyncio.gather(*servers)
            while not asked.empty():
                seen.append(asked.get_nowait())
            assert sorted(seen) == sorted([invited.id, first.id, ours.id, ours.id]), seen
            for sid in (invited.id, first.id):
                assert not [e for e in await person.read_log(sid) if hubd.sender(e) == B]
            assert (await person.get_session(invited.id)).state == hubd.STATE_PENDING

    run(main())



def test_serve_coroutine_hooks(hub: Hub, names: Names) -> None:
    """observer, on_session_end and on_reconnect may be coroutine
    functions: serve awaits each, in order, before it reads on."""
    A, B = names("alice"), names("bob")

    async def main() -> None:
        async with hubd.aio.Client(hub.addr, name=A) as alice, hubd.aio.Client(hub.addr, name=B) as bob:
            observed: List[str] = []
            ended: "asyncio.Queue[str]" = asyncio.Queue()

            async def observe(d: pb.Delivery) -> None:
                await asyncio.sleep(0)
                observed.append(d.envelope.type)

            async def end(e: pb.Envelope) -> None:
                await asyncio.sleep(0)
                ended.put_nowait(e.session_id)

            stop = asyncio.Event()
            server = asyncio.ensure_future(
                bob.serve(lambda t: "from bob", observer=observe, on_session_end=end, stop=stop, handle_signals=False)
            )
            s = await alice.open(graph=hubd.sequence(A, B), participants=hubd.auto_accepted(B))
            await alice.send_text(s.id, "go")
            assert await asyncio.wait_for(ended.get(), 20) == s.id
            stop.set()
            await server
            assert observed == ["session_invite", "session_opened", "text", "session_closed"], observed

    run(main())
