"""Delegation, questions and the call tree with the asyncio client, against
the real hub: coroutine turns (delegate, delegate_all, spawn, ask,
pass_caller), tasks, answers, the tree and its feed."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Dict, List, TypeVar

import pytest

import hubd
import hubd.aio
from hubd import pb

from .conftest import Hub, Names

T = TypeVar("T")


def run(coro: Awaitable[T]) -> T:
    return asyncio.run(asyncio.wait_for(coro, 60))  # type: ignore[arg-type]


def child(agent: str, task: str) -> pb.OpenRequest:
    return hubd.open_request(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(agent), task=task)


async def next_turn(c: hubd.aio.Client, session_id: str, start: int, by: str) -> pb.Envelope:
    async for e in c.follow(session_id, start, timeout=30):
        if hubd.is_turn(e) and hubd.sender(e) == by:
            return e
    raise AssertionError(f"no turn by {by}")


class Agents:
    """aio clients serving handlers as tasks, stopped together."""

    def __init__(self, addr: str) -> None:
        self.addr = addr
        self.stop = asyncio.Event()
        self.clients: List[hubd.aio.Client] = []
        self.runs: List["asyncio.Task[None]"] = []

    async def dial(self, name: str) -> hubd.aio.Client:
        c = await hubd.aio.connect(self.addr, name=name)
        self.clients.append(c)
        return c

    def serve(self, c: hubd.aio.Client, handler: Any) -> None:
        self.runs.append(asyncio.ensure_future(c.serve(handler, stop=self.stop, handle_signals=False)))

    async def close(self) -> None:
        self.stop.set()
        await asyncio.gather(*self.runs)
        for c in self.clients:
            await c.close()


def test_aio_delegate_tree_and_pass_caller(hub: Hub, names: Names) -> None:
    async def main() -> None:
        a = Agents(hub.addr)
        try:
            user, mainc = await a.dial(names("user")), await a.dial(names("main"))
            research, triage, hotels = await a.dial(names("research")), await a.dial(names("triage")), await a.dial(
                names("hotels")
            )
            calls: List[str] = []

            async def finish(t: hubd.aio.Turn) -> hubd.Reply:
                return hubd.Packet("done").finish("", f"{t.client.name} on {t.text}").with_usage(input_tokens=3)

            async def handle(t: hubd.aio.Turn) -> hubd.Reply:
                assert isinstance(t, hubd.aio.Turn)
                calls.append(f"{t.trigger.type}@{t.seq}")
                if t.text == "trip":
                    g = hubd.Graph(names("triage")).on(hubd.graph.always(), hubd.graph.to_next_in_order())
                    req = hubd.open_request(
                        graph=g, participants=hubd.auto_accepted(names("triage"), names("hotels")), task="Oslo"
                    )
                    r = await t.delegate(req, timeout=30)
                    return f"{r.responder}: {r.summary}"
                rs = await t.delegate_all(child(names("research"), "acme"), child(names("research"), "globex"))
                return "; ".join(sorted(r.summary for r in rs))

            a.serve(research, finish)
            a.serve(hotels, finish)
            a.serve(triage, lambda t: t.pass_caller(names("hotels")))  # a plain handler, in a thread
            a.serve(mainc, handle)

            s = await user.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(names("main")))
            await user.send_text(s.id, "news")
            reply = await next_turn(user, s.id, 1, names("main"))
            assert hubd.text_of(reply) == f"{names('research')} on acme; {names('research')} on globex"
            ack = await user.send_text(s.id, "trip")
            reply = await next_turn(user, s.id, ack.seq + 1, names("main"))
            assert hubd.text_of(reply) == f"{names('hotels')}: {names('hotels')} on "
            assert calls == ["text@3", f"text@{ack.seq}"]

            tree = await mainc.tree(s.id)
            assert len(tree.children) == 3 and all(ch.session.state == hubd.STATE_CLOSED for ch in tree.children)
            await user.close_session(s.id, "thanks")
            seen: Dict[str, List[int]] = {}
            async for e in mainc.follow_tree(s.id, verbose=True, timeout=30):
                seen.setdefault(e.session_id, []).append(e.seq)
            assert len(seen) == 4
            assert all(seqs == list(range(1, len(seqs) + 1)) for seqs in seen.values()), seen
            terse: List[str] = []
            async for e in mainc.follow_tree(s.id, timeout=30):
                if e.session_id != s.id:
                    terse.append(e.type)
            assert terse == []  # the children said nothing but turns
            op = await a.dial("operator")
            assert (await op.replay(s.id)).equal
        finally:
            await a.close()

    run(main())


def test_aio_spawn_tasks_and_questions(hub: Hub, names: Names) -> None:
    async def main() -> None:
        a = Agents(hub.addr)
        try:
            user, mainc = await a.dial(names("user")), await a.dial(names("main"))
            worker, person, stranger = await a.dial(names("tasks")), await a.dial(names("person")), await a.dial(
                names("stranger")
            )
            spawned: List[hubd.aio.Task] = []

            async def work(t: hubd.aio.Turn) -> hubd.Reply:
                await worker.send(
                    t.session_id,
                    pb.Envelope(type=hubd.EVENT_TASK_PROGRESS, task_progress=pb.TaskProgress(task="n", percent=10)),
                )
                if t.text == "stop":
                    return hubd.Packet("").finish("", "stopped")
                return "on " + t.text

            async def handle(t: hubd.aio.Turn) -> hubd.Reply:
                if hubd.sender(t.trigger) == names("tasks"):
                    return None  # main's turns in its task (a conversation): the test speaks there
                if t.trigger.type == hubd.EVENT_DELEGATION_RESULT:
                    return "notified: " + t.trigger.delegation_result.summary
                if t.text == "spawn":
                    spawned.append(await t.spawn(child(names("tasks"), "count"), turn_on_result=True))
                    return "spawned"
                ans = await t.ask(
                    pb.Question(text="Name?", answerer=names("person"), question_id="q-name"), timeout=30
                )
                return "hello " + ans.text

            a.serve(worker, work)
            a.serve(mainc, handle)
            s = await user.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(names("main")))
            await user.send_text(s.id, "spawn")
            assert hubd.text_of(await next_turn(user, s.id, 1, names("main"))) == "spawned"
            (task,) = spawned
            assert task.mode == hubd.MODE_BACKGROUND and task.parent == s.id
            await next_turn(mainc, task.id, 1, names("tasks"))  # its answer to the task: now main may speak
            reply = await task.message_and_wait("status?", timeout=30)
            assert hubd.text_of(reply) == "on status?"
            st = await task.poll()
            assert st.state == hubd.TASK_RUNNING and st.progress and st.progress[0].percent == 10
            await task.message("stop")
            # Waited for outside the handler: with a task rebuilt from its id
            # (a spawned task's wait would take the turn its result gives).
            rebuilt = await mainc.task(task.id)
            r = await rebuilt.wait(timeout=30)
            assert r.summary == "stopped"
            assert (await task.poll()).state == hubd.TASK_CLOSED
            assert (await hubd.aio.await_any(rebuilt, timeout=30)).summary == "stopped"
            # notify "turn": the result gave main a turn in the parent.
            found = None
            async for e in user.follow(s.id, timeout=30):
                if hubd.sender(e) == names("main") and hubd.text_of(e).startswith("notified"):
                    found = e
                    break
            assert found is not None and hubd.text_of(found) == "notified: stopped"

            ack = await user.send_text(s.id, "ask")
            qs: List[pb.PendingQuestion] = []
            while not qs:
                qs = await person.list_questions()
                await asyncio.sleep(0.02)
            assert qs[0].envelope.question.question_id == "q-name"
            with pytest.raises(hubd.BadAnswer):
                await stranger.answer_question(s.id, "q-name", text="Mallory")
            with pytest.raises(hubd.BadAnswer):
                await person.answer_question(s.id, "q-other", text="Ada")
            await person.answer_question(s.id, "q-name", text="Ada")
            reply = await next_turn(user, s.id, ack.seq + 1, names("main"))
            assert hubd.text_of(reply) == "hello Ada"

            # A background task cancelled by hand, by an agent that does not
            # serve (main would take the turns of a session it opened).
            boss = await a.dial(names("boss"))
            p = await boss.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(names("user")))
            (t2,) = await boss.delegate(p.id, [child(names("tasks"), "long")], mode=hubd.MODE_BACKGROUND)
            await t2.cancel()
            r2 = await hubd.aio.await_all(t2, timeout=30)
            assert r2[0].reason == hubd.CANCEL_REASON
            assert (await t2.poll()).state == hubd.TASK_CANCELLED
        finally:
            await a.close()

    run(main())
