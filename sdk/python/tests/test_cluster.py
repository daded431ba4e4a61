"""The SDK in a hubd cluster (docs/SCALING.md): three real hubd nodes on
loopback, each with its embedded NATS server. A client of one node, which
knows nothing of the cluster, works with every session: the node runs its
calls, its sends and opens where their sessions are served, delivers its
stream from every node and follows a watched session; a node then dies
(SIGKILL) and the served agents carry on with no gap and no duplicate in
what they saw. (The TypeScript SDK's test stops a node with SIGTERM.)"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest

import hubd
import hubd.aio

from .cluster import PARTITIONS, Cluster
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


def _partition(root: str) -> int:
    """The partition of a tree, from its root's id (wal/jetstream.Partition:
    FNV-1a of the id's 16 bytes, mod P)."""
    h = 0x811C9DC5
    for b in uuid.UUID(root).bytes:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h % PARTITIONS


def test_stream_and_unary_through_any_node(cluster: Cluster) -> None:
    """A client of a node that does not serve a session sends to it over
    its agent stream and with a Send call: the node runs both on the
    owner, and the same client message id is written once."""
    n1, n2, _ = cluster.nodes
    with hubd.Client(n2.addr, name="su-a") as opener:
        sid = opener.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted("su-b")).id
    acks = []
    for transport in ("stream", "unary"):
        with hubd.Client(n1.addr, name="su-a", transport=transport) as c:
            assert c.transport == transport
            acks.append(c.send_event(sid, "app.x", client_msg_id="su-1").seq)
            assert c.get_session(sid).id == sid
    assert acks[0] == acks[1]
    with hubd.Client(n1.addr, name="su-a") as c:
        assert [e.seq for e in c.read_log(sid) if e.client_msg_id == "su-1"] == [acks[0]]


def test_open_child_over_the_stream(cluster: Cluster) -> None:
    """A client opens on its agent stream a child of a session another
    node serves: the node runs the open on the parent's owner. Sync and
    asyncio."""
    with hubd.Client(cluster.nodes[0].addr, name="oc-a") as a:
        root = a.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted("oc-b")).id
    via = cluster.nodes[1].addr
    with hubd.Client(via, name="oc-a") as c:
        assert c.transport == "stream"
        child = c.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted("oc-b"), parent=root, timeout=30)
        assert child.meta.parent_session_id == root

    async def run() -> str:
        async with hubd.aio.Client(via, name="oc-a") as c:
            assert c.transport == "stream"
            s = await c.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted("oc-b"), parent=root, timeout=30)
            return s.meta.parent_session_id

    assert asyncio.run(asyncio.wait_for(run(), 60)) == root


def test_aio_serves_across_nodes(cluster: Cluster) -> None:
    c = cluster
    n1, n2, n3 = c.nodes

    async def run() -> None:
        handled: Dict[str, List[int]] = defaultdict(list)
        stop = asyncio.Event()

        async def handler(t: hubd.aio.Turn) -> hubd.Reply:
            handled[t.session_id].append(t.trigger.seq)
            return f"{t.client.name} at {t.trigger.seq}"

        a = await hubd.aio.connect(n1.addr, name="aio-a")
        b = await hubd.aio.connect(n1.addr, name="aio-b")
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
    """A subscription through one node gathers every node's (merged): the
    turn view reaches each node, so a turn of a session another node
    serves carries the receiver's view of it."""
    n1, n2, n3 = cluster.nodes
    with hubd.Client(n2.addr, name="tv-a") as a:
        s = a.open(graph=hubd.sequence("tv-a", "tv-b"), participants=hubd.auto_accepted("tv-b"))
        a.send_text(s.id, "one")
    with hubd.Client(n1.addr, name="tv-b") as b:
        with b.subscribe(view=hubd.VIEW_FULL, terse=True, timeout=30) as stream:
            for d in stream:
                if d.your_turn and d.envelope.session_id == s.id:
                    break
        assert d.view == b.view(s.id, hubd.VIEW_FULL) and [i.text for i in d.view.items] == ["one"]


def test_serve_across_nodes_kill_9(cluster: Cluster, serving: Serving) -> None:
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

    # Both agents are connected to n1 alone.
    a = hubd.Client(n1.addr, name="a")
    b = hubd.Client(n1.addr, name="b")
    serving.start(a, handler, backoff=(0.02, 0.5))
    serving.start(b, handler, backoff=(0.02, 0.5), observer=observe)
    opened = _opened_on(c, "a")
    ids = [sid for _, sid in opened]
    # Each session is served by the node it was opened through.
    owners = c.owners(n1)
    for n, sid in zip(c.nodes, ids):
        assert owners[_partition(sid)] == n.id, (owners, sid)

    # Unary calls through n1 run on the owner, which answers them: a
    # read, and a refusal only the owner can make.
    s2 = ids[1]
    assert a.get_session(s2).meta.session_id == s2
    assert len(a.read_log(s2)) >= 1
    with hubd.Client(n1.addr, name="mallory") as mallory:
        with pytest.raises(hubd.NotParticipant):
            mallory.send_text(s2, "hi")

    # A watch through n1 of the session n2 serves, live across n2's end.
    watched: List[int] = []
    w = hubd.Client(n1.addr, name="a")
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
    reader = hubd.Client(n3.addr, name="a")
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
