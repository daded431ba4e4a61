"""Delegation, questions and the call tree with the sync client, against
the real hub (agentsdk/calls_test.go is the Go twin)."""

from __future__ import annotations

import threading
import time
from typing import Callable, Dict, List

import pytest

import hubd
from hubd import pb

from .conftest import Hub, Names, Serving

Connect = Callable[..., hubd.Client]


class Calls:
    """The triggers a handler ran for, as "type@seq"."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: List[str] = []

    def add(self, t: hubd.Turn) -> None:
        with self.lock:
            self.items.append(f"{t.trigger.type}@{t.trigger.seq}")

    def get(self) -> List[str]:
        with self.lock:
            return list(self.items)


def researcher(c: hubd.Client) -> hubd.Handler:
    """Finishes every child it is given with a summary of its task and some
    usage."""

    def handle(t: hubd.Turn) -> hubd.Reply:
        return hubd.Packet("done").finish("", f"{c.name} on {t.text}").with_usage(input_tokens=10, output_tokens=5)

    return handle


def child(agent: str, task: str) -> pb.OpenRequest:
    """A conversation child with agent, given task."""
    return hubd.open_request(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(agent), task=task)


def ask_user(user: hubd.Client, main: str, text: str) -> hubd.Session:
    """A conversation of user with main, in which user says text."""
    s = user.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(main))
    user.send_text(s.id, text)
    return s


def next_turn(c: hubd.Client, session_id: str, start: int, by: str) -> pb.Envelope:
    """The next turn by ``by`` in a session from seq start."""
    for e in c.follow(session_id, start, timeout=30):
        if hubd.is_turn(e) and hubd.sender(e) == by:
            return e
    raise AssertionError(f"no turn by {by} in {session_id}")


def count(c: hubd.Client, session_id: str, typ: str) -> int:
    return sum(1 for e in c.read_log(session_id) if e.type == typ)


def wait_for(what: str, f: Callable[[], object], within: float = 20.0) -> object:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        v = f()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def test_turn_delegate_all_and_the_tree(connect: Connect, names: Names, serving: Serving) -> None:
    """A handler fans out to two children with Turn.delegate_all and gets
    both results; the turn comes back to the same handler call; the parent
    shows the tree's usage; tree, follow_tree and replay show the tree."""
    user, main = connect(names("user")), connect(names("main"))
    research, legal = connect(names("research")), connect(names("legal"))
    op = connect("operator")
    got = Calls()
    serving.start(research, researcher(research))
    serving.start(legal, researcher(legal))

    def handle(t: hubd.Turn) -> hubd.Reply:
        got.add(t)
        rs = t.delegate_all(child(names("research"), "acme"), child(names("legal"), "acme"), timeout=30)
        return "; ".join(sorted(r.summary for r in rs))

    serving.start(main, handle)
    s = ask_user(user, names("main"), "what about acme?")
    reply = next_turn(user, s.id, 1, names("main"))
    assert hubd.text_of(reply) == f"{names('legal')} on acme; {names('research')} on acme"
    assert got.get() == ["text@3"]
    assert count(main, s.id, hubd.EVENT_DELEGATION_RESULT) == 2
    info = user.get_session(s.id).info
    assert (info.tree_usage.input_tokens, info.tree_usage.output_tokens) == (20, 10)
    assert list(info.open_children) == [] and list(info.holds) == []

    tree = main.tree(s.id)
    assert tree.session.meta.session_id == s.id and len(tree.children) == 2
    assert sorted(ch.session.state for ch in tree.children) == [hubd.STATE_CLOSED, hubd.STATE_CLOSED]
    assert sum(ch.usage.input_tokens for ch in tree.children) == 20

    user.close_session(s.id, "thanks")
    for verbose, sessions in ((True, 3), (False, 1)):
        seen: Dict[str, List[int]] = {}
        root_end = None
        for e in main.follow_tree(s.id, verbose=verbose, timeout=30):
            assert (e.call.depth == 0) == (e.session_id == s.id), e
            seen.setdefault(e.session_id, []).append(e.seq)
            if e.session_id == s.id and hubd.ends(e):
                root_end = e
        assert hubd.close_reason(root_end) == "thanks"
        assert len(seen) == sessions, (verbose, seen)
        for sid, seqs in seen.items():
            assert seqs == list(range(1, len(seqs) + 1)), (verbose, sid, seqs)

    rep = op.replay(s.id)
    assert rep.equal and rep.first_difference == 0 and rep.steps and rep.steps[0].envelope.seq == 1
    with pytest.raises(hubd.PermissionDenied):
        user.replay(s.id)


