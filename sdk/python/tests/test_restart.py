"""The hub dies under its agents (kill -9) or drains (SIGTERM), and comes
back on the same data directory and port."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Callable, Dict, List

import grpc
import pytest

import hubd

from .conftest import Hub, Serving, transcript

HubFactory = Callable[..., Hub]


def test_serve_across_kill_9(hub_factory: HubFactory, serving: Serving) -> None:
    h = hub_factory()
    names = ["a", "b", "c"]
    clients = [hubd.Client(h.addr, name=n) for n in names]
    lock = threading.Lock()
    calls: List[str] = []
    held, release = threading.Event(), threading.Event()
    reconnects: List[hubd.HubError] = []

    def handler(t: hubd.Turn) -> hubd.Reply:
        with lock:
            calls.append(f"{t.client.name}@{t.trigger.seq}")
            n = len(calls)
        if n == 5:  # b's second turn: the hub dies while it works
            held.set()
            assert release.wait(20)
        return f"turn {n}"

    for c in clients:
        serving.start(c, handler, backoff=(0.02, 0.5), on_reconnect=reconnects.append)
    s = clients[0].open_workflow(hubd.round_robin(names, 9), "b", "c")
    assert held.wait(20), calls
    h.kill()
    h.restart()
    release.set()

    turns, reason = transcript(clients[0], s.id)
    assert turns == [f"{names[i % 3]}: turn {i + 1}" for i in range(9)]
    assert reason == "max_turns"
    # The open is seq 4 (after the invite and two acks); each turn triggers
    # the next, and each is answered once.
    assert calls == ["a@4", "b@5", "c@6", "a@7", "b@8", "c@9", "a@10", "b@11", "c@12"]
    log = clients[0].read_log(s.id)
    replies = Counter(e.client_msg_id for e in log if hubd.is_turn(e))
    assert sorted(replies) == sorted(hubd.turn_msg_id(s.id, seq) for seq in range(4, 13))
    assert set(replies.values()) == {1}
    assert len(reconnects) >= len(names), "every agent's stream broke"
    assert all(isinstance(e, hubd.Unavailable) or e.retryable for e in reconnects)
    serving.close()
    for c in clients:
        c.close()


def test_idempotent_retry_after_kill_9(hub_factory: HubFactory) -> None:
    h = hub_factory()
    alice = hubd.Client(h.addr, name="alice", send_attempts=1)
    s = alice.open(graph=hubd.sequence("alice", "bob"), participants=hubd.auto_accepted("bob"))
    msg_id = hubd.turn_msg_id(s.id, 3)
    first = alice.send_text(s.id, "findings", client_msg_id=msg_id)
    h.kill()
    with pytest.raises(hubd.Unavailable) as e:
        alice.send_text(s.id, "findings", client_msg_id=msg_id)
    assert e.value.reason == "" and e.value.code == grpc.StatusCode.UNAVAILABLE
    h.restart()
    alice = hubd.Client(h.addr, name="alice")  # a new connection: the retry of a restarted agent
    again = alice.send_text(s.id, "findings", client_msg_id=msg_id)
    assert again.duplicate and (again.seq, again.id, again.accepted_at) == (first.seq, first.id, first.accepted_at)
    assert again.client_msg_id == msg_id
    assert [hubd.text_of(e) for e in alice.read_log(s.id) if hubd.is_turn(e)] == ["findings"]
    alice.close()


def test_send_retries_while_the_hub_restarts(hub_factory: HubFactory) -> None:
    h = hub_factory()
    alice = hubd.Client(h.addr, name="alice", send_attempts=50)
    s = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted("bob"))
    h.kill()
    result: Dict[str, object] = {}

    def send() -> None:
        try:
            result["ack"] = alice.send_text(s.id, "while you were out")
        except hubd.HubError as e:  # pragma: no cover - reported below
            result["err"] = e

    t = threading.Thread(target=send)
    t.start()
    h.restart()
    t.join(30)
    assert "ack" in result, result
    assert [hubd.text_of(e) for e in alice.read_log(s.id) if hubd.is_turn(e)] == ["while you were out"]
    alice.close()


def test_draining(hub_factory: HubFactory) -> None:
    h = hub_factory()
    alice = hubd.Client(h.addr, name="alice")
    s = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted("bob"))
    w = alice.watch(s.id, timeout=20)
    assert w.recv() is not None  # the stream is up
    assert h.stop() == 0
    with pytest.raises(hubd.Draining) as e:
        list(w)
    assert e.value.reason == "DRAINING" and e.value.code == grpc.StatusCode.UNAVAILABLE and e.value.retryable
    assert isinstance(e.value, hubd.Unavailable)
    alice.close()


def test_aio_serve_across_kill_9(hub_factory: HubFactory) -> None:
    import asyncio

    h = hub_factory()

    async def main() -> None:
        calls: List[str] = []
        reconnects: List[hubd.HubError] = []
        held, release = asyncio.Event(), asyncio.Event()

        async def handler(t: hubd.Turn) -> hubd.Reply:
            calls.append(f"{t.client.name}@{t.trigger.seq}")
            if len(calls) == 2:
                held.set()
                await release.wait()
            return f"turn {len(calls)}"

        async with hubd.aio.Client(h.addr, name="a") as a, hubd.aio.Client(h.addr, name="b") as b:
            stop = asyncio.Event()
            servers = [
                asyncio.ensure_future(c.serve(handler, stop=stop, backoff=(0.02, 0.5), on_reconnect=reconnects.append))
                for c in (a, b)
            ]
            s = await a.open_workflow(hubd.round_robin(["a", "b"], 4), "b")
            await asyncio.wait_for(held.wait(), 20)
            h.kill()
            h.restart()
            release.set()
            turns = [e async for e in a.follow(s.id, timeout=30) if hubd.is_turn(e)]
            stop.set()
            await asyncio.wait_for(asyncio.gather(*servers), 15)
            assert [hubd.text_of(e) for e in turns] == ["turn 1", "turn 2", "turn 3", "turn 4"]
            assert calls == ["a@3", "b@4", "a@5", "b@6"]
            assert len(reconnects) >= 2 and all(e.retryable for e in reconnects)

    asyncio.run(main())


def test_send_across_outage(hub_factory: HubFactory) -> None:
    """A send made while the hub is down for a second goes through once it
    is back (the retry waits for the connection within the retry budget),
    and is written once."""
    h = hub_factory()
    alice = hubd.Client(h.addr, name="alice")
    s = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted("bob"))
    alice.send_text(s.id, "before")
    h.kill()
    result: Dict[str, object] = {}

    def send() -> None:
        try:
            result["ack"] = alice.send_text(s.id, "during the outage", client_msg_id="outage-1")
        except hubd.HubError as e:
            result["err"] = e

    t = threading.Thread(target=send)
    t.start()
    threading.Event().wait(1.0)  # the hub stays down a second
    h.restart()
    t.join(30)
    assert "err" not in result, result
    log = alice.read_log(s.id)
    assert [e.client_msg_id for e in log].count("outage-1") == 1
    alice.close()


def test_send_across_outage_aio(hub_factory: HubFactory) -> None:
    """The same through the asyncio client."""
    import asyncio

    import hubd.aio

    h = hub_factory()

    async def main() -> None:
        async with hubd.aio.Client(h.addr, name="alice") as alice:
            s = await alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted("bob"))
            await alice.send_text(s.id, "before")
            h.kill()
            sent = asyncio.ensure_future(alice.send_text(s.id, "during the outage", client_msg_id="outage-2"))
            await asyncio.sleep(1.0)  # the hub stays down a second
            await asyncio.get_running_loop().run_in_executor(None, h.restart)
            await sent
            log = await alice.read_log(s.id)
            assert [e.client_msg_id for e in log].count("outage-2") == 1

    asyncio.run(main())
