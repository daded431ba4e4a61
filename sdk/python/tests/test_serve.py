"""The sync agent loop: Client.serve against the real hub."""

from __future__ import annotations

import logging
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from typing import Callable, Dict, List

import pytest

import hubd

from .conftest import SDK, Hub, Names, Serving, transcript
from .wire import Received

Connect = Callable[..., hubd.Client]


def test_pipeline(connect: Connect, names: Names, serving: Serving) -> None:
    r, w, e = connect(names("researcher")), connect(names("writer")), connect(names("editor"))
    views: List[int] = []

    def researcher(t: hubd.Turn) -> hubd.Reply:
        assert t.trigger.type == hubd.EVENT_OPENED and t.client is r
        return "Findings: group commit batches the fsyncs of concurrent sends."

    def writer(t: hubd.Turn) -> hubd.Reply:
        return "Draft: durable writes stay fast because " + t.text.removeprefix("Findings: ").rstrip(".") + "."

    def editor(t: hubd.Turn) -> hubd.Reply:
        assert t.view is not None
        views.append(len(t.view.items))
        return f"Approved after reading {len(t.view.items)} turns."

    for c, h in ((r, researcher), (w, writer), (e, editor)):
        serving.start(c, h)
    s = r.open_workflow(
        hubd.sequence(names("researcher"), names("writer"), names("editor")), names("writer"), names("editor")
    )
    turns, reason = transcript(r, s.id)
    assert turns == [
        f"{names('researcher')}: Findings: group commit batches the fsyncs of concurrent sends.",
        f"{names('writer')}: Draft: durable writes stay fast because group commit batches the fsyncs of concurrent sends.",
        f"{names('editor')}: Approved after reading 2 turns.",
    ]
    assert reason == "sequence_complete" and views == [2]
    # Every reply carries the turn's client message id and its cause.
    log = r.read_log(s.id)
    for env in log:
        if hubd.is_turn(env):
            cause = next(x for x in log if x.id == env.causation_id)
            assert env.client_msg_id == hubd.turn_msg_id(s.id, cause.seq)


def test_packets_and_views(connect: Connect, names: Names, serving: Serving) -> None:
    lead, router, billing = connect(names("lead")), connect(names("router")), connect(names("billing"))
    seen: Dict[str, object] = {}

    def route(t: hubd.Turn) -> hubd.Reply:
        seen["router_view"] = t.view
        if t.trigger.type == hubd.EVENT_OPENED:
            return hubd.Packet("over to billing").handoff(tool="transfer_to_" + names("billing")).set("topic", "refund")
        return hubd.Packet("all done").finish("resolved", "refunded")

    def bill(t: hubd.Turn) -> hubd.Reply:
        assert t.view is not None and [i.text for i in t.view.items] == ["over to billing"]
        return hubd.Packet("refunded").with_usage(input_tokens=3, output_tokens=4)

    serving.start(router, route, view=None)
    serving.start(billing, bill, view=hubd.VIEW_LAST)
    s = lead.open(
        graph=hubd.supervisor(names("router"), [names("billing")]),
        participants=[names("router"), names("billing")],
    )
    turns, reason = transcript(lead, s.id)
    assert turns == [
        f"{names('router')}: over to billing",
        f"{names('billing')}: refunded",
        f"{names('router')}: all done",
    ]
    assert reason == "resolved" and seen["router_view"] is None
    info = lead.get_session(s.id)
    assert info.var("topic") == "refund" and info.usage.output_tokens == 4


def test_turns_of_sessions_run_concurrently(connect: Connect, names: Names, serving: Serving) -> None:
    alice, bob = connect(names("alice")), connect(names("bob"))
    both = threading.Barrier(2, timeout=10)
    lock = threading.Lock()
    running: Counter[str] = Counter()
    overlap: List[str] = []

    def handler(t: hubd.Turn) -> hubd.Reply:
        with lock:
            running[t.session_id] += 1
            if running[t.session_id] > 1:
                overlap.append(t.session_id)
        try:
            both.wait()  # passes only when both sessions' turns run at once
            return "done " + t.text
        finally:
            with lock:
                running[t.session_id] -= 1

    serving.start(bob, handler)
    ids = [
        alice.open(graph=hubd.sequence(names("alice"), names("bob")), participants=hubd.auto_accepted(names("bob"))).id
        for _ in range(2)
    ]
    for i, sid in enumerate(ids):
        alice.send_text(sid, f"job {i}")
    for i, sid in enumerate(ids):
        assert transcript(alice, sid) == (
            [f"{names('alice')}: job {i}", f"{names('bob')}: done job {i}"],
            "sequence_complete",
        )
    assert overlap == []