def test_task_background(connect: Connect, names: Names, serving: Serving) -> None:
    """Background tasks: one cancelled, one polled, messaged (a turn, the
    child being a conversation with the delegator), waited for, rebuilt
    from its id; the parent's turn never moves."""
    main, worker, user = connect(names("main")), connect(names("tasks")), connect(names("user"))

    def work(t: hubd.Turn) -> hubd.Reply:
        progress = pb.Envelope(
            type=hubd.EVENT_TASK_PROGRESS, task_progress=pb.TaskProgress(task="count", percent=50, detail="half way")
        )
        worker.send(t.session_id, progress)
        if t.text == "stop":
            return hubd.Packet("stopped").finish("", "counted to 2")
        return "working on: " + t.text

    serving.start(worker, work)
    p = main.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(names("user")))
    counting, doomed = main.delegate(
        p.id,
        [child(names("tasks"), "count to 2"), child(names("tasks"), "never mind")],
        mode=hubd.MODE_BACKGROUND,
    )
    assert counting.parent == p.id and counting.mode == hubd.MODE_BACKGROUND and counting.delegation_id
    doomed.cancel()
    doomed.cancel()  # a task that is over: not an error
    r = doomed.wait(timeout=30)
    assert (r.reason, r.state) == (hubd.CANCEL_REASON, hubd.STATE_CLOSED)
    st = doomed.poll()
    assert st.state == hubd.TASK_CANCELLED and st.done and st.result is not None
    assert st.result.reason == hubd.CANCEL_REASON

    next_turn(main, counting.id, 1, names("tasks"))  # its answer to the task: now main may speak
    reply = counting.message_and_wait("status?", timeout=30)
    assert hubd.sender(reply) == names("tasks") and hubd.text_of(reply) == "working on: status?"
    st = counting.poll()
    assert st.state == hubd.TASK_RUNNING and not st.done and st.progress and st.result is None
    assert st.progress[0].detail == "half way"
    counting.message("stop")
    r = counting.wait(timeout=30)
    assert (r.summary, r.reason) == ("counted to 2", "finished")
    st = counting.poll()
    assert st.state == hubd.TASK_CLOSED and st.result is not None and st.result.summary == "counted to 2"

    again = main.task(counting.id)
    assert (again.parent, again.delegation_id) == (p.id, counting.delegation_id)
    assert again.wait(timeout=30).summary == "counted to 2"
    with pytest.raises(hubd.Malformed):
        main.task(p.id)
    assert hubd.await_all(counting, doomed, timeout=30)[0].child_session_id in (counting.id, doomed.id)
    assert main.get_session(p.id).expected == [names("main")]
    # The user (no delegator) may not cancel the delegator's task.
    with pytest.raises((hubd.PermissionDenied, hubd.NotParticipant)):
        user.close_session(counting.id, hubd.CANCEL_REASON)


