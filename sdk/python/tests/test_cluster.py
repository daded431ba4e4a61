"""The SDK in a hubd cluster (docs/SCALING.md): three real hubd nodes on
loopback, each with its embedded NATS server. A client given one node and
its peers follows NOT_OWNER: calls go where their session is served, serve
merges a stream from every node, a watch follows its session; a node then
dies (SIGKILL) and the served agents carry on with no gap and no duplicate
in what they saw. (The TypeScript SDK's test stops a node with SIGTERM.)"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Tuple

import grpc
import pytest

import hubd
import hubd.aio

from .cluster import Cluster
from .conftest import Serving

TURNS = 24  # per session


@pytest.fixture(scope="module")
def cluster(hubd_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One cluster for the module (starting one takes about 15 s): the
    tests that stop a node come last."""
    c = Cluster(hubd_bin, tmp_path_factory.mktemp("cluster"))
    try:
        yield c.start()
    finally:
        c.stop()


def _opened_on(c: Cluster, name: str) -> List[Tuple[hubd.Client, str]]:
    """One round-robin session (name, then b) opened through each node: a
    new root session lands in a partition of the node asked. Returns the
    client used and the session id, per node."""
    out = []
    for n in c.nodes:
        cl = hubd.Client(n.addr, name=name)
        s = cl.open_workflow(hubd.round_robin([name, "b"], TURNS), "b")
        out.append((cl, s.id))
    return out


def _not_owner_at(addr: str, session_id: str) -> Dict[str, str]:
    """The NOT_OWNER metadata a node answers for a session it does not
    serve (a raw call, not followed)."""
    with hubd.Client(addr, name="a") as raw:
        with pytest.raises(hubd.NotOwner) as ei:
            raw.get_session(session_id)
    assert isinstance(ei.value.__cause__, grpc.RpcError)
    _, md = hubd.errors.error_info(ei.value.__cause__.trailing_metadata())  # type: ignore[attr-defined]
    return md


def test_not_owner_over_the_stream(cluster: Cluster) -> None:
    """A client without peers sends over its agent stream to a node that
    does not serve the session: NOT_OWNER comes back per send with the same
    class, code, message and ErrorInfo metadata (owner_addr) as a Send
    call's."""
    n1 = cluster.nodes[0]
    with hubd.Client(n1.addr, name="nos-a", peers=[n.addr for n in cluster.nodes[1:]]) as a:
        sid = a.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted("nos-b")).id
        owner = a.get_session(sid)  # followed to its owner
    others = []
    for n in cluster.nodes:
        with hubd.Client(n.addr, name="nos-a") as raw:
            try:
                raw.get_session(sid)
            except hubd.NotOwner:
                others.append(n)
    assert len(others) == len(cluster.nodes) - 1 and owner.id == sid
    n2 = others[0]
    owner_addr = _not_owner_at(n2.addr, sid)["owner_addr"]
    got = []
    for transport in ("stream", "unary"):
        with hubd.Client(n2.addr, name="nos-a", transport=transport, send_attempts=1) as c:
            assert c.transport == transport
            with pytest.raises(hubd.NotOwner) as ei:
                c.send_event(sid, "app.x", client_msg_id="nos-1")
            e = ei.value
            assert isinstance(e.__cause__, grpc.RpcError)
            info = hubd.errors.error_info(e.__cause__.trailing_metadata())  # type: ignore[attr-defined]
            got.append((type(e), e.reason, e.code, e.detail, info))
    assert got[0] == got[1]
    assert got[0][4] == ("NOT_OWNER", _not_owner_at(n2.addr, sid)) and got[0][4][1]["owner_addr"] == owner_addr


