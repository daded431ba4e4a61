"""Every call of the sync client against the real hub."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any, Callable, Dict, List, Tuple

import grpc
import pytest

import hubd
from hubd import pb

from .conftest import Hub, Names, free_port

Connect = Callable[..., hubd.Client]


def pipeline(c: hubd.Client, names: Names) -> hubd.Session:
    """alice → bob → carol, bob and carol auto-accepted: open at once."""
    s = c.open(
        hubd.TYPE_WORKFLOW,
        graph=hubd.sequence(names("alice"), names("bob"), names("carol")),
        participants=hubd.auto_accepted(names("bob"), names("carol")),
    )
    assert s.state == hubd.STATE_OPEN
    return s


def test_connect_and_close(hub: Hub, names: Names) -> None:
    with hubd.connect(hub.addr, name=names("alice")) as c:
        assert c.name == names("alice") and c.target == hub.addr
        assert c.metadata == ((hubd.AGENT_HEADER, names("alice")),) and hubd.AGENT_HEADER == "x-hubd-agent"
        assert c.list_sessions().sessions == []
        # The raw stub works with the client's metadata.
        resp = c.raw.ListSessions(pb.ListSessionsRequest(), metadata=c.metadata)
        assert list(resp.sessions) == []
    with pytest.raises(ValueError):  # the channel is closed
        c.list_sessions()


def test_connect_refusals() -> None:
    with pytest.raises(ValueError, match="name, a token"):
        hubd.Client("127.0.0.1:1")
    with pytest.raises(ValueError, match="plaintext"):
        hubd.Client("hub.example.com:7420", token="secret-secret-secret")
    # On a trusted network the caller may allow it.
    hubd.Client("hub.example.com:7420", token="secret-secret-secret", insecure=True, connect_timeout=None).close()
    with pytest.raises(ValueError, match="cert and key"):
        hubd.Client("127.0.0.1:1", name="a", tls=hubd.TLS(cert=b"x"))
    port = free_port()  # nobody listens
    with pytest.raises(hubd.Unavailable) as e:
        hubd.Client(f"127.0.0.1:{port}", name="a", connect_timeout=0.3)
    assert e.value.reason == "" and e.value.op == "connect"


def test_lazy_connect_then_unavailable(caplog: pytest.LogCaptureFixture) -> None:
    mine = logging.getLogger("my-agent")
    c = hubd.Client(f"127.0.0.1:{free_port()}", name="a", connect_timeout=None, send_attempts=2, logger=mine)
    with caplog.at_level(logging.INFO, logger="my-agent"):
        with pytest.raises(hubd.Unavailable) as e:
            c.send_text("01900000-0000-7000-8000-000000000000", "anyone?")
    assert e.value.code == grpc.StatusCode.UNAVAILABLE and e.value.reason == ""
    assert e.value.retryable
    # The retry was logged to the client's logger.
    assert [r.name for r in caplog.records if "retrying (1/2)" in r.getMessage()] == ["my-agent"]
    c.close()


def test_open_request() -> None:
    req = hubd.open_request(
        hubd.TYPE_DISCUSSION,
        participants=["b", *hubd.auto_accepted("c")],
        knobs={"max_turns": 4},
        ttl=timedelta(minutes=5),
        expectations=[],
        parent="p",
        idempotency_key="k",
    )
    assert req.type == "discussion@1" and [(p.name, p.auto_accept) for p in req.participants] == [
        ("b", False),
        ("c", True),
    ]
    assert hubd.from_value(req.knobs["max_turns"]) == 4 and req.ttl.seconds == 300
    assert req.HasField("expectations") and list(req.expectations.items) == []  # none, not the defaults
    assert req.parent_session_id == "p" and req.idempotency_key == "k" and not req.HasField("graph")
    assert not hubd.open_request().HasField("expectations") and hubd.open_request().type == hubd.TYPE_WORKFLOW


def test_open_every_type(connect: Connect, names: Names) -> None:
    alice = connect(names("alice"))
    wf = alice.open_workflow(hubd.sequence(names("alice"), names("bob")), names("bob"))
    assert wf.type == hubd.TYPE_WORKFLOW and wf.state == hubd.STATE_PENDING
    assert wf.participants == [names("alice"), names("bob")] and wf.creator == names("alice")
    conv = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(names("bob")))
    assert conv.type == hubd.TYPE_CONVERSATION and conv.state == hubd.STATE_OPEN
    disc = alice.open(hubd.TYPE_DISCUSSION, participants=hubd.auto_accepted(names("bob"), names("carol")))
    assert disc.type == hubd.TYPE_DISCUSSION and disc.participants == [names("alice"), names("bob"), names("carol")]
    cons = alice.open(hubd.TYPE_CONSULTING, participants=hubd.auto_accepted(names("bob")))
    assert cons.type == hubd.TYPE_CONSULTING
    # Turns follow each type's rules: a discussion is a round from the creator.
    assert alice.get_session(disc.id).expected == [names("alice")]
    for s in (wf, conv, disc, cons):
        alice.close_session(s.id)


def test_open_options(connect: Connect, names: Names) -> None:
    alice = connect(names("alice"))
    g = hubd.graph.Graph(names("alice")).on(hubd.graph.always(), hubd.graph.to_agent(names("bob")))
    options: Dict[str, Any] = dict(
        participants=[pb.Participant(name=names("bob"), role="member", auto_accept=True)],
        knobs={"max_handoffs": 2, "context": {"topic": "refund", "n": 1}},
        labels={"team": "support"},
        ttl=3600,
        invite_timeout=60,
        expectations=[hubd.expect("turn_within", 600, "warn")],
        idempotency_key="k1",
    )
    s = alice.open(graph=g.to_dict(), **options)  # the JSON form works as well as a Graph
    assert not s.existing
    again = alice.open(graph=g, **options)  # a retry
    assert again.existing and again.id == s.id
    # The key again with other parameters is no retry.
    with pytest.raises(hubd.IdempotencyConflict, match="differs in participants"):
        alice.open(graph=g, participants=hubd.auto_accepted(names("bob")), idempotency_key="k1")
    info = alice.get_session(s.id)
    assert info.labels == {"team": "support"}
    assert info.meta.ttl.seconds == 3600 and info.meta.invite_timeout.seconds == 60
    assert [(e.name, e.within.seconds, e.action) for e in info.meta.expectations] == [("turn_within", 600, "warn")]
    assert info.context == {"topic": "refund", "n": 1}
    assert info.var("topic") == "refund" and info.var("missing", 7) == 7
    assert hubd.from_value(info.meta.knobs["max_handoffs"]) == 2
    assert info.meta.participants[1].role == "member"
    with pytest.raises(ValueError, match="knob"):
        alice.open(knobs={"bad": float("nan")})


def test_invites(connect: Connect, names: Names) -> None:
    alice, bob, carol = connect(names("alice")), connect(names("bob")), connect(names("carol"))
    s = alice.open(participants=[names("bob")], graph=hubd.sequence(names("alice"), names("bob")))
    assert s.state == hubd.STATE_PENDING
    ack = bob.ack_invite(s.id)
    assert ack.seq > 0 and not ack.closed
    assert alice.get_session(s.id).state == hubd.STATE_OPEN
    r = alice.open(hubd.TYPE_CONVERSATION, participants=[names("carol")])
    ack = carol.reject_invite(r.id, "busy")
    assert ack.closed and ack.close_reason == "invite_rejected"
    got = alice.get_session(r.id)
    assert got.ended and got.close_reason == "invite_rejected"
    log = alice.read_log(r.id)
    reject = [e for e in log if e.type == hubd.EVENT_INVITE_REJECT]
    assert reject and reject[0].ended.reason == "busy"


def test_send_and_read(connect: Connect, names: Names) -> None:
    alice, bob, carol = connect(names("alice")), connect(names("bob")), connect(names("carol"))
    s = pipeline(alice, names)
    a1 = alice.send_text(s.id, "findings", client_msg_id="a-1", traceparent="00-" + "1" * 32 + "-" + "2" * 16 + "-01")
    assert a1.client_msg_id == "a-1" and a1.seq > 0 and a1.accepted_at is not None and not a1.duplicate
    again = alice.send_text(s.id, "findings", client_msg_id="a-1")
    assert again.duplicate and again.seq == a1.seq and again.id == a1.id and again.accepted_at == a1.accepted_at
    ctx = bob.set_context(s.id, {"ticket": 4711, "tags": ["a", "b"]})
    assert ctx.client_msg_id.startswith("m-")
    bob.update_context(s.id, set={"stage": "draft"}, delete=["tags"])
    ev = bob.send_event(s.id, "note", b"\x00\x01", audience=[names("carol")])
    p = (
        hubd.Packet("draft")
        .set("approved", False)
        .delete("stage")
        .with_usage(input_tokens=10, output_tokens=5, cost_usd=0.25)
    )
    b1 = bob.send_packet(s.id, p, causation_id=a1.id)
    raw = pb.Envelope(type="task_progress", task_progress=pb.TaskProgress(task="edit", percent=50))
    carol.send(s.id, raw)
    assert not raw.client_msg_id  # the caller's envelope is not modified
    fin = carol.send_packet(s.id, hubd.Packet("done").finish("approved", "shipped"))
    assert fin.closed and fin.close_reason == "approved"

    log = alice.read_log(s.id)
    by_seq = {e.seq: e for e in log}
    assert [e.seq for e in log] == sorted(by_seq) and log[0].seq == 1
    e1 = by_seq[a1.seq]
    assert hubd.sender(e1) == names("alice") and hubd.text_of(e1) == "findings" and e1.client_msg_id == "a-1"
    assert e1.traceparent.startswith("00-1111")
    pk = by_seq[b1.seq]
    assert pk.type == hubd.EVENT_PACKET and pk.causation_id == a1.id
    assert hubd.from_value(pk.packet.context_updates.set["approved"]) is False
    assert list(pk.packet.context_updates.delete) == ["stage"]
    assert pk.packet.usage.input_tokens == 10 and pk.packet.usage.cost_usd == 0.25
    # The audience of the note is carol: alice (not in it) does not see it,
    # carol and the sender do.
    assert ev.seq not in by_seq
    assert any(e.seq == ev.seq and e.custom == b"\x00\x01" for e in carol.read_log(s.id))
    assert by_seq[fin.seq].packet.routing.kind == hubd.ROUTING_FINISH
    assert hubd.ends(log[-1]) and hubd.close_reason(log[-1]) == "approved"
    ctx_env = by_seq[ctx.seq]
    assert ctx_env.type == hubd.EVENT_CONTEXT_SET and hubd.from_value(ctx_env.context_set.set["ticket"]) == 4711

    info = alice.get_session(s.id)
    assert info.ended and info.close_reason == "approved" and info.turn == 3
    assert info.var("ticket") == 4711 and info.var("approved") is False and info.var("stage") is None
    assert info.usage.output_tokens == 5

    # Ranges of the log.
    part = alice.read_log(s.id, from_seq=2, limit=2)
    assert [e.seq for e in part] == [2, 3]


def test_handoff_and_escalate(connect: Connect, names: Names) -> None:
    lead, router, billing = connect(names("lead")), connect(names("router")), connect(names("billing"))
    g = hubd.supervisor(names("router"), [names("billing")])
    s = lead.open(
        graph=g,
        participants=hubd.auto_accepted(names("router"), names("billing")),
        knobs={"supervisor": names("lead")},
    )
    # The router speaks first (initial speaker), hands off by tool.
    router.send_packet(s.id, hubd.Packet("over to billing").handoff(tool="transfer_to_" + names("billing")))
    assert lead.get_session(s.id).expected == [names("billing")]
    billing.send_packet(s.id, hubd.Packet("help!").escalate("stuck"))
    assert lead.get_session(s.id).expected == [names("lead")]
    lead.send_packet(s.id, hubd.Packet("billing, go on").handoff(target=names("billing")))
    assert lead.get_session(s.id).expected == [names("billing")]


def test_views(connect: Connect, names: Names) -> None:
    alice, bob, carol = connect(names("alice")), connect(names("bob")), connect(names("carol"))
    s = pipeline(alice, names)
    alice.send_text(s.id, "one")
    bob.send_text(s.id, "two")
    full = carol.view(s.id, hubd.VIEW_FULL)
    assert full.name == "full" and [(hubd.sender(i), i.text) for i in full.items] == [
        (names("alice"), "one"),
        (names("bob"), "two"),
    ]
    last = carol.view(s.id, hubd.VIEW_LAST)
    assert [i.text for i in last.items] == ["two"]
    win = carol.view(s.id, hubd.VIEW_WINDOWED, window=1)
    assert [i.text for i in win.items] == ["two"] and win.older_total == 1
    assert [(c.speaker, c.count) for c in win.older] == [(names("alice"), 1)]
    assert len(carol.view(s.id).items) == 2  # the default


def test_list_sessions(connect: Connect, names: Names) -> None:
    alice, bob = connect(names("alice")), connect(names("bob"))
    ids = []
    for i in range(3):
        s = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(names("bob")), labels={"i": str(i)})
        ids.append(s.id)
    alice.close_session(ids[0], "done")
    page = alice.list_sessions()
    assert [s.id for s in page.sessions] == ids and page.next_page_token == ""
    assert [s.id for s in alice.list_sessions(state=hubd.STATE_OPEN).sessions] == ids[1:]
    closed = alice.list_sessions(state=hubd.STATE_CLOSED).sessions
    assert [(s.id, s.close_reason) for s in closed] == [(ids[0], "done")]
    assert [s.id for s in bob.list_sessions(labels={"i": "2"}).sessions] == [ids[2]]
    assert [s.id for s in bob.list_sessions(creator=names("alice"), participant=names("bob")).sessions] == ids
    first = alice.list_sessions(page_size=2)
    assert len(first.sessions) == 2 and first.next_page_token
    rest = alice.list_sessions(page_size=2, page_token=first.next_page_token)
    assert [s.id for s in first.sessions + rest.sessions] == ids and rest.next_page_token == ""
    sessions, token = rest  # a page unpacks
    assert token == ""
    operator = connect("operator")
    assert set(ids) <= {s.id for s in operator.list_sessions(creator=names("alice")).sessions}


def test_pending_turns(connect: Connect, names: Names) -> None:
    alice, bob = connect(names("alice")), connect(names("bob"))
    s = pipeline(alice, names)
    turns = alice.pending_turns()
    assert [(d.envelope.session_id, d.your_turn) for d in turns] == [(s.id, True)]
    assert turns[0].envelope.type == hubd.EVENT_OPENED
    assert bob.pending_turns() == []
    alice.send_text(s.id, "go")
    (t,) = bob.pending_turns()
    assert hubd.text_of(t.envelope) == "go"


def test_subscribe(connect: Connect, names: Names) -> None:
    alice, bob = connect(names("alice")), connect(names("bob"))
    s = alice.open(graph=hubd.sequence(names("alice"), names("bob")), participants=[names("bob")])
    seen: List[pb.Delivery] = []
    with bob.subscribe(timeout=20) as stream:
        d = next(stream)
        seen.append(d)
        assert d.envelope.type == hubd.EVENT_INVITE and names("bob") in d.envelope.invite.invitees
        bob.ack_invite(s.id)
        alice.send_text(s.id, "your turn, bob")
        for d in stream:
            seen.append(d)
            if d.your_turn:
                break
    assert hubd.text_of(seen[-1].envelope) == "your turn, bob"
    cursor = max(d.envelope.seq for d in seen)
    bob.send_text(s.id, "done")  # ends the sequence
    # Resubscribing after the cursor delivers only what came after it.
    with bob.subscribe({s.id: cursor}, timeout=20) as stream:
        rest = []
        for d in stream:
            rest.append(d.envelope)
            if hubd.ends(d.envelope):
                break
    assert all(e.seq > cursor for e in rest) and hubd.close_reason(rest[-1]) == "sequence_complete"
    # Ended sessions without a cursor come only with include_ended.
    with bob.subscribe(include_ended=True, timeout=20) as stream:
        first = stream.recv()
        assert first is not None and first.envelope.session_id == s.id and first.envelope.seq == 1


def test_subscribe_terse(connect: Connect, names: Names) -> None:
    """A terse stream carries the caller's turns and the ends of its
    sessions, not the invite that does not name it, the opening, notes or
    the others' texts."""
    alice, bob = connect(names("alice")), connect(names("bob"))
    s = pipeline(alice, names)
    alice.send_event(s.id, "note", b"aside")
    alice.send_text(s.id, "go")
    got: List[str] = []
    with bob.subscribe(terse=True, timeout=20) as stream:
        for d in stream:
            got.append(d.envelope.type + (" [your turn]" if d.your_turn else ""))
            if d.your_turn:
                alice.close_session(s.id, "enough")
            if hubd.ends(d.envelope):
                break
    assert got == ["text [your turn]", "session_closed"]
    # Without terse, the same session from its start brings everything.
    with bob.subscribe(include_ended=True, timeout=20) as stream:
        everything = []
        for d in stream:
            everything.append(d.envelope.type)
            if hubd.ends(d.envelope):
                break
    assert everything == ["session_invite", "session_opened", "note", "text", "session_closed"]