def test_nothing_posted_until_a_new_serve(connect: Connect, names: Names, caplog: pytest.LogCaptureFixture) -> None:
    alice, bob = connect(names("alice")), connect(names("bob"))
    s = alice.open(graph=hubd.sequence(names("alice"), names("bob")), participants=hubd.auto_accepted(names("bob")))
    alice.send_text(s.id, "work")
    calls: List[str] = []
    for outcome in ("none", "raise"):
        done, stop = threading.Event(), threading.Event()

        def handler(t: hubd.Turn) -> hubd.Reply:
            calls.append(outcome)
            done.set()
            if outcome == "raise":
                raise RuntimeError("the model is down")
            return None

        th = threading.Thread(target=bob.serve, args=(handler,), kwargs={"stop": stop})
        with caplog.at_level(logging.INFO, logger="hubd"):
            th.start()
            assert done.wait(10)
            stop.set()
            th.join(10)
        assert not th.is_alive()
        assert alice.get_session(s.id).expected == [names("bob")]  # still bob's turn
    assert calls == ["none", "raise"]
    assert "the model is down" in caplog.text
    stop = threading.Event()
    th = threading.Thread(target=bob.serve, args=(lambda t: "at last",), kwargs={"stop": stop})
    th.start()
    try:
        assert transcript(alice, s.id)[0][-1] == f"{names('bob')}: at last"
    finally:
        stop.set()
        th.join(10)


def test_invites(connect: Connect, names: Names, serving: Serving) -> None:
    alice, bob = connect(names("alice")), connect(names("bob"))
    asked: List[hubd.Invite] = []

    def decide(inv: hubd.Invite) -> hubd.InviteDecision:
        asked.append(inv)
        info = bob.get_session(inv.session_id)
        return None if info.type == hubd.TYPE_WORKFLOW else "workflows only"

    serving.start(bob, lambda t: "hello", invites=decide)
    conv = alice.open(hubd.TYPE_CONVERSATION, participants=[names("bob")])
    assert transcript(alice, conv.id) == ([], "invite_rejected")
    reject = [e for e in alice.read_log(conv.id) if e.type == hubd.EVENT_INVITE_REJECT][0]
    assert reject.ended.reason == "workflows only"
    wf = alice.open_workflow(hubd.sequence(names("bob")), names("bob"))
    assert transcript(alice, wf.id) == ([f"{names('bob')}: hello"], "sequence_complete")
    assert [i.session_id for i in asked] == [conv.id, wf.id] and asked[1].invitees == [names("bob")]


