"""The W3C trace context against the real hub: what the SDK sends carries
the caller's trace (on the agent stream's frames and as the metadata of
unary calls), and a served turn continues the trace of its trigger, so the
envelopes the hub logs (read back with read_log) carry its trace id."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import queue
import threading
import time
from typing import Callable, Dict, List

import pytest

import hubd
import hubd.aio
from hubd import pb

from .conftest import Hub, Names, Serving, transcript

Connect = Callable[..., hubd.Client]


def new_traceparent() -> str:
    """A traceparent of a new trace."""
    return f"00-{os.urandom(16).hex()}-{os.urandom(8).hex()}-01"


def trace_id(traceparent: str) -> str:
    parts = traceparent.split("-")
    return parts[1] if len(parts) == 4 else ""


def traces(log: List[pb.Envelope]) -> Dict[str, str]:
    """The trace id of each envelope of a log, keyed "seq type"."""
    return {f"{e.seq} {e.type}": trace_id(e.traceparent) for e in log}


@pytest.mark.parametrize("transport", ["stream", "unary"])
def test_served_reply_continues_the_trace_of_its_trigger(
    connect: Connect, names: Names, serving: Serving, transport: str
) -> None:
    """alice's turn carries a trace; bob's handler runs in it: the event it
    sends and its reply (over serve's stream, or Send calls) carry the same
    trace id, and so does the close that the reply causes."""
    A, B = names("alice"), names("bob")
    alice, bob = connect(A), connect(B, transport=transport)

    def handle(t: hubd.Turn) -> hubd.Reply:
        t.client.send_event(t.session_id, "app.note", b"thinking")
        return "done"

    serving.start(bob, handle, view=None)
    s = alice.open(graph=hubd.sequence(A, B), participants=hubd.auto_accepted(B))
    tp = new_traceparent()
    alice.send_text(s.id, "work", traceparent=tp)
    assert transcript(alice, s.id) == ([f"{A}: work", f"{B}: done"], "sequence_complete")
    log = alice.read_log(s.id)
    got = {k: v for k, v in traces(log).items() if k.split(" ")[1] in ("text", "app.note", "session_closed")}
    assert got and set(got.values()) == {trace_id(tp)}, got
    assert [k.split(" ")[1] for k in got] == ["text", "app.note", "text", "session_closed"]


@pytest.mark.parametrize("transport", ["stream", "unary"])
def test_calls_carry_the_trace_context_given(connect: Connect, names: Names, transport: str) -> None:
    """Inside hubd.trace_context every call carries the trace: the open
    (a frame, or an Open call), the sends, the close (a Close call); a
    send's own traceparent wins; outside the block nothing is carried."""
    A, B = names("alice"), names("bob")
    alice = connect(A, transport=transport)
    tp, own = new_traceparent(), new_traceparent()
    with hubd.trace_context(tp, "vendor=opaque"):
        s = alice.open(graph=hubd.sequence(A, B, A), participants=hubd.auto_accepted(B))
        alice.send_text(s.id, "first")
        alice.set_context(s.id, {"stage": "draft"})
        alice.send_event(s.id, "app.own", b"", traceparent=own)
    alice.send_event(s.id, "app.after")
    with hubd.trace_context(tp):
        alice.close_session(s.id, "no_longer_needed")
    got = traces(alice.read_log(s.id))
    want_tp = {k for k in got if k.split(" ")[1] in ("session_invite", "session_opened", "text", "context_set")}
    assert len(want_tp) == 4 and {got[k] for k in want_tp} == {trace_id(tp)}, got
    assert [v for k, v in got.items() if k.endswith(" app.own")] == [trace_id(own)]
    assert [v for k, v in got.items() if k.endswith(" app.after")] != [trace_id(tp)]
    assert [v for k, v in got.items() if k.endswith(" session_closed")] == [trace_id(tp)]


def test_trace_context_refuses_a_malformed_traceparent() -> None:
    for bad in ("00-abc-def-01", "00-" + "0" * 32 + "-00f067aa0ba902b7-01", "ff-" + "1" * 32 + "-" + "2" * 16 + "-01"):
        with pytest.raises(ValueError, match="traceparent"):
            with hubd.trace_context(bad):
                pass
    with hubd.trace_context(""):  # nothing to carry
        pass


@pytest.mark.parametrize("plain", [False, True], ids=["coroutine", "function"])
def test_aio_served_reply_continues_the_trace_of_its_trigger(hub: Hub, names: Names, plain: bool) -> None:
    """Under asyncio, a coroutine handler (a task) and a plain one (in a
    worker thread) run in their trigger's trace: their sends and replies
    carry its trace id; calls made in another task inside
    hubd.trace_context carry that one's."""
    A, B = names("alice"), names("bob")

    async def main() -> None:
        stop = asyncio.Event()
        async with hubd.aio.Client(hub.addr, name=A) as alice, hubd.aio.Client(hub.addr, name=B) as bob:

            async def coroutine(t: hubd.Turn) -> hubd.Reply:
                await t.client.send_event(t.session_id, "app.note", b"")
                return "done"

            def function(t: hubd.Turn) -> hubd.Reply:
                return "done"

            server = asyncio.ensure_future(bob.serve(function if plain else coroutine, stop=stop, view=None))
            tp, other = new_traceparent(), new_traceparent()
            with hubd.trace_context(other):
                s = await alice.open(graph=hubd.sequence(A, B), participants=hubd.auto_accepted(B))
            await alice.send_text(s.id, "work", traceparent=tp)
            async for e in alice.follow(s.id, timeout=30):
                pass
            stop.set()
            await server
            got = traces(await alice.read_log(s.id))
            wanted = {"text", "session_closed"} | (set() if plain else {"app.note"})
            assert {v for k, v in got.items() if k.split(" ")[1] in wanted} == {trace_id(tp)}, got
            assert len([k for k in got if k.split(" ")[1] in wanted]) == len(wanted) + 1, got
            assert {v for k, v in got.items() if k.split(" ")[1] in ("session_invite", "session_opened")} == {
                trace_id(other)
            }, got

    asyncio.run(asyncio.wait_for(main(), 60))


@pytest.mark.skipif(importlib.util.find_spec("opentelemetry") is None, reason="OpenTelemetry's API is not installed")
def test_opentelemetry_current_span_is_carried(connect: Connect, names: Names) -> None:  # pragma: no cover
    """With OpenTelemetry's API installed, its current span is the trace
    the SDK carries."""
    from opentelemetry import trace as otel_trace  # type: ignore[import-not-found,unused-ignore]

    A, B = names("alice"), names("bob")
    alice = connect(A)
    s = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B))
    tid, sid = os.urandom(16), os.urandom(8)
    sc = otel_trace.SpanContext(
        trace_id=int.from_bytes(tid, "big"),
        span_id=int.from_bytes(sid, "big"),
        is_remote=False,
        trace_flags=otel_trace.TraceFlags(1),
    )
    with otel_trace.use_span(otel_trace.NonRecordingSpan(sc)):
        alice.send_text(s.id, "traced")
    got = traces(alice.read_log(s.id))
    assert [v for k, v in got.items() if k.endswith(" text")] == [tid.hex()]