def test_turn_ask(connect: Connect, names: Names, serving: Serving) -> None:
    """A handler asks a person with options. A wrong option, an answer from
    someone who is not the answerer (and takes no part) and a second answer
    are refused with BAD_ANSWER; the right one returns to the same handler
    call. A second question is answered by an operator on the person's
    behalf."""
    user, main, person = connect(names("user")), connect(names("main")), connect(names("person"))
    stranger, op = connect(names("stranger")), connect("operator")
    got = Calls()

    def handle(t: hubd.Turn) -> hubd.Reply:
        got.add(t)
        a = t.ask("Deploy now?", options=[("yes", "Yes"), ("no", "Not yet")], answerer=names("person"), timeout=30)
        return f"person said {','.join(a.option_ids)}" + (f" (by {a.by})" if a.by else "")

    serving.start(main, handle)
    s = ask_user(user, names("main"), "deploy the release")
    qs = wait_for("the question", lambda: person.list_questions())
    assert isinstance(qs, list) and len(qs) == 1
    pq = qs[0]
    q = pq.envelope.question
    assert (pq.session_id, pq.asker, q.text) == (s.id, names("main"), "Deploy now?")
    assert [o.id for o in q.options] == ["yes", "no"]
    assert [x.session_id for x in op.list_questions(answerer=names("person"), root=s.id)] == [s.id]

    with pytest.raises(hubd.BadAnswer) as e:
        person.answer_question(s.id, q.question_id, option_ids=["maybe"])
    assert "yes, no" in e.value.detail
    with pytest.raises(hubd.BadAnswer):
        stranger.answer_question(s.id, q.question_id, option_ids=["yes"])
    ack = person.answer_question(s.id, q.question_id, option_ids=["yes"])
    assert ack.seq > 0 and ack.client_msg_id
    assert hubd.text_of(next_turn(user, s.id, 1, names("main"))) == "person said yes"
    assert got.get() == ["text@3"]
    with pytest.raises(hubd.BadAnswer):
        person.answer_question(s.id, q.question_id, option_ids=["no"])

    # An operator answers on the person's behalf.
    ack = user.send_text(s.id, "and the hotfix?")
    qs = wait_for("the second question", lambda: op.list_questions(answerer=names("person"), root=s.id))
    assert isinstance(qs, list)
    op.answer_question(s.id, qs[0].envelope.question.question_id, option_ids=["no"])
    reply = next_turn(user, s.id, ack.seq + 1, names("main"))
    assert hubd.text_of(reply) == "person said no (by operator)"
    assert got.get() == ["text@3", f"text@{ack.seq}"]


def test_turn_pass_caller(connect: Connect, names: Names, serving: Serving) -> None:
    """Inside a child, the delegate passes the caller to a colleague,
    whose finish answers the parent."""
    user, main = connect(names("user")), connect(names("main"))
    triage, hotels = connect(names("triage")), connect(names("hotels"))
    serving.start(triage, lambda t: t.pass_caller(names("hotels")))
    serving.start(hotels, researcher(hotels))

    def handle(t: hubd.Turn) -> hubd.Reply:
        g = hubd.Graph(names("triage")).on(hubd.graph.always(), hubd.graph.to_next_in_order())
        r = t.delegate(
            hubd.open_request(
                graph=g, participants=hubd.auto_accepted(names("triage"), names("hotels")), task="a room in Oslo"
            ),
            timeout=30,
        )
        return f"{r.responder}: {r.summary}"

    serving.start(main, handle)
    s = ask_user(user, names("main"), "plan a trip")
    assert hubd.text_of(next_turn(user, s.id, 1, names("main"))) == f"{names('hotels')}: {names('hotels')} on "
    kinds = [e.packet.routing.kind for e in main.read_log(main.tree(s.id).children[0].session.meta.session_id)
             if e.type == hubd.EVENT_PACKET]
    assert kinds == [hubd.ROUTING_PASS_CALLER, hubd.ROUTING_FINISH]