class _Watch(logging.Handler):
    """Sets an event when a log record says what it waits for."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.seen.set()


def test_stale_turn_is_dropped(hub: Hub, names: Names, serving: Serving, caplog: pytest.LogCaptureFixture) -> None:
    bob_log = logging.getLogger(f"hubd.{names('bob')}")
    stale = _Watch("stale turn")
    bob_log.addHandler(stale)
    alice = hubd.Client(hub.addr, name=names("alice"))
    bob = hubd.Client(hub.addr, name=names("bob"), logger=bob_log)
    carol = hubd.Client(hub.addr, name=names("carol"))
    calls: List[str] = []

    def handler(t: hubd.Turn) -> hubd.Reply:
        calls.append(t.client.name)
        if t.client is bob:  # bob answers by hand: the reply serve posts is stale
            bob.send_text(t.session_id, "by hand")
            return "too late"
        if t.client is carol:  # only once bob's stale reply was refused
            assert stale.seen.wait(10)
        return "from " + t.client.name

    caplog.set_level(logging.INFO, logger="hubd")
    for c in (alice, bob, carol):
        serving.start(c, handler, view=None)
    s = alice.open(
        graph=hubd.sequence(names("alice"), names("bob"), names("carol")),
        participants=hubd.auto_accepted(names("bob"), names("carol")),
    )
    turns, reason = transcript(alice, s.id)
    assert turns == [
        f"{names('alice')}: from {names('alice')}",
        f"{names('bob')}: by hand",
        f"{names('carol')}: from {names('carol')}",
    ]
    assert reason == "sequence_complete" and calls == [names("alice"), names("bob"), names("carol")]
    records = [r for r in caplog.records if "stale turn" in r.getMessage()]
    assert records and "OUT_OF_TURN" in records[0].getMessage() and records[0].levelno == logging.INFO
    assert records[0].name == bob_log.name
    serving.close()
    bob_log.removeHandler(stale)
    for c in (alice, bob, carol):
        c.close()


def test_bad_reply_is_logged(
    connect: Connect, names: Names, serving: Serving, caplog: pytest.LogCaptureFixture
) -> None:
    alice, bob = connect(names("alice")), connect(names("bob"))
    caplog.set_level(logging.INFO, logger="hubd")
    turned = threading.Event()

    def handler(t: hubd.Turn) -> hubd.Reply:
        turned.set()
        return 42  # type: ignore[return-value]

    serving.start(bob, handler, view=None)
    s = alice.open(graph=hubd.sequence(names("alice"), names("bob")), participants=hubd.auto_accepted(names("bob")))
    alice.send_text(s.id, "hi")
    assert turned.wait(10)
    serving.close()  # waits for the handler and what follows it
    assert "not int" in caplog.text
    assert alice.get_session(s.id).expected == [names("bob")]


def test_ended_session_cancels_its_turn(connect: Connect, names: Names, serving: Serving) -> None:
    alice, bob = connect(names("alice")), connect(names("bob"))
    started, told = threading.Event(), threading.Event()

    def handler(t: hubd.Turn) -> hubd.Reply:
        started.set()
        if t.cancelled.wait(10):  # a long handler may give up when told
            told.set()
        return "too late"

    serving.start(bob, handler, view=None)
    s = alice.open(graph=hubd.sequence(names("alice"), names("bob")), participants=hubd.auto_accepted(names("bob")))
    alice.send_text(s.id, "work")
    assert started.wait(10)
    alice.close_session(s.id, "never mind")
    assert told.wait(10)
    serving.close()
    assert [hubd.sender(e) for e in alice.read_log(s.id) if hubd.is_turn(e)] == [names("alice")]


TERSE = ["text [your turn]", "session_closed"]
EVERYTHING = ["session_invite", "session_opened", "note", "text [your turn]", "text", "session_closed"]


@pytest.mark.parametrize(
    "transport, observe, want",
    [("stream", False, TERSE), ("unary", False, TERSE), ("stream", True, EVERYTHING)],
    ids=["stream", "unary", "observer"],
)
def test_terse(
    connect: Connect, names: Names, serving: Serving, transport: str, observe: bool, want: List[str]
) -> None:
    """Without an observer, serve's stream brings the agent only what it
    acts on (its turn and the session's end, not the invite that does not
    name it, the opening, a note or the others' texts), over either
    transport; on_session_end is told of the end; an observer brings
    everything addressed to the agent."""
    wire = Received()
    alice, carol = connect(names("alice")), connect(names("carol"))
    with wire.dialing():
        bob = connect(names("bob"), transport=transport)
    ended: "queue.Queue[hubd.pb.Envelope]" = queue.Queue()
    observed: List[str] = []
    kw: Dict[str, object] = {"observer": lambda d: observed.append(d.envelope.type)} if observe else {}
    serving.start(bob, lambda t: "from bob", on_session_end=ended.put, **kw)
    serving.start(carol, lambda t: "from carol")
    s = alice.open(
        graph=hubd.sequence(names("alice"), names("bob"), names("carol")),
        participants=hubd.auto_accepted(names("bob"), names("carol")),
    )
    alice.send_event(s.id, "note", b"aside")
    alice.send_text(s.id, "go")
    e = ended.get(timeout=20)
    assert (e.session_id, e.type) == (s.id, hubd.EVENT_CLOSED)
    assert wire.get() == want
    if observe:
        assert observed == ["session_invite", "session_opened", "note", "text", "text", "session_closed"]
    serving.close()
    assert bob.transport == transport and ended.empty()


AGENT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {sdk!r})
    import hubd
    c = hubd.Client({addr!r}, name={name!r})
    print("serving", flush=True)
    c.serve(lambda t: "pong")
    print("stopped", flush=True)
    """
)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stops_on_signal(hub: Hub, connect: Connect, names: Names, sig: signal.Signals) -> None:
    alice = connect(names("alice"))
    code = AGENT.format(sdk=str(SDK), addr=hub.addr, name=names("bob"))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "serving\n"
        s = alice.open(graph=hubd.sequence(names("alice"), names("bob")), participants=[names("bob")])
        for d in alice.subscribe({s.id: 0}, timeout=20):
            if d.your_turn:
                alice.send_text(s.id, "ping")
                break
        assert transcript(alice, s.id) == ([f"{names('alice')}: ping", f"{names('bob')}: pong"], "sequence_complete")
    finally:
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    assert out == "stopped\n", err