# A failing hook or handler.


@pytest.mark.parametrize("transport", ["stream", "unary"])
def test_failing_observer_and_handler_are_logged_and_serve_goes_on(
    connect: Connect, names: Names, serving: Serving, caplog: pytest.LogCaptureFixture, transport: str
) -> None:
    """An observer and an on_session_end that raise on every delivery, and
    a handler that raises on its first turn, are logged; serve goes on:
    the next turn of the session is handled, and so is a second session."""
    A, B = names("alice"), names("bob")
    alice, bob = connect(A), connect(B, transport=transport)
    observed: List[str] = []
    calls: "queue.Queue[str]" = queue.Queue()
    ended = threading.Event()

    def observer(d: pb.Delivery) -> None:
        observed.append(d.envelope.type)
        raise RuntimeError(f"observer failed on seq {d.envelope.seq}")

    def on_end(e: pb.Envelope) -> None:
        ended.set()
        raise RuntimeError("on_session_end failed")

    def handle(t: hubd.Turn) -> hubd.Reply:
        calls.put(t.text)
        if t.text == "one":
            raise RuntimeError("the model is down")
        return "ok " + t.text

    with caplog.at_level("WARNING", logger="hubd"):
        serving.start(bob, handle, view=None, observer=observer, on_session_end=on_end)
        for _ in range(2):
            s = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B))
            alice.send_text(s.id, "one")
            assert calls.get(timeout=10) == "one"
            alice.send_text(s.id, "two")
            assert calls.get(timeout=10) == "two"
            assert wait_for(lambda: any(hubd.text_of(e) == "ok two" for e in alice.read_log(s.id))), "bob's reply"
            ended.clear()
            alice.close_session(s.id)
            assert ended.wait(10), "on_session_end was called"
    assert "the model is down" in caplog.text
    assert "observer on seq" in caplog.text and "on_session_end on seq" in caplog.text
    assert observed.count("session_closed") == 2 and observed.count("text") >= 4, observed