def test_open_child_over_the_stream_not_owner(cluster: Cluster) -> None:
    """A client without peers opens on its agent stream, which is to one
    node: a child of a session another node serves is refused NOT_OWNER
    there, so the client opens it again with an Open call, which a node
    forwards to the owner (a gateway here: the cluster's nodes answer
    NOT_OWNER with --forward=false). Sync and asyncio."""
    if not cluster._forwards():
        pytest.skip("this hubd does not forward calls (--forward)")
    with hubd.Client(cluster.nodes[0].addr, name="oc-a") as a:
        root = a.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted("oc-b")).id
    gw = cluster.gateway("gw-oc")
    try:
        with hubd.Client(gw.addr, name="oc-a") as c:
            assert c.transport == "stream"
            child = c.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted("oc-b"), parent=root, timeout=30)
            assert child.meta.parent_session_id == root

        async def run() -> str:
            async with hubd.aio.Client(gw.addr, name="oc-a") as c:
                assert c.transport == "stream"
                s = await c.open(
                    hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted("oc-b"), parent=root, timeout=30
                )
                return s.meta.parent_session_id

        assert asyncio.run(asyncio.wait_for(run(), 60)) == root
    finally:
        gw.signal(signal.SIGKILL)


def test_aio_follows_and_serves_across_nodes(cluster: Cluster) -> None:
    c = cluster
    n1, n2, n3 = c.nodes

    async def run() -> None:
        handled: Dict[str, List[int]] = defaultdict(list)
        stop = asyncio.Event()

        async def handler(t: hubd.aio.Turn) -> hubd.Reply:
            handled[t.session_id].append(t.trigger.seq)
            return f"{t.client.name} at {t.trigger.seq}"

        peers = [n2.addr, n3.addr]
        a = await hubd.aio.connect(n1.addr, name="aio-a", peers=peers, follow_for=60)
        b = await hubd.aio.connect(n1.addr, name="aio-b", peers=peers, follow_for=60)
        tasks = [asyncio.ensure_future(cl.serve(handler, stop=stop, handle_signals=False)) for cl in (a, b)]
        # Sessions served by n2 and n3 (a new root session lands in a
        # partition of the node asked), served by agents connected to n1.
        ids = []
        for n in (n2, n3):
            async with hubd.aio.Client(n.addr, name="aio-a") as opener:
                s = await opener.open_workflow(hubd.round_robin(["aio-a", "aio-b"], TURNS), "aio-b")
                ids.append(s.id)
        for sid in ids:
            end = None
            async for e in a.follow(sid, timeout=60):
                end = e
            assert hubd.close_reason(end) == "max_turns"
            turns = [e for e in await a.read_log(sid) if hubd.is_turn(e)]
            assert len(turns) == TURNS
            assert sorted(handled[sid]) == sorted(set(handled[sid])) and len(handled[sid]) == TURNS
        stop.set()
        await asyncio.gather(*tasks)
        await a.close()
        await b.close()

    asyncio.run(asyncio.wait_for(run(), 120))


def test_merged_subscribe_carries_turn_view(cluster: Cluster) -> None:
    """A client with peers subscribes on every node (merged): the turn
    view reaches each node, so a turn of a session another node serves
    carries the receiver's view of it."""
    n1, n2, n3 = cluster.nodes
    with hubd.Client(n2.addr, name="tv-a") as a:
        s = a.open(graph=hubd.sequence("tv-a", "tv-b"), participants=hubd.auto_accepted("tv-b"))
        a.send_text(s.id, "one")
    with hubd.Client(n1.addr, name="tv-b", peers=[n2.addr, n3.addr]) as b:
        with b.subscribe(view=hubd.VIEW_FULL, terse=True, timeout=30) as stream:
            for d in stream:
                if d.your_turn and d.envelope.session_id == s.id:
                    break
        assert d.view == b.view(s.id, hubd.VIEW_FULL) and [i.text for i in d.view.items] == ["one"]


