"""Delegation, questions and the call tree (Go: agentsdk/calls.go; the
protocol is docs/DELEGATION.md), the one asyncio core: :class:`Task`,
:class:`TaskStatus`, :func:`await_all`, :func:`await_any` and
:class:`Turn`, as :mod:`hubd.aio` exports them; the sync client's are a
thin layer over these (hubd._sync)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Iterable, List, Optional, Sequence, Tuple, Union

from . import _model, errors
from ._model import (
    AWAIT_ALL,
    AWAIT_ANY,
    CANCEL_REASON,
    EVENT_MESSAGE,
    EVENT_TEXT,
    MODE_BACKGROUND,
    MODE_BLOCKING,
    NOTIFY_TURN,
    STATE_EXPIRED,
    TASK_CANCELLED,
    TASK_CLOSED,
    TASK_EXPIRED,
    TASK_RUNNING,
    Ack,
    Session,
    close_reason,
    ends,
    is_turn,
    sender,
)
from ._pb import hub_pb2 as pb

if TYPE_CHECKING:  # pragma: no cover
    from ._delta import TurnStream
    from .aio import Client

__all__ = ["Task", "TaskStatus", "Turn", "await_all", "await_any", "OptionLike", "QuestionLike"]

OptionLike = Union[str, Tuple[str, str], pb.Option]
"""An option of a question: an id (its own label), ``(id, label)``, or a
``hubd.pb.Option``."""

QuestionLike = Union[str, pb.Question]
"""A question: its text, or a whole ``hubd.pb.Question``."""

Consume = Optional[Callable[[int], None]]


@dataclass
class TaskStatus:
    """What :meth:`Task.poll` saw.

    Attributes:
        state: ``TASK_RUNNING``, ``TASK_CLOSED``, ``TASK_EXPIRED`` or
            ``TASK_CANCELLED``.
        session: the child's state as the hub answered.
        progress: the child's ``task_progress`` reports, oldest first.
        result: the result posted into the parent, once done.
    """

    state: str
    session: Session
    progress: List[pb.TaskProgress] = field(default_factory=list)
    result: Optional[pb.DelegationResult] = None

    @property
    def done(self) -> bool:
        """Whether the task is over."""
        return self.state != TASK_RUNNING


def delegate_request(
    session_id: str,
    children: Sequence[pb.OpenRequest],
    mode: str,
    await_: str,
    notify: str,
    client_msg_id: str,
) -> pb.DelegateRequest:
    """The hub's DelegateRequest; each child is an OpenRequest (built with
    :func:`hubd.open_request`)."""
    req = pb.DelegateRequest(session_id=session_id, mode=mode, notify=notify, client_msg_id=client_msg_id)
    setattr(req, "await", await_)  # "await" is a Python keyword
    for i, ch in enumerate(children):
        if not isinstance(ch, pb.OpenRequest):
            raise TypeError(f"hubd: child {i}: a hubd.open_request(...), not {type(ch).__name__}")
        req.children.append(ch)
    return req


def tree_request(root_id: str, verbose: bool, nxt: "dict[str, int]") -> pb.WatchRequest:
    """A tree watch resuming from nxt (the next seq per session)."""
    cursors = {sid: n - 1 for sid, n in nxt.items() if sid != root_id}
    return pb.WatchRequest(session_id=root_id, from_seq=nxt[root_id], tree=True, verbose=verbose, cursors=cursors)


def task_state(s: Session) -> str:
    """A task's state from its child session's."""
    if not s.ended:
        return TASK_RUNNING
    if s.state == STATE_EXPIRED:
        return TASK_EXPIRED
    if s.close_reason == CANCEL_REASON:
        return TASK_CANCELLED
    return TASK_CLOSED


def progress_of(envs: Iterable[pb.Envelope]) -> List[pb.TaskProgress]:
    """The task_progress reports among envelopes."""
    return [e.task_progress for e in envs if e.HasField("task_progress")]


def result_of(e: pb.Envelope, ids: Sequence[str]) -> Optional[pb.DelegationResult]:
    """The delegation result an envelope carries for one of the children
    ids, if any."""
    if e.HasField("delegation_result") and e.delegation_result.child_session_id in ids:
        return e.delegation_result
    return None


def message_envelope(text: str, as_turn: bool) -> pb.Envelope:
    """What Task.message sends: a text turn when the child expects the
    delegator to speak, else a message its next speaker sees."""
    if as_turn:
        return pb.Envelope(type=EVENT_TEXT, text=pb.Text(text=text))
    return pb.Envelope(type=EVENT_MESSAGE, message=pb.Text(text=text))


def question_of(question: QuestionLike, options: Sequence[OptionLike], answerer: str, multiple: bool) -> pb.Question:
    """A Question message from the arguments of Turn.ask (a copy of a given
    message)."""
    q = pb.Question()
    if isinstance(question, pb.Question):
        q.CopyFrom(question)
    else:
        q.text = question
    for o in options:
        if isinstance(o, pb.Option):
            q.options.append(o)
        elif isinstance(o, tuple):
            q.options.append(pb.Option(id=o[0], label=o[1]))
        else:
            q.options.append(pb.Option(id=o, label=o))
    if answerer:
        q.answerer = answerer
    if multiple:
        q.multiple = True
    return q


def question_envelope(q: pb.Question, client_msg_id: str, causation_id: str) -> pb.Envelope:
    """The question envelope Turn.ask sends."""
    return pb.Envelope(type="question", client_msg_id=client_msg_id, causation_id=causation_id, question=q)


def answer_of(
    question_id: str, option_ids: Sequence[str], text: str, answer: Optional[pb.Answer]
) -> pb.Answer:
    """The Answer of answer_question's arguments."""
    a = pb.Answer()
    if answer is not None:
        a.CopyFrom(answer)
    if question_id:
        a.question_id = question_id
    a.option_ids.extend(option_ids)
    if text:
        a.text = text
    return a