def test_subscribe_turn_view(connect: Connect, names: Names) -> None:
    """With a view, each your_turn delivery carries the receiver's view of
    its session as view() returns it then (window included); the other
    deliveries, and every one of a stream without a view, carry none."""
    alice, bob, carol = connect(names("alice")), connect(names("bob")), connect(names("carol"))
    s = pipeline(alice, names)
    alice.send_text(s.id, "one")
    bob.send_text(s.id, "two")

    def turn(**kw: Any) -> Tuple[pb.Delivery, List[pb.Delivery]]:
        """carol's turn on a new stream, and the deliveries before it."""
        before: List[pb.Delivery] = []
        with carol.subscribe(timeout=20, **kw) as stream:
            for d in stream:
                if d.your_turn:
                    return d, before
                before.append(d)
        raise AssertionError("the stream ended before carol's turn")

    d, before = turn(view=hubd.VIEW_WINDOWED, window=1)
    assert d.envelope.session_id == s.id and hubd.text_of(d.envelope) == "two"
    assert d.HasField("view") and d.view == carol.view(s.id, hubd.VIEW_WINDOWED, window=1)
    assert [i.text for i in d.view.items] == ["two"] and d.view.older_total == 1
    assert [b.envelope.type for b in before] == ["session_invite", "session_opened", "text"]
    assert not any(b.HasField("view") for b in before)
    d, _ = turn(view=hubd.VIEW_FULL, terse=True)
    assert d.view == carol.view(s.id, hubd.VIEW_FULL) and [i.text for i in d.view.items] == ["one", "two"]
    d, _ = turn()
    assert not d.HasField("view")


