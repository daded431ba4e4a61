"""Forks and operator actions (steer) with the sync and asyncio clients,
against the real hub (sdk/go/fork_test.go and cmd/hubd/e2e_steer_test.go
are the Go twins). In development mode the agent named "operator" is an
operator."""

from __future__ import annotations

import asyncio
from typing import Callable, List, Tuple

import pytest

import hubd
import hubd.aio

from .conftest import Hub, Names

Connect = Callable[..., hubd.Client]


def three(connect: Connect, names: Names, **kw: object) -> Tuple[hubd.Client, hubd.Client, hubd.Client, hubd.Session]:
    """alice, bob and carol, and a round_robin(alice, bob, carol) session
    alice opened (open at once: bob and carol accept by themselves)."""
    a, b, c = names("alice"), names("bob"), names("carol")
    alice, bob, carol = connect(a), connect(b), connect(c)
    s = alice.open(graph=hubd.round_robin([a, b, c], 20), participants=hubd.auto_accepted(b, c), **kw)
    return alice, bob, carol, s


def test_fork_at_a_seq_with_edits(connect: Connect, names: Names) -> None:
    alice, bob, carol, s = three(connect, names)
    first = alice.send_text(s.id, "first")
    bob.send_text(s.id, "second")

    f = bob.fork(s.id, first.seq, set={"tone": "dry"}, next_speaker=carol.name, labels={"try": "2"})
    assert f.id != s.id and f.state == hubd.STATE_OPEN
    assert f.labels["forked_from"] == s.id and f.labels["try"] == "2"
    assert f.meta.forked_from.session_id == s.id and f.meta.forked_from.at_seq == first.seq
    assert f.var("tone") == "dry"
    assert f.expected == [carol.name]
    with pytest.raises(hubd.OutOfTurn):
        bob.send_text(f.id, "me?")
    carol.send_text(f.id, "carol in the fork")

    # Without edits the fork expects whoever the source expected at that
    # seq (bob); the source is not changed (carol's turn there).
    plain = alice.fork(s.id, first.seq)
    assert plain.expected == [bob.name] and plain.var("tone") is None
    assert alice.get_session(s.id).expected == [carol.name]

    # delete removes what the source had set by that seq.
    alice.set_context(s.id, {"stage": "draft"})
    last = alice.get_session(s.id).seq
    assert alice.fork(s.id, last).var("stage") == "draft"
    assert alice.fork(s.id, last, delete=["stage"]).var("stage") is None


def test_fork_refusals(connect: Connect, names: Names) -> None:
    alice, _, _, s = three(connect, names)
    alice.send_text(s.id, "first")
    last = alice.get_session(s.id).seq
    with pytest.raises(hubd.Malformed, match=f"from 1 to {last}"):
        alice.fork(s.id, last + 5)
    with pytest.raises(hubd.Malformed):
        alice.fork(s.id, last, next_speaker=names("nobody"))
    with pytest.raises(hubd.PermissionDenied):
        connect(names("stranger")).fork(s.id, last)
    with pytest.raises(hubd.UnknownSession):
        alice.fork("00000000-0000-4000-8000-000000000000", 1)
    with pytest.raises(ValueError, match="list of context variable names"):
        alice.fork(s.id, last, delete="stage")


def test_steer_as_the_operator(connect: Connect, names: Names) -> None:
    alice, bob, carol, s = three(connect, names)
    op = connect("operator")
    alice.send_text(s.id, "over to bob")

    with pytest.raises(hubd.PermissionDenied):
        bob.steer(s.id, "mine", next_speaker=carol.name)
    ack = op.steer(s.id, "carol has the logs", next_speaker=carol.name)
    assert ack.seq > 0
    with pytest.raises(hubd.OutOfTurn):
        bob.send_text(s.id, "me?")
    carol.send_text(s.id, "here are the logs")

    op.steer(s.id, "escalated", set_context={"priority": 1, "team": "core"})
    got = alice.get_session(s.id)
    assert got.var("priority") == 1 and got.var("team") == "core"
    op.steer(s.id, "de-escalated", unset_context=["priority"])
    assert alice.get_session(s.id).var("priority") is None
    with pytest.raises(hubd.Malformed):
        op.steer(s.id, "again", unset_context=["priority"])  # not set any more

    actions = [e.operator_action for e in alice.read_log(s.id) if e.HasField("operator_action")]
    assert [a.reason for a in actions] == ["carol has the logs", "escalated", "de-escalated"]
    assert {a.operator for a in actions} == {"operator"}


def test_steer_nothing_to_steer_and_timers(connect: Connect, names: Names) -> None:
    alice, _, _, s = three(connect, names, expectations=[hubd.expect("turn_within", 600, "warn")])
    op = connect("operator")
    alice.send_text(s.id, "over to bob")
    with pytest.raises(hubd.NothingToSteer, match="no turn is held"):
        op.steer(s.id, "unstick", release_result="go")
    op.steer(s.id, "bob is slow today", extend_timer=("turn_within", 120))
    op.steer(s.id, "no hurry", cancel_timer="turn_within")
    with pytest.raises(hubd.NothingToSteer) as refused:
        op.steer(s.id, "again", cancel_timer="turn_within")
    assert refused.value.reason == "NOTHING_TO_STEER"
    with pytest.raises(hubd.Malformed):
        op.steer(s.id, "which?", extend_timer=("no_such_timer", 5))


@pytest.mark.parametrize(
    "kw,got",
    [
        ({}, "got none"),
        ({"next_speaker": "x", "release_result": "go"}, "got next_speaker, release_result"),
        ({"set_context": {"a": 1}, "cancel_timer": "turn_within"}, "got set_context/unset_context, cancel_timer"),
        ({"extend_timer": "turn_within"}, "extend_timer is"),
        ({"unset_context": "a"}, "list of context variable names"),
    ],
)
def test_steer_takes_exactly_one_action(connect: Connect, names: Names, kw: dict, got: str) -> None:  # type: ignore[type-arg]
    op = connect("operator")
    with pytest.raises(ValueError, match=got):
        op.steer("any-session", "why", **kw)


def test_aio_fork_and_steer(hub: Hub, names: Names) -> None:
    async def main() -> None:
        a, b = names("alice"), names("bob")
        clients: List[hubd.aio.Client] = []
        try:
            for n in (a, b, "operator"):
                clients.append(await hubd.aio.connect(hub.addr, name=n))
            alice, bob, op = clients
            s = await alice.open(graph=hubd.round_robin([a, b], 20), participants=hubd.auto_accepted(b))
            first = await alice.send_text(s.id, "first")
            f = await bob.fork(s.id, first.seq, set={"k": "v"}, next_speaker=a)
            assert f.labels["forked_from"] == s.id and f.var("k") == "v" and f.expected == [a]
            with pytest.raises(hubd.PermissionDenied):
                await alice.steer(f.id, "mine", next_speaker=b)
            await op.steer(f.id, "bob goes first", next_speaker=b)
            await bob.send_text(f.id, "thanks")
            with pytest.raises(hubd.NothingToSteer):
                await op.steer(f.id, "unstick", release_result="go")
            with pytest.raises(ValueError):
                await op.steer(f.id, "two", next_speaker=a, release_result="go")
        finally:
            for c in clients:
                await c.close()

    asyncio.run(asyncio.wait_for(main(), 60))