def test_slow_subscriber(hub_factory: Callable[..., Hub], serving: Serving) -> None:
    """An agent that stops reading is cut off by the hub (SLOW_SUBSCRIBER);
    serve resubscribes from its cursor, sees every envelope once, and still
    takes the turn that was lost with the stream."""
    h = hub_factory("--subscriber-buffer", "1")
    alice = hubd.Client(h.addr, name="alice")
    # No BDP probing: a reader that stops stalls the hub within a 64 KiB window.
    bob = hubd.Client(
        h.addr, name="bob", channel_options=[("grpc.http2.bdp_probe", 0), ("grpc.http2.lookahead_bytes", 1 << 16)]
    )
    blocked, release, ended = threading.Event(), threading.Event(), threading.Event()
    seen: List[hubd.pb.Delivery] = []
    reconnects: List[hubd.HubError] = []
    calls: List[int] = []

    def observe(d: hubd.pb.Delivery) -> None:
        seen.append(d)
        if hubd.ends(d.envelope):
            ended.set()
        if d.envelope.type == "note" and d.envelope.custom == b"\x01":
            blocked.set()
            assert release.wait(30)

    def handler(t: hubd.Turn) -> hubd.Reply:
        calls.append(t.seq)
        return "got " + t.text

    serving.start(bob, handler, observer=observe, on_reconnect=reconnects.append, view=None, backoff=(0.02, 0.5))
    s = alice.open(graph=hubd.sequence("alice", "bob"), participants=hubd.auto_accepted("bob"))
    alice.send_event(s.id, "note", b"\x01")
    assert blocked.wait(20)
    big = b"x" * (32 << 10)
    for _ in range(40):
        alice.send_event(s.id, "note", big)
    alice.send_text(s.id, "the report")
    deadline = time.monotonic() + 20
    while "slow subscriber cut off" not in h.log.read_text():
        assert time.monotonic() < deadline, "the hub never cut bob off"
        time.sleep(0.05)
    release.set()
    turns, reason = transcript(alice, s.id)
    assert ended.wait(20)
    assert turns == ["alice: the report", "bob: got the report"] and reason == "sequence_complete"
    assert len(calls) == 1
    assert reconnects and isinstance(reconnects[0], hubd.SlowSubscriber) and reconnects[0].reason == "SLOW_SUBSCRIBER"
    # Every envelope bob may see, once, in order (a turn may be told again).
    want = [e.seq for e in bob.read_log(s.id) if hubd.sender(e) != "bob"]
    have: List[int] = []
    for d in seen:
        if have and d.envelope.seq <= have[-1]:
            assert d.your_turn, f"seq {d.envelope.seq} delivered again after {have[-1]}"
            continue
        have.append(d.envelope.seq)
    assert have == want
    serving.close()
    alice.close()
    bob.close()


def test_session_filter(connect: Connect, names: Names, serving: Serving) -> None:
    """serve(session_filter=) acts in the sessions the filter keeps only:
    sessions another client opened with the agent (one inviting it, one in
    which it speaks first, before it serves and while it does) get no
    acknowledgement, no reply and no handler call; the filter is asked once
    per session, with the session's labels."""
    A, B, P = names("alice"), names("bob"), names("person")
    alice, bob, person = connect(A), connect(B), connect(P)
    invited = person.open_workflow(hubd.sequence(P, B), B)
    first = person.open(graph=hubd.sequence(B, P), participants=hubd.auto_accepted(B))

    asked: "queue.Queue[str]" = queue.Queue()
    handled: List[str] = []

    def keep(s: hubd.Session) -> bool:
        asked.put(s.id)
        return s.labels.get("run") == "ours"

    def handler(c: hubd.Client) -> hubd.Handler:
        def h(t: hubd.Turn) -> hubd.Reply:
            handled.append(f"{c.name} in {t.session_id}")
            return f"from {c.name}"

        return h

    for c in (alice, bob):
        serving.start(c, handler(c), session_filter=keep)
    later = person.open(graph=hubd.sequence(B, P), participants=hubd.auto_accepted(B))
    ours = alice.open(graph=hubd.sequence(A, B), participants=[B], labels={"run": "ours"})
    turns, reason = transcript(alice, ours.id)
    assert turns == [f"{A}: from {A}", f"{B}: from {B}"] and reason == "sequence_complete"

    # serve has seen the other sessions once the filter was asked about them.
    foreign = [invited.id, first.id, later.id]
    seen: List[str] = []
    deadline = time.monotonic() + 10
    while not set(foreign) <= set(seen):
        seen.append(asked.get(timeout=max(0.0, deadline - time.monotonic())))
    serving.close()
    while not asked.empty():
        seen.append(asked.get())
    assert Counter(seen) == {invited.id: 1, first.id: 1, later.id: 1, ours.id: 2}, seen
    for sid in foreign:
        acted = [e for e in person.read_log(sid) if hubd.sender(e) == B]
        assert not acted, f"{B} acted in {sid}, a session its filter refused: {acted}"
    assert sorted(handled) == sorted([f"{A} in {ours.id}", f"{B} in {ours.id}"])
    assert person.get_session(invited.id).state == hubd.STATE_PENDING  # left to another client named B
