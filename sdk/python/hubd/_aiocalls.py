"""Delegation, questions and the call tree under asyncio: :class:`Task`,
:class:`Turn` (with coroutine methods), :func:`await_all`,
:func:`await_any` (the sync ones are in hubd._calls)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, AsyncIterator, List, Optional, Sequence, Union

from . import _model, errors
from ._calls import (
    Consume,
    OptionLike,
    TaskStatus,
    common_parent,
    ended_before,
    message_envelope,
    progress_of,
    question_envelope,
    question_of,
    result_of,
    task_state,
    withdrawn,
)
from ._model import (
    AWAIT_ALL,
    AWAIT_ANY,
    CANCEL_REASON,
    MODE_BACKGROUND,
    MODE_BLOCKING,
    NOTIFY_TURN,
    TASK_RUNNING,
    Ack,
    close_reason,
    ends,
    is_turn,
    sender,
)
from ._pb import hub_pb2 as pb

if TYPE_CHECKING:  # pragma: no cover
    from .aio import Client

__all__ = ["Task", "Turn", "await_all", "await_any"]


class Task:
    """The handle of a delegated child session under asyncio (see
    :class:`hubd.Task`); its methods are coroutines."""

    def __init__(
        self,
        client: "Client",
        id: str,
        parent: str,
        delegation_id: str,
        mode: str = MODE_BLOCKING,
        from_seq: int = 1,
        consume: Consume = None,
    ) -> None:
        self.client = client
        self.id = id
        self.parent = parent
        self.delegation_id = delegation_id
        self.mode = mode
        self._from = from_seq
        self._consume = consume

    def __repr__(self) -> str:
        return f"hubd.aio.Task(id={self.id!r}, parent={self.parent!r}, mode={self.mode!r})"

    async def poll(self, *, timeout: Optional[float] = None) -> TaskStatus:
        """The task's state, progress reports and result: reads only."""
        s = await self.client.get_session(self.id, timeout=timeout)
        st = TaskStatus(TASK_RUNNING, s, progress_of([e async for e in scan(self.client, self.id, 1, timeout)]))
        if not s.ended:
            return st
        st.state = task_state(s)
        async for e in scan(self.client, self.parent, self._from, timeout):
            r = result_of(e, [self.id])
            if r is not None:
                st.result = r
                break
        return st

    async def message(self, text: str, **kw: Any) -> Ack:
        """Send text into the task's session for its next speaker (see
        :meth:`hubd.Task.message`)."""
        s = await self.client.get_session(self.id, timeout=kw.get("timeout"))
        return await self.client.send(self.id, message_envelope(text, self.client.name in s.expected), **kw)

    async def message_and_wait(self, text: str, *, timeout: Optional[float] = None, **kw: Any) -> pb.Envelope:
        """Send text and return the next turn taken in the task's session
        after it (:class:`hubd.SessionClosed` if it ends first)."""
        ack = await self.message(text, **kw)
        end = None
        gen = self.client.follow(self.id, ack.seq + 1, timeout=timeout)
        try:
            async for e in gen:
                if is_turn(e) and sender(e) != self.client.name:
                    return e
                end = e
        finally:
            await gen.aclose()  # type: ignore[attr-defined]
        raise errors.SessionClosed(f"task {self.id} ended ({close_reason(end)}) before its next turn", op="message")

    async def cancel(self, *, timeout: Optional[float] = None) -> None:
        """Close the task's session with reason ``"cancelled"`` (not an
        error when it is already over)."""
        try:
            await self.client.close_session(self.id, CANCEL_REASON, timeout=timeout)
        except errors.SessionClosed:
            pass

    async def wait(self, *, timeout: Optional[float] = None) -> pb.DelegationResult:
        """The task's result once it is posted into the parent (read from the
        parent's log; :class:`hubd.SessionClosed` if the parent ends
        first)."""
        return (await await_results(self.client, self.parent, self._from, [self], 1, self._consume, timeout))[0]


async def scan(c: "Client", session_id: str, start: int, timeout: Optional[float]) -> AsyncIterator[pb.Envelope]:
    """The caller's envelopes of a session from seq start, page by page."""
    page = 1000
    while True:
        envs = await c.read_log(session_id, start, page, timeout=timeout)
        for e in envs:
            yield e
        if len(envs) < page:
            return
        start = envs[-1].seq + 1