def test_watch_and_follow(connect: Connect, names: Names) -> None:
    alice, bob, carol = connect(names("alice")), connect(names("bob")), connect(names("carol"))
    s = pipeline(alice, names)
    alice.send_text(s.id, "one")
    w = carol.watch(s.id, timeout=20)
    seqs = []
    for d in w:
        assert not d.your_turn
        seqs.append(d.envelope.seq)
        if hubd.text_of(d.envelope) == "one":
            break
    w.close()
    assert list(w) == []  # a closed stream ends quietly
    assert seqs == list(range(1, seqs[-1] + 1))
    bob.send_text(s.id, "two")
    follow = alice.follow(s.id, from_seq=seqs[-1], timeout=20)
    first = next(follow)
    assert first.seq == seqs[-1]
    carol.send_text(s.id, "three")
    rest = list(follow)
    assert [hubd.text_of(e) for e in rest if hubd.is_turn(e)] == ["two", "three"]
    assert hubd.close_reason(rest[-1]) == "sequence_complete"
    with pytest.raises(hubd.PermissionDenied):
        connect(names("mallory")).watch(s.id).recv()
    with pytest.raises(hubd.PermissionDenied):
        next(connect(names("mallory")).follow(s.id))


def test_follow_timeout(connect: Connect, names: Names) -> None:
    alice = connect(names("alice"))
    s = pipeline(alice, names)
    with pytest.raises(hubd.DeadlineExceeded):
        list(alice.follow(s.id, timeout=0.3))


