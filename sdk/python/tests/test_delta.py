"""Deltas against the real hub: a handler writes its reply through
``turn.stream()``; a watcher with ``deltas=True`` sees each piece before
the final envelope, which is written once."""

from __future__ import annotations

import asyncio
from typing import Awaitable, List, TypeVar

import pytest

import hubd
import hubd.aio

from .conftest import Hub, Names

T = TypeVar("T")


def run(coro: Awaitable[T]) -> T:
    return asyncio.run(asyncio.wait_for(coro, 30))  # type: ignore[arg-type]


def test_turn_stream(hub: Hub, names: Names) -> None:
    A, B, C = names("alice"), names("bob"), names("carol")

    async def main() -> None:
        async with hubd.aio.Client(hub.addr, name=A) as alice, hubd.aio.Client(
            hub.addr, name=B
        ) as bob, hubd.aio.Client(hub.addr, name=C) as carol:
            s = await alice.open(graph=hubd.sequence(A, B, C), participants=hubd.auto_accepted(B, C))
            info = await alice.get_session(s.id)
            watch = carol.watch(s.id, 1, deltas=True, timeout=20)
            async for d in watch:  # the catch-up: the watch is registered
                if d.envelope.seq == info.seq:
                    break
            turns: List[hubd.aio.Turn] = []

            async def handler(t: hubd.aio.Turn) -> None:
                async with t.stream() as out:
                    for piece in ("Hel", "lo"):
                        await out.write(piece)
                turns.append(t)

            stop = asyncio.Event()
            server = asyncio.ensure_future(bob.serve(handler, stop=stop, view=None))
            await alice.send_text(s.id, "go")
            got: List[str] = []
            async for d in watch:
                if d.HasField("delta"):
                    assert hubd.sender(d.delta) == B
                    got.append("delta:" + d.delta.text)
                elif d.envelope.type == hubd.EVENT_TEXT:
                    got.append(hubd.sender(d.envelope) + ":" + hubd.text_of(d.envelope))
                if len(got) == 4:
                    break
            watch.close()
            assert got == [f"{A}:go", "delta:Hel", "delta:lo", f"{B}:Hello"]
            log = await alice.read_log(s.id)
            mine = [e for e in log if hubd.sender(e) == B]
            assert [hubd.text_of(e) for e in mine] == ["Hello"]
            assert mine[0].client_msg_id == hubd.turn_msg_id(s.id, turns[0].seq)
            with pytest.raises(hubd.OutOfTurn):
                await turns[0].stream().write("late")
            with pytest.raises(hubd.OutOfTurn):
                await alice.send_delta(s.id, "x", 0, "not hers")
            stop.set()
            await server

    run(main())


def test_sync_deltas(hub: Hub, names: Names) -> None:
    """The sync client: send_delta on the turn, watch(deltas=True) sees it."""
    A, B = names("alice"), names("bob")
    with hubd.Client(hub.addr, name=A) as alice, hubd.Client(hub.addr, name=B) as bob:
        s = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B))
        info = alice.get_session(s.id)
        watch = bob.watch(s.id, 1, deltas=True, timeout=20)
        for d in watch:  # the catch-up: the watch is registered
            if d.envelope.seq == info.seq:
                break
        alice.send_delta(s.id, "r1", 0, "Hel")
        alice.send_text(s.id, "Hello", client_msg_id="r1")
        got = []
        for d in watch:
            got.append("delta:" + d.delta.text if d.HasField("delta") else "text:" + hubd.text_of(d.envelope))
            if len(got) == 2:
                break
        watch.close()
        assert got == ["delta:Hel", "text:Hello"]