def common_parent(tasks: Sequence["Any"]) -> Tuple[Any, str, int]:
    """The client, parent and first seq to read for tasks of one session;
    raises Malformed for none, or tasks of different sessions or clients."""
    if not tasks:
        raise errors.Malformed("await of no task", op="await")
    first = tasks[0]
    start = first._from
    for t in tasks[1:]:
        if t.parent != first.parent or t.client is not first.client:
            raise errors.Malformed(
                f"await of tasks of different sessions ({first.parent}, {t.parent}): wait for each", op="await"
            )
        start = min(start, t._from)
    return first.client, first.parent, start


def ended_before(what: str, session_id: str, end: Optional[pb.Envelope], op: str) -> errors.SessionClosed:
    """The error of a wait whose session ended first."""
    return errors.SessionClosed(f"session {session_id} ended ({close_reason(end)}) before {what}", op=op)


def withdrawn(question_id: str, closed: pb.QuestionClosed) -> errors.Withdrawn:
    """The error of a question withdrawn before its answer."""
    return errors.Withdrawn(f"question {question_id!r} withdrawn ({closed.reason})", op="ask")


class Task:
    """The handle of a delegated child session: its id, its parent and the
    delegation that opened it. It works the same in both modes and after a
    restart (:meth:`hubd.aio.Client.task` rebuilds one from the child's
    id). Its methods are coroutines (:class:`hubd.Task` is the same with
    blocking calls).

    Attributes:
        id: the child session's id.
        parent: the delegating session.
        delegation_id: the id of the delegation envelope in the parent.
        mode: ``MODE_BLOCKING`` or ``MODE_BACKGROUND``.
        client: the client that delegated.
    """

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
        self._from = from_seq  # the parent's seq to look for results from
        self._consume = consume  # tells serve a turn begun at seq was taken

    def __repr__(self) -> str:
        return f"hubd.aio.Task(id={self.id!r}, parent={self.parent!r}, mode={self.mode!r})"

    async def poll(self, *, timeout: Optional[float] = None) -> TaskStatus:
        """The task's state, progress reports and result: reads only, no
        turn is used."""
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
        """Send text into the task's session for its next speaker: as the
        delegator's turn when the session expects it to speak (a
        conversation with the delegate), else as a ``message`` (not a turn)
        that its next speaker sees in its view. Takes the send keyword
        arguments of :meth:`hubd.Client.send`."""
        s = await self.client.get_session(self.id, timeout=kw.get("timeout"))
        return await self.client.send(self.id, message_envelope(text, self.client.name in s.expected), **kw)

    async def message_and_wait(self, text: str, *, timeout: Optional[float] = None, **kw: Any) -> pb.Envelope:
        """Send text (as :meth:`message`) and return the next turn taken in
        the task's session after it; raises :class:`hubd.SessionClosed` if the
        session ends first. ``timeout`` bounds the wait."""
        ack = await self.message(text, **kw)
        end = None
        gen = self.client.follow(self.id, ack.seq + 1, timeout=timeout)
        try:
            async for e in gen:
                if is_turn(e) and sender(e) != self.client.name:
                    return e
                end = e
        finally:
            await gen.aclose()
        raise errors.SessionClosed(f"task {self.id} ended ({close_reason(end)}) before its next turn", op="message")

    async def cancel(self, *, timeout: Optional[float] = None) -> None:
        """Close the task's session with reason ``"cancelled"``; its result is
        posted into the parent. Only the delegator (the child's creator) or
        an operator may cancel; cancelling a task that is over is not an
        error."""
        try:
            await self.client.close_session(self.id, CANCEL_REASON, timeout=timeout)
        except errors.SessionClosed:
            pass

    async def wait(self, *, timeout: Optional[float] = None) -> pb.DelegationResult:
        """The task's result once it is posted into the parent. It reads the
        parent's log, so a hub restart or a broken connection does not lose
        it; raises :class:`hubd.SessionClosed` if the parent ends first. A
        task from :meth:`hubd.Turn.spawn` tells serve that the turn its
        result gives (``turn_on_result``) was taken by this wait."""
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
    are in; tell consume the seq of the last one (the envelope that gives the
    delegator its turn back, if any)."""
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
        await gen.aclose()
    raise ended_before("the results", parent, end, "wait")


async def await_answer(
    c: "Client", session_id: str, start: int, question_id: str, consume: Consume, timeout: Optional[float]
) -> pb.Answer:
    """Follow a session from seq start until the question is answered (or
    withdrawn: :class:`hubd.Withdrawn`)."""
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
        await gen.aclose()
    raise ended_before("the answer", session_id, end, "ask")


async def await_all(*tasks: Task, timeout: Optional[float] = None) -> List[pb.DelegationResult]:
    """The results of every task (of one parent session), in the order they
    closed. Blocking tasks of one delegation release the delegator's turn
    when the last is done; for background tasks it only waits. ``timeout``
    bounds the wait (:class:`hubd.DeadlineExceeded`)."""
    c, parent, start = common_parent(tasks)
    return await await_results(c, parent, start, tasks, len(tasks), tasks[0]._consume, timeout)


async def await_any(*tasks: Task, timeout: Optional[float] = None) -> pb.DelegationResult:
    """The first result among the tasks (of one parent session); the others
    go on."""
    c, parent, start = common_parent(tasks)
    return (await await_results(c, parent, start, tasks, 1, tasks[0]._consume, timeout))[0]


class Turn(_model.Turn):
    """One turn of the agent under asyncio: :class:`hubd.Turn` whose
    delegation and question methods are coroutines (``await
    turn.delegate(child)``). Serve gives a coroutine handler this turn; a
    plain handler, which runs in a worker thread, gets it too but cannot
    await them. The waits read the log: they survive a restarting hub and
    a broken connection, and the turn the hub gives back is known to serve
    as taken by this handler call."""

    def stream(self) -> "TurnStream":
        """A writer of the turn's reply as it is made (an LLM's tokens):
        ``await s.write(piece)`` forwards each piece at once as a delta
        (never logged), ``await s.close()`` sends the final envelope with
        all of it (see :class:`hubd.aio.TurnStream`)."""
        from ._delta import TurnStream

        return TurnStream(self)

    async def delegate(  # type: ignore[override]
        self, child: pb.OpenRequest, *, timeout: Optional[float] = None
    ) -> pb.DelegationResult:
        """Hand a task to a child session and wait for its result, as a
        handler waits for a tool call: the child (built with
        :func:`hubd.open_request`, its ``task`` the first input) opens with
        the agent as its creator, the turn is held (nobody speaks in this
        session meanwhile), and when the child ends its result is posted
        here and the turn comes back. If the agent process restarts while
        waiting, the turn comes back to a new handler with the result as
        its trigger (:attr:`resumed`).

        Raises:
            hubd.DepthExceeded, hubd.DelegateNotAllowed, hubd.TurnHeld,
            hubd.OutOfTurn, hubd.SessionClosed: the hub refused it.
        """
        return (await self.delegate_all(child, timeout=timeout))[0]

    async def delegate_all(  # type: ignore[override]
        self, *children: pb.OpenRequest, timeout: Optional[float] = None
    ) -> List[pb.DelegationResult]:
        """Delegate to several children at once (fan-out), the turn held
        until every one is done; their results in the order they closed."""
        return await await_all(*(await self._adelegate(children, MODE_BLOCKING, AWAIT_ALL, "")), timeout=timeout)

    async def delegate_any(  # type: ignore[override]
        self, *children: pb.OpenRequest, timeout: Optional[float] = None
    ) -> pb.DelegationResult:
        """Delegate to several children at once, the turn held until the
        first is done; that one's result (the others go on, their results
        posted as notices)."""
        return await await_any(*(await self._adelegate(children, MODE_BLOCKING, AWAIT_ANY, "")), timeout=timeout)

    async def spawn(self, child: pb.OpenRequest, *, turn_on_result: bool = False) -> Task:  # type: ignore[override]
        """Start a child session in the background and return its
        :class:`Task` at once; the turn stays the agent's (it still
        replies). With ``turn_on_result`` the task's result gives the agent a
        turn here (else it is a notice only)."""
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
        """Ask a question on the turn and wait for its answer: the turn is
        held until the answerer (by default the root session's creator)
        answers. ``question`` is its text (with ``options``: ids, ``(id,
        label)`` pairs or ``hubd.pb.Option``; none: a free-text answer), or a
        whole ``hubd.pb.Question`` (with a schema, a deadline, ...). A
        question without an id gets one derived from the turn.

        Raises:
            hubd.Withdrawn: the question was withdrawn (its session ended).
        """
        q = question_of(question, options, answerer, multiple)
        if not q.question_id:
            q.question_id = self._op_id("q")
        env = question_envelope(q, self._op_id("ask"), self.trigger.id)
        ack = await self.client.send(self.session_id, env)
        return await await_answer(self.client, self.session_id, ack.seq + 1, q.question_id, self._consume, timeout)