def test_close_session(connect: Connect, names: Names) -> None:
    alice, operator = connect(names("alice")), connect("operator")
    s = pipeline(alice, names)
    ack = alice.close_session(s.id)
    assert ack.closed and ack.close_reason == "explicit_close"
    t = pipeline(alice, names)
    assert operator.close_session(t.id, "ops").close_reason == "ops"


def test_values() -> None:
    v = hubd.to_value({"a": [1, 2.5, None, True, "x"], "t": (1, 2)})
    assert hubd.from_value(v) == {"a": [1, 2.5, None, True, "x"], "t": [1, 2]}
    assert isinstance(hubd.from_value(hubd.to_value(3)), int)
    with pytest.raises(ValueError):
        hubd.to_value(float("inf"))
    with pytest.raises(TypeError):
        hubd.to_value(object())
    p = hubd.Packet("x").set("k", {"n": 1}).handoff("t", "b", "why").proto()
    assert p.routing.kind == "handoff" and p.routing.tool == "t" and p.routing.target == "b"
    assert json.loads(json.dumps(hubd.from_value(p.context_updates.set["k"]))) == {"n": 1}
    assert hubd.Packet("y").finish().proto().routing.reason == "finished"
    assert hubd.turn_msg_id("s", 5) == "turn/s/5"
    assert hubd.text_of(None) == "" and not hubd.is_turn(None) and hubd.close_reason(None) == ""