def test_delegate_any_and_refusals(connect: Connect, names: Names, serving: Serving) -> None:
    """delegate_any returns the first result; while the turn is held nobody
    speaks (TURN_HELD); a delegate outside the allow-list is refused
    (DELEGATE_NOT_ALLOWED); delegating off one's turn is OUT_OF_TURN."""
    user, main, boss = connect(names("user")), connect(names("main")), connect(names("boss"))
    fast, slow = connect(names("fast")), connect(names("slow"))
    release = threading.Event()
    held = threading.Event()
    serving.start(fast, researcher(fast))

    def slow_handler(t: hubd.Turn) -> hubd.Reply:
        held.set()
        release.wait(30)
        return researcher(slow)(t)

    serving.start(slow, slow_handler)

    def handle(t: hubd.Turn) -> hubd.Reply:
        r = t.delegate_any(child(names("slow"), "x"), child(names("fast"), "x"), timeout=30)
        return "first: " + r.summary

    serving.start(main, handle)
    s = ask_user(user, names("main"), "race")
    assert hubd.text_of(next_turn(user, s.id, 1, names("main"))) == f"first: {names('fast')} on x"
    assert held.wait(30)

    # By hand, as boss (who does not serve: main would take the turns of
    # sessions it opened). While a blocking delegation holds boss's turn,
    # nobody speaks.
    q = boss.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(names("user")))
    (waiting,) = boss.delegate(q.id, [child(names("slow"), "z")])
    for who in (user, boss):
        with pytest.raises(hubd.TurnHeld) as held_err:
            who.send_text(q.id, "hello?")
        assert waiting.id in held_err.value.detail, held_err.value.detail
    release.set()

    # An allow-list, off-turn, and a retried delegation.
    p = boss.open(hubd.TYPE_DISCUSSION, participants=hubd.auto_accepted(names("user")), delegates=[names("fast")])
    with pytest.raises(hubd.DelegateNotAllowed) as e:
        boss.delegate(p.id, [child(names("slow"), "x")])
    assert names("fast") in e.value.detail
    with pytest.raises(hubd.OutOfTurn):
        user.delegate(p.id, [child(names("fast"), "x")])
    (t,) = boss.delegate(p.id, [child(names("fast"), "y")], client_msg_id="d-1")
    (again,) = boss.delegate(p.id, [child(names("fast"), "y")], client_msg_id="d-1")
    assert again.id == t.id  # a retry returns the first delegation
    r = hubd.await_all(t, timeout=30)[0]
    assert r.summary == f"{names('fast')} on y" and r.responder == names("fast")


def test_resumed_after_agent_restart(hub_factory: Callable[..., Hub], names: Names) -> None:
    """The agent's serve stops while its handler waits in Turn.delegate;
    the result is posted meanwhile; a new serve gets the turn back with the
    result as trigger (Turn.resumed), once."""
    h = hub_factory()
    user = hubd.Client(h.addr, name=names("user"))
    main = hubd.Client(h.addr, name=names("main"))
    research = hubd.Client(h.addr, name=names("research"))
    held, release = threading.Event(), threading.Event()
    got = Calls()

    def slow(t: hubd.Turn) -> hubd.Reply:
        held.set()
        release.wait(30)
        return researcher(research)(t)

    def handle(t: hubd.Turn) -> hubd.Reply:
        got.add(t)
        if t.resumed:
            return "resumed with " + t.trigger.delegation_result.summary
        return "got " + t.delegate(child(names("research"), t.text)).summary

    agents = Serving()
    first = Serving()
    try:
        agents.start(research, slow)
        first.start(main, handle)
        s = ask_user(user, names("main"), "globex")
        assert held.wait(30)
        first.close()  # the agent is gone while it waits
        release.set()
        result = None
        for e in main.follow(s.id, timeout=30):
            if e.type == hubd.EVENT_DELEGATION_RESULT:
                result = e
                break
        assert result is not None
        agents.start(main, handle)
        reply = next_turn(user, s.id, result.seq, names("main"))
        assert hubd.text_of(reply) == f"resumed with {names('research')} on globex"
        assert got.get() == ["text@3", f"delegation_result@{result.seq}"]
        assert count(main, s.id, hubd.EVENT_DELEGATION_RESULT) == 1
    finally:
        agents.close()
        for c in (user, main, research):
            c.close()
        h.stop()