def wait_for(cond: Callable[[], bool], timeout: float = 10) -> bool:
    """Poll cond until it holds or timeout seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


@pytest.mark.parametrize("transport", ["stream", "unary"])
def test_aio_failing_observer_and_handler_are_logged_and_serve_goes_on(
    hub: Hub, names: Names, caplog: pytest.LogCaptureFixture, transport: str
) -> None:
    """Under asyncio too: an observer and an on_session_end that raise, and
    a handler that raises on its first turn, are logged; the next turn is
    handled and serve goes on."""
    A, B = names("alice"), names("bob")

    async def main() -> None:
        stop = asyncio.Event()
        calls: "asyncio.Queue[str]" = asyncio.Queue()
        ended = asyncio.Event()

        def observer(d: pb.Delivery) -> None:
            raise RuntimeError(f"observer failed on seq {d.envelope.seq}")

        def on_end(e: pb.Envelope) -> None:
            ended.set()
            raise RuntimeError("on_session_end failed")

        async def handle(t: hubd.Turn) -> hubd.Reply:
            await calls.put(t.text)
            if t.text == "one":
                raise RuntimeError("the model is down")
            return "ok " + t.text

        async with hubd.aio.Client(hub.addr, name=A) as alice, hubd.aio.Client(
            hub.addr, name=B, transport=transport
        ) as bob:
            server = asyncio.ensure_future(
                bob.serve(handle, stop=stop, view=None, observer=observer, on_session_end=on_end)
            )
            for _ in range(2):
                s = await alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B))
                await alice.send_text(s.id, "one")
                assert await asyncio.wait_for(calls.get(), 10) == "one"
                await alice.send_text(s.id, "two")
                assert await asyncio.wait_for(calls.get(), 10) == "two"
                async for d in alice.watch(s.id):
                    if hubd.text_of(d.envelope) == "ok two":
                        break
                ended.clear()
                await alice.close_session(s.id)
                await asyncio.wait_for(ended.wait(), 10)
                assert not server.done(), "serve goes on"
            stop.set()
            await server

    with caplog.at_level("WARNING", logger="hubd"):
        asyncio.run(asyncio.wait_for(main(), 60))
    assert "the model is down" in caplog.text
    assert "observer on seq" in caplog.text and "on_session_end on seq" in caplog.text


def test_stream_callback_that_raises_is_logged_and_the_stream_reads_on(
    connect: Connect, names: Names, caplog: pytest.LogCaptureFixture
) -> None:
    """An agent stream's delivery callback that raises is logged and the
    stream reads on: the next delivery reaches it, and sends on the same
    stream are still answered."""
    from hubd import _stream

    A, B = names("alice"), names("bob")
    alice, bob = connect(A), connect(B)
    seen: "queue.Queue[str]" = queue.Queue()

    def on_delivery(d: pb.Delivery) -> None:
        seen.put(hubd.text_of(d.envelope))
        raise RuntimeError("the callback failed")

    async def start() -> "_stream.AgentStream":
        st = _stream.AgentStream(bob._core.raw, bob.metadata, bob.log, on_delivery=on_delivery)
        await st.start(pb.SubscribeRequest(terse=True), 10)
        return st

    async def close(st: "_stream.AgentStream") -> None:
        st.close()

    run = bob._loop.run  # the stream of bob's core, on its loop
    with caplog.at_level("WARNING", logger="hubd"):
        st = run(start())
        try:
            s = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B))
            for text in ("one", "two"):
                alice.send_text(s.id, text)
                while (got := seen.get(timeout=10)) != text:
                    assert got == "", got  # the invite, the open
            back = pb.Envelope(type="text", text=pb.Text(text="back"), client_msg_id="m-back")
            assert run(st.send(s.id, back, 10)).seq
            assert not st.done.is_set() and st.fatal is None
        finally:
            run(close(st))
    assert caplog.text.count("the callback failed") >= 2