def test_read_log_pages(connect: Connect, names: Names) -> None:
    # The hub answers a read in pages of at most 1000 envelopes; read_log
    # reads as many as the limit takes, and stops where the log ends.
    alice = connect(names("alice"))
    s = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(names("bob")))
    for i in range(1200):
        alice.send_text(s.id, f"t{i}")
    total = 1202  # with the invite and the open
    assert [e.seq for e in alice.read_log(s.id, limit=1500)] == list(range(1, total + 1))
    assert len(alice.read_log(s.id, limit=1100)) == 1100
    assert len(alice.read_log(s.id)) == 1000
    assert [e.seq for e in alice.read_log(s.id, from_seq=900, limit=5000)] == list(range(900, total + 1))


def test_erase(connect: Connect, names: Names) -> None:
    """An operator erases a session: every read of it raises Erased with
    who and why; an agent may not erase, nor may anybody without a
    reason."""
    alice, op = connect(names("alice")), connect("operator")
    s = pipeline(alice, names)
    with pytest.raises(hubd.PermissionDenied):
        alice.erase(s.id, reason="mine")
    with pytest.raises(hubd.Malformed):
        op.erase(s.id, reason="")
    got = op.erase(s.id, reason="asked to be forgotten")
    assert [e.session_id for e in got] == [s.id] and got[0].erased_by == "operator" and got[0].reason == "asked to be forgotten"
    with pytest.raises(hubd.Erased) as e:
        alice.get_session(s.id)
    assert e.value.metadata["erased_by"] == "operator" and e.value.metadata["reason"] == "asked to be forgotten"