async def await_results(
    c: "Client", parent: str, start: int, tasks: Sequence[Task], n: int, consume: Consume, timeout: Optional[float]
) -> List[pb.DelegationResult]:
    """Follow parent from seq start until n results of the tasks' children
    are in (see hubd._calls.await_results)."""
    ids = [t.id for t in tasks]
    out: List[pb.DelegationResult] = []
    end = None
    gen = c.follow(parent, start, timeout=timeout)
    try:
        async for e in gen:
            r = result_of(e, ids)
            if r is not None:
                out.append(r)
                if len(out) == n:
                    if consume is not None:
                        consume(e.seq)
                    return out
            if ends(e):
                end = e
    finally:
        await gen.aclose()  # type: ignore[attr-defined]
    raise ended_before("the results", parent, end, "wait")


async def await_answer(
    c: "Client", session_id: str, start: int, question_id: str, consume: Consume, timeout: Optional[float]
) -> pb.Answer:
    """Follow a session from seq start until the question is answered (or
    withdrawn)."""
    end = None
    gen = c.follow(session_id, start, timeout=timeout)
    try:
        async for e in gen:
            if e.HasField("answer") and e.answer.question_id == question_id:
                if consume is not None:
                    consume(e.seq)
                return e.answer
            if e.HasField("question_closed") and e.question_closed.question_id == question_id:
                raise withdrawn(question_id, e.question_closed)
            if ends(e):
                end = e
    finally:
        await gen.aclose()  # type: ignore[attr-defined]
    raise ended_before("the answer", session_id, end, "ask")


async def await_all(*tasks: Task, timeout: Optional[float] = None) -> List[pb.DelegationResult]:
    """The results of every task (of one parent session), in the order they
    closed (see :func:`hubd.await_all`)."""
    c, parent, start = common_parent(tasks)
    return await await_results(c, parent, start, tasks, len(tasks), tasks[0]._consume, timeout)


async def await_any(*tasks: Task, timeout: Optional[float] = None) -> pb.DelegationResult:
    """The first result among the tasks (of one parent session)."""
    c, parent, start = common_parent(tasks)
    return (await await_results(c, parent, start, tasks, 1, tasks[0]._consume, timeout))[0]


class Turn(_model.Turn):
    """One turn of the agent under asyncio: :class:`hubd.Turn` whose
    delegation and question methods are coroutines (``await
    turn.delegate(child)``). Serve gives a coroutine handler this turn; a
    plain handler, which runs in a worker thread, gets it too but cannot
    await them."""

    async def delegate(  # type: ignore[override]
        self, child: pb.OpenRequest, *, timeout: Optional[float] = None
    ) -> pb.DelegationResult:
        """Hand a task to a child session and wait for its result (see
        :meth:`hubd.Turn.delegate`)."""
        return (await self.delegate_all(child, timeout=timeout))[0]

    async def delegate_all(  # type: ignore[override]
        self, *children: pb.OpenRequest, timeout: Optional[float] = None
    ) -> List[pb.DelegationResult]:
        """Fan out to several children, the turn held until every one is
        done; their results in closing order."""
        return await await_all(*(await self._adelegate(children, MODE_BLOCKING, AWAIT_ALL, "")), timeout=timeout)

    async def delegate_any(  # type: ignore[override]
        self, *children: pb.OpenRequest, timeout: Optional[float] = None
    ) -> pb.DelegationResult:
        """Fan out, the turn held until the first child is done; its
        result."""
        return await await_any(*(await self._adelegate(children, MODE_BLOCKING, AWAIT_ANY, "")), timeout=timeout)

    async def spawn(self, child: pb.OpenRequest, *, turn_on_result: bool = False) -> Task:  # type: ignore[override]
        """Start a child in the background; its :class:`Task` at once."""
        return (await self._adelegate((child,), MODE_BACKGROUND, "", NOTIFY_TURN if turn_on_result else ""))[0]

    async def _adelegate(self, children: Sequence[pb.OpenRequest], mode: str, await_: str, notify: str) -> List[Task]:
        tasks: List[Task] = await self.client.delegate(
            self.session_id,
            list(children),
            mode=mode,
            await_=await_,
            notify=notify,
            client_msg_id=self._op_id("delegate"),
        )
        for t in tasks:
            t._consume = self._consume
        return tasks

    async def ask(  # type: ignore[override]
        self,
        question: Union[str, pb.Question],
        *,
        options: Sequence[OptionLike] = (),
        answerer: str = "",
        multiple: bool = False,
        timeout: Optional[float] = None,
    ) -> pb.Answer:
        """Ask a question on the turn and wait for its answer (see
        :meth:`hubd.Turn.ask`)."""
        q = question_of(question, options, answerer, multiple)
        if not q.question_id:
            q.question_id = self._op_id("q")
        env = question_envelope(q, self._op_id("ask"), self.trigger.id)
        ack = await self.client.send(self.session_id, env)
        return await await_answer(self.client, self.session_id, ack.seq + 1, q.question_id, self._consume, timeout)