def test_budget_thread_key_and_tool_envelopes(connect: Connect, names: Names) -> None:
    """open(thread_key=) returns the thread's open session, then links the
    next one to it; open(budget=) closes the tree with budget_exceeded on the
    turn that crosses it; tool_call and tool_result envelopes are logged,
    not turns."""
    alice, bob = connect(names("alice")), names("bob")
    first = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(bob), thread_key="chat-1")
    again = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(bob), thread_key="chat-1")
    assert again.id == first.id and again.existing
    alice.close_session(first.id, "done")
    nxt = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(bob), thread_key="chat-1")
    assert nxt.id != first.id and nxt.meta.thread_key == "chat-1" and nxt.meta.previous_session_id == first.id

    call = pb.Envelope(type=hubd.EVENT_TOOL_CALL, tool_call=pb.ToolCall(call_id="c1", name="search"))
    call.tool_call.arguments.update({"q": "acme"})
    alice.send(nxt.id, call)
    result = pb.ToolResult(call_id="c1", name="search", result=hubd.to_value(3))
    alice.send(nxt.id, pb.Envelope(type=hubd.EVENT_TOOL_RESULT, tool_result=result))
    log = alice.read_log(nxt.id)
    assert [e.type for e in log][-2:] == [hubd.EVENT_TOOL_CALL, hubd.EVENT_TOOL_RESULT]
    assert hubd.from_value(log[-1].tool_result.result) == 3 and alice.get_session(nxt.id).turn == 0

    b = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(bob), budget=pb.Budget(max_tokens=10))
    ack = alice.send_packet(b.id, hubd.Packet("expensive").with_usage(input_tokens=8, output_tokens=4))
    assert ack.closed and ack.close_reason == "budget_exceeded"
    assert alice.get_session(b.id).close_reason == "budget_exceeded"


def test_turn_spawn_turn_on_result(connect: Connect, names: Names, serving: Serving) -> None:
    """Turn.spawn returns the task at once and the turn goes on; with
    turn_on_result the task's result gives the delegator a turn
    (Turn.resumed)."""
    user, main, worker = connect(names("user")), connect(names("main")), connect(names("tasks"))
    spawned: List[hubd.Task] = []
    serving.start(worker, lambda t: hubd.Packet("").finish("", "did " + t.text))

    def handle(t: hubd.Turn) -> hubd.Reply:
        if t.resumed:
            return "notified: " + t.trigger.delegation_result.summary
        spawned.append(t.spawn(child(names("tasks"), "the count"), turn_on_result=True))
        return "spawned"

    serving.start(main, handle)
    s = ask_user(user, names("main"), "go")
    first = next_turn(user, s.id, 1, names("main"))
    assert hubd.text_of(first) == "spawned"
    assert hubd.text_of(next_turn(user, s.id, first.seq + 1, names("main"))) == "notified: did the count"
    (task,) = spawned
    assert task.mode == hubd.MODE_BACKGROUND and task.poll().state == hubd.TASK_CLOSED


def test_ask_withdrawn(connect: Connect, names: Names) -> None:
    """A question still pending when its session ends is withdrawn: the
    asker's wait raises hubd.Withdrawn (a turn built by hand, outside serve,
    so that nothing cancels the wait first)."""
    user, main = connect(names("user")), connect(names("main"))
    s = ask_user(user, names("main"), "hi")
    trigger = main.read_log(s.id, 3, 1)[0]
    turn = hubd.Turn(s.id, trigger, None, main)
    got: List[BaseException] = []

    def ask() -> None:
        try:
            turn.ask("Still there?", answerer=names("user"), timeout=30)
        except BaseException as e:  # noqa: BLE001 - checked below
            got.append(e)

    th = threading.Thread(target=ask)
    th.start()
    wait_for("the question", lambda: user.list_questions(root=s.id))
    user.close_session(s.id, "bye")
    th.join(30)
    assert len(got) == 1 and isinstance(got[0], hubd.Withdrawn), got
    assert "withdrawn" in str(got[0])