def test_purge(connect: Connect, names: Names) -> None:
    """An operator purges an ended session: every read of it raises Purged
    with when and the archive file; an agent may not purge, and an open
    session is refused."""
    alice, op = connect(names("alice")), connect("operator")
    s = pipeline(alice, names)
    with pytest.raises(hubd.BadLifecycleTransition):
        op.purge(s.id)
    alice.close_session(s.id, "done")
    with pytest.raises(hubd.PermissionDenied):
        alice.purge(s.id)
    got = op.purge(s.id)
    assert got.session_id == s.id and got.archive.startswith("hubd-archive-") and got.purged_at.seconds > 0
    with pytest.raises(hubd.Purged) as e:
        alice.get_session(s.id)
    assert e.value.metadata["archive"] == got.archive and e.value.metadata["purged_at"]
    with pytest.raises(hubd.Purged):
        alice.read_log(s.id)


def test_import_sessions(connect: Connect, names: Names) -> None:
    """An operator brings a purged session back from the hub's archive:
    it reads again, labelled imported_from; an agent may not import, a
    path is refused, and a second import of it is refused."""
    alice, op = connect(names("alice")), connect("operator")
    s = pipeline(alice, names)
    alice.close_session(s.id, "done")
    n = len(alice.read_log(s.id))
    purged = op.purge(s.id)
    with pytest.raises(hubd.PermissionDenied):
        alice.import_sessions(purged.archive, s.id)
    with pytest.raises(hubd.Malformed):
        op.import_sessions("../" + purged.archive, s.id)
    got = op.import_sessions(purged.archive, s.id)
    assert [(i.session_id, i.envelopes, i.archive) for i in got] == [(s.id, n, purged.archive)]
    info = alice.get_session(s.id)
    assert info.state == "CLOSED" and info.meta.labels["imported_from"] == purged.archive
    assert len(alice.read_log(s.id)) == n
    with pytest.raises(hubd.BadLifecycleTransition):
        op.import_sessions(purged.archive, s.id)