def test_serve_follows_sessions_across_nodes_kill_9(cluster: Cluster, serving: Serving) -> None:
    """SIGKILL here; the TypeScript SDK's test stops a node with SIGTERM
    (voluntary hand-back), and cmd/hubd's for the Go SDK's watch."""
    c = cluster
    sig = signal.SIGKILL
    n1, n2, n3 = c.nodes
    lock = threading.Lock()
    handled: Dict[str, List[int]] = defaultdict(list)  # per session, the trigger seqs handled
    seen: Dict[str, List[int]] = defaultdict(list)  # per session, b's deliveries
    told_again: List[bool] = []

    def handler(t: hubd.Turn) -> hubd.Reply:
        with lock:
            handled[t.session_id].append(t.trigger.seq)
        time.sleep(0.05)
        return f"{t.client.name} at {t.trigger.seq}"

    def observe(d: hubd.pb.Delivery) -> None:
        sid, seq = d.envelope.session_id, d.envelope.seq
        with lock:
            if seen[sid] and seq <= seen[sid][-1]:
                # Only a pending turn is told again (a node's stream reopened
                # tells its pending turns, as after any resubscribe).
                told_again.append((seq == seen[sid][-1]) and d.your_turn)
                return
            seen[sid].append(seq)

    # Both agents are connected to n1 and know the two others.
    peers = [n2.addr, n3.addr]
    a = hubd.Client(n1.addr, name="a", peers=peers, follow_for=60)
    b = hubd.Client(n1.addr, name="b", peers=peers, follow_for=60)
    serving.start(a, handler, backoff=(0.02, 0.5))
    serving.start(b, handler, backoff=(0.02, 0.5), observer=observe)
    opened = _opened_on(c, "a")
    ids = [sid for _, sid in opened]
    # Each session is served by the node it was opened through; n1 does not
    # serve the others, and says who does.
    for n, sid in zip(c.nodes[1:], ids[1:]):
        md = _not_owner_at(n1.addr, sid)
        assert md["owner_addr"] == n.addr and md["owner_node"] == n.id, md

    # Unary calls through n1 follow to the owner, which answers them: a
    # read, and a refusal only the owner can make.
    s2 = ids[1]
    assert a.get_session(s2).meta.session_id == s2
    assert len(a.read_log(s2)) >= 1
    with hubd.Client(n1.addr, name="mallory", peers=peers) as mallory:
        with pytest.raises(hubd.NotParticipant):
            mallory.send_text(s2, "hi")

    # A watch through n1 of the session n2 serves, live across n2's end.
    watched: List[int] = []
    w = hubd.Client(n1.addr, name="a", peers=peers, follow_for=60)
    watcher = threading.Thread(
        target=lambda: watched.extend(e.seq for e in w.follow(s2, timeout=120)), name="watch", daemon=True
    )
    watcher.start()

    def progressed(n: int) -> bool:
        with lock:
            return all(len(handled[sid]) >= n for sid in ids)

    deadline = time.monotonic() + 30
    while not progressed(4) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert progressed(4), dict(handled)

    # n2 goes away mid-conversation: its partitions move to n1 and n3.
    n2.signal(sig)
    moved = c.wait_spread([n1.id, n3.id], 60)

    for cl, sid in opened[:1] + opened[2:]:
        cl.close()
    reader = hubd.Client(n3.addr, name="a", peers=[n1.addr], follow_for=60)
    for sid in ids:
        end = None
        for e in reader.follow(sid, timeout=120):
            end = e
        assert hubd.close_reason(end) == "max_turns", sid
        log = reader.read_log(sid)
        turns = [e for e in log if hubd.is_turn(e)]
        # Every turn taken once, in order: each trigger handled once, each
        # reply written once.
        assert len(turns) == TURNS, (sid, [hubd.text_of(e) for e in turns])
        assert [hubd.sender(e) for e in turns] == ["a", "b"] * (TURNS // 2)
        with lock:
            got = sorted(handled[sid])
            b_seen = list(seen[sid])
        assert len(got) == len(set(got)) == TURNS, (sid, got)
        replies = Counter(e.client_msg_id for e in turns)
        assert set(replies.values()) == {1}
        # b saw every envelope of its log once, in order: no gap, no
        # duplicate, across the move.
        # (An agent is not sent its own envelopes.)
        assert b_seen == [e.seq for e in b.read_log(sid) if hubd.sender(e) != "b"], (sid, b_seen)
    assert all(told_again), told_again
    watcher.join(30)
    assert not watcher.is_alive()
    assert watched == [e.seq for e in w.read_log(s2)], watched
    print(f"n2 stopped with {signal.Signals(sig).name}: partitions moved in {moved:.1f}s")
    serving.close()
    for cl in (a, b, w, reader):
        cl.close()
