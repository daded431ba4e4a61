"""The agent's stream: sends, opens and serve go over it by default
(the hub's /metrics counts them with transport="agent_stream"), a refusal on it
raises what a Send or Open call raises, duplicates are answered as Send
answers them, sends in flight when the stream breaks are sent again (never
lost, never doubled), a hub without the stream is served unary, and a hub
whose stream takes no opens is opened with Open calls."""

from __future__ import annotations

import asyncio
import re
import threading
import urllib.request
from concurrent import futures
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import grpc
import pytest

import hubd
import hubd.aio
from hubd import pb

from .conftest import Hub, Names, Serving, free_port, transcript

HubFactory = Callable[..., Hub]
Counts = Dict[Tuple[str, str, str], float]


class MetricsHub:
    """A hub whose HTTP port serves /metrics."""

    def __init__(self, hub: Hub, http: str) -> None:
        self.hub, self.http = hub, http

    @property
    def addr(self) -> str:
        return self.hub.addr

    def requests(self) -> Counts:
        """hubd_requests_total by (transport, method, code)."""
        text = urllib.request.urlopen(f"http://{self.http}/metrics", timeout=10).read().decode()
        out: Counts = {}
        for m in re.finditer(
            r'^hubd_requests_total\{code="(\w+)",method="(\w+)",transport="(\w+)"\} (\S+)$', text, re.M
        ):
            out[(m.group(3), m.group(2), m.group(1))] = float(m.group(4))
        return out


def delta(before: Counts, after: Counts) -> Counts:
    """What changed between two readings (only the keys that did)."""
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


@pytest.fixture(scope="module")
def mhub(hub_factory: HubFactory) -> MetricsHub:
    http = f"127.0.0.1:{free_port()}"
    return MetricsHub(hub_factory("--http", http), http)


@pytest.fixture
def clients(mhub: MetricsHub) -> Iterator[Callable[..., hubd.Client]]:
    made: List[hubd.Client] = []

    def dial(name: str, **kw: Any) -> hubd.Client:
        c = hubd.Client(mhub.addr, name=name, **kw)
        made.append(c)
        return c

    yield dial
    for c in made:
        c.close()


def test_sends_go_over_the_stream(mhub: MetricsHub, clients: Callable[..., hubd.Client], names: Names) -> None:
    A, B = names("alice"), names("bob")
    alice, unary = clients(A), clients(A, transport="unary")
    assert (alice.transport, unary.transport) == ("stream", "unary")
    s = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B))
    before = mhub.requests()
    alice.send_text(s.id, "one")
    alice.set_context(s.id, {"k": 1})
    alice.send_event(s.id, "app.ping", b"x")
    alice.send(s.id, pb.Envelope(type="app.raw", custom=b"y"))
    assert delta(before, mhub.requests()) == {("agent_stream", "Send", "OK"): 4}
    before = mhub.requests()
    unary.send_event(s.id, "app.ping", b"z")
    assert delta(before, mhub.requests()) == {("grpc", "Send", "OK"): 1}
    # Sends of several threads share the one stream.
    before = mhub.requests()
    with futures.ThreadPoolExecutor(8) as pool:
        acks = list(pool.map(lambda i: alice.send_event(s.id, "app.n", str(i).encode()), range(40)))
    assert len({a.seq for a in acks}) == 40
    assert delta(before, mhub.requests()) == {("agent_stream", "Send", "OK"): 40}
    with pytest.raises(ValueError, match="transport"):
        hubd.Client(mhub.addr, name=A, transport="carrier-pigeon")


def test_over_a_mebibyte_goes_unary(mhub: MetricsHub, clients: Callable[..., hubd.Client], names: Names) -> None:
    alice = clients(names("alice"))
    s = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(names("bob")))
    alice.send_event(s.id, "app.small")  # the stream is up
    before = mhub.requests()
    with pytest.raises(hubd.TooLarge):
        alice.send_event(s.id, "app.big", b"x" * (3 << 19))  # 1.5 MiB
    alice.send_event(s.id, "app.small")  # the stream lives on
    assert delta(before, mhub.requests()) == {("grpc", "Send", "ResourceExhausted"): 1, ("agent_stream", "Send", "OK"): 1}


@pytest.mark.parametrize("first, second", [("stream", "stream"), ("stream", "unary"), ("unary", "stream")])
def test_duplicate_client_msg_id(
    clients: Callable[..., hubd.Client], names: Names, first: str, second: str
) -> None:
    A = names("alice")
    one, two = clients(A, transport=first), clients(A, transport=second)
    s = one.open(graph=hubd.sequence(A, names("bob")), participants=hubd.auto_accepted(names("bob")))
    ack = one.send_text(s.id, "findings", client_msg_id="dup-1")
    again = two.send_text(s.id, "findings", client_msg_id="dup-1")
    assert not ack.duplicate and again.duplicate
    assert (again.seq, again.id, again.accepted_at, again.client_msg_id) == (ack.seq, ack.id, ack.accepted_at, "dup-1")
    assert [e.client_msg_id for e in one.read_log(s.id)].count("dup-1") == 1


def refusal(call: Callable[[], Any]) -> Tuple[type, str, str, Optional[grpc.StatusCode], Tuple[str, Dict[str, str]]]:
    with pytest.raises(hubd.HubError) as info:
        call()
    e = info.value
    cause = e.__cause__
    assert isinstance(cause, grpc.RpcError)
    return type(e), e.reason, e.detail, e.code, hubd.errors.error_info(cause.trailing_metadata())  # type: ignore


def test_refusals_are_the_same_on_both_transports(clients: Callable[..., hubd.Client], names: Names) -> None:
    A, B, C = names("alice"), names("bob"), names("carol")
    alice = clients(A)
    s = alice.open(graph=hubd.sequence(A, B, C), participants=hubd.auto_accepted(B, C))
    stream, unary = clients(C), clients(C, transport="unary")
    got = [refusal(lambda: c.send_text(s.id, "me first")) for c in (stream, unary)]
    assert got[0] == got[1]
    assert got[0][:2] == (hubd.OutOfTurn, "OUT_OF_TURN") and got[0][3] == grpc.StatusCode.FAILED_PRECONDITION
    assert got[0][4] == ("OUT_OF_TURN", {})
    bad = [refusal(lambda: c.send_text("not-a-uuid", "x")) for c in (stream, unary)]
    assert bad[0] == bad[1] and bad[0][0] is hubd.Malformed


def test_serve_over_the_stream(mhub: MetricsHub, clients: Callable[..., hubd.Client], names: Names) -> None:
    A, B = names("a"), names("b")
    a, b = clients(A), clients(B)
    views: List[bool] = []

    def handler(t: hubd.Turn) -> str:
        views.append(t.view is not None)
        return f"turn {t.seq}"

    serving = Serving()
    try:
        for c in (a, b):
            serving.start(c, handler)
        before = mhub.requests()
        s = a.open_workflow(hubd.round_robin([A, B], 6), B)
        turns, reason = transcript(a, s.id)
    finally:
        serving.close()
    assert reason == "max_turns" and len(turns) == 6
    assert views == [True] * 6
    d = delta(before, mhub.requests())
    # Six replies over the stream, no Send call, and no GetView call: each
    # turn notice carried its view.
    assert d.get(("agent_stream", "Send", "OK")) == 6
    assert ("grpc", "Send", "OK") not in d and ("grpc", "GetView", "OK") not in d, d


def test_aio_over_the_stream(mhub: MetricsHub, names: Names) -> None:
    A, B = names("a"), names("b")

    async def main() -> None:
        async with hubd.aio.Client(mhub.addr, name=A) as a, hubd.aio.Client(mhub.addr, name=B) as b:
            async with hubd.aio.Client(mhub.addr, name=B, transport="unary") as bu:
                assert (a.transport, bu.transport) == ("stream", "unary")
                s = await a.open(graph=hubd.sequence(A, B), participants=hubd.auto_accepted(B))
                got = []
                for c in (b, bu):
                    with pytest.raises(hubd.OutOfTurn) as e:
                        await c.send_text(s.id, "me first")
                    got.append((e.value.reason, e.value.detail, e.value.code))
                assert got[0] == got[1]
                await a.close_session(s.id)  # no turn of it for serve below
            stop = asyncio.Event()

            async def handler(t: hubd.aio.Turn) -> str:
                assert t.view is not None
                return f"turn {t.seq}"

            before = mhub.requests()
            servers = [asyncio.ensure_future(c.serve(handler, stop=stop)) for c in (a, b)]
            s = await a.open_workflow(hubd.round_robin([A, B], 4), B)
            turns = [e async for e in a.follow(s.id, timeout=30) if hubd.is_turn(e)]
            stop.set()
            await asyncio.wait_for(asyncio.gather(*servers), 15)
            assert len(turns) == 4
            # Concurrent sends share the client's stream.
            c = await a.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B))
            acks = await asyncio.gather(*(a.send_event(c.id, "app.n") for _ in range(20)))
            assert len({k.seq for k in acks}) == 20
            d = delta(before, mhub.requests())
            assert d.get(("agent_stream", "Send", "OK")) == 4 + 20, d
            assert ("grpc", "Send", "OK") not in d and ("grpc", "GetView", "OK") not in d, d

    asyncio.run(main())


def test_sends_in_flight_when_the_stream_breaks(hub_factory: HubFactory, caplog: pytest.LogCaptureFixture) -> None:
    """Four threads send continuously while the hub is killed and comes
    back: the sends in flight fail with the stream, are sent again, and
    every send is acknowledged and in the log once with the seq its ack
    gave."""
    caplog.set_level("INFO", logger="hubd")
    h = hub_factory()
    alice = hubd.Client(h.addr, name="alice", send_attempts=100, retry_budget=30)
    s = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted("bob"))
    acks: Dict[str, int] = {}
    failures: List[BaseException] = []
    lock = threading.Lock()
    started = threading.Event()

    def sender(n: int) -> None:
        for i in range(40):
            key = f"k-{n}-{i}"
            try:
                a = alice.send_event(s.id, "app.n", client_msg_id=key)
            except BaseException as e:  # noqa: BLE001 - reported below
                failures.append(e)
                return
            with lock:
                acks[key] = a.seq
                if len(acks) == 20:
                    started.set()

    threads = [threading.Thread(target=sender, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    assert started.wait(20)
    h.kill()
    h.restart()
    for t in threads:
        t.join(60)
    assert not failures, failures
    assert "agent stream: " in caplog.text  # a send was in flight as the stream broke
    assert len(acks) == 160
    log = {e.client_msg_id: e.seq for e in alice.read_log(s.id, limit=1000) if e.client_msg_id.startswith("k-")}
    assert log == acks
    assert len([e for e in alice.read_log(s.id, limit=1000) if e.client_msg_id.startswith("k-")]) == 160
    alice.close()


class OlderHubProxy(grpc.GenericRpcHandler):  # type: ignore[misc]
    """A hub older than the SDK, in front of a real one: without the
    agent stream (UNIMPLEMENTED), or with ``connect=True`` with it but
    without opens on it (its ready frame's ``opens`` cleared, and an open
    frame ends the whole stream, as such a hub does). Every other method is
    passed through to the real hub, byte for byte."""

    STREAMS = {"/hubd.v1.Hub/Subscribe", "/hubd.v1.Hub/Watch"}

    def __init__(self, target: str, *, connect: bool = False) -> None:
        self.ch = grpc.insecure_channel(target)
        self.connect = connect
        self.methods: List[str] = []
        self.frames: List[str] = []  # the kinds of the agent-stream frames the agent sent

    def service(self, details: Any) -> Any:
        method = details.method
        self.methods.append(method)
        md = [(k, v) for k, v in details.invocation_metadata]

        def fail(ctx: grpc.ServicerContext, e: grpc.RpcError) -> None:
            ctx.set_trailing_metadata(e.trailing_metadata())  # type: ignore[attr-defined]
            ctx.abort(e.code(), e.details())  # type: ignore[attr-defined]

        if method == "/hubd.v1.Hub/AgentStream":
            if not self.connect:
                return None
            remote_connect = self.ch.stream_stream(
                method, request_serializer=pb.AgentFrame.SerializeToString, response_deserializer=pb.HubFrame.FromString
            )

            def connect(frames: Iterator[pb.AgentFrame], ctx: grpc.ServicerContext) -> Iterator[pb.HubFrame]:
                calls: List[Any] = []

                def upstream() -> Iterator[pb.AgentFrame]:
                    for f in frames:
                        kind = f.WhichOneof("frame")
                        self.frames.append(kind)
                        if kind == "open":  # not a frame this hub knows: the stream ends
                            calls[0].cancel()
                            return
                        yield f

                call = remote_connect(upstream(), metadata=md)
                calls.append(call)
                ctx.add_callback(call.cancel)
                try:
                    for f in call:
                        if f.WhichOneof("frame") == "ready":
                            f.ready.opens = False
                        yield f
                except grpc.RpcError as e:
                    fail(ctx, e)

            return grpc.stream_stream_rpc_method_handler(
                connect,
                request_deserializer=pb.AgentFrame.FromString,
                response_serializer=pb.HubFrame.SerializeToString,
            )

        if method in self.STREAMS:
            remote_stream = self.ch.unary_stream(method)

            def stream(req: bytes, ctx: grpc.ServicerContext) -> Iterator[bytes]:
                call = remote_stream(req, metadata=md)
                ctx.add_callback(call.cancel)
                try:
                    yield from call
                except grpc.RpcError as e:
                    fail(ctx, e)

            return grpc.unary_stream_rpc_method_handler(stream)
        remote = self.ch.unary_unary(method)

        def unary(req: bytes, ctx: grpc.ServicerContext) -> bytes:
            try:
                return remote(req, metadata=md)  # type: ignore[no-any-return]
            except grpc.RpcError as e:
                fail(ctx, e)
                raise

        return grpc.unary_unary_rpc_method_handler(unary)


OlderHub = Callable[..., Tuple[OlderHubProxy, str]]


@pytest.fixture
def older_hub() -> Iterator[OlderHub]:
    """Serves OlderHubProxy(target, **kw) on a loopback port until the end of
    the test: ``proxy, addr = older_hub(target, **kw)``."""
    started: List[Tuple[OlderHubProxy, grpc.Server]] = []

    def start(target: str, **kw: Any) -> Tuple[OlderHubProxy, str]:
        proxy = OlderHubProxy(target, **kw)
        server = grpc.server(futures.ThreadPoolExecutor(8), handlers=[proxy])
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        started.append((proxy, server))
        return proxy, f"127.0.0.1:{port}"

    yield start
    for proxy, server in started:
        server.stop(None)
        proxy.ch.close()


def test_a_hub_without_the_stream(
    hub: Hub, older_hub: OlderHub, names: Names, caplog: pytest.LogCaptureFixture
) -> None:
    proxy, addr = older_hub(hub.addr)
    A, B = names("a"), names("b")
    a, b = hubd.Client(addr, name=A), hubd.Client(addr, name=B)
    serving = Serving()
    try:
        with caplog.at_level("INFO", logger="hubd"):
            for c in (a, b):
                serving.start(c, lambda t: f"turn {t.seq}")
            s = a.open_workflow(hubd.round_robin([A, B], 4), B)
            turns, reason = transcript(a, s.id)
            assert reason == "max_turns" and len(turns) == 4
            # C goes first and nobody serves C, so the turn stays C's (with B,
            # B's Serve could take its turn before A's send arrived).
            C = names("c")
            with pytest.raises(hubd.OutOfTurn):
                a.send_text(a.open(graph=hubd.sequence(C, A), participants=hubd.auto_accepted(C)).id, "me first")
    finally:
        serving.close()
        a.close()
        b.close()
    assert (a.transport, b.transport) == ("unary", "unary")
    assert "/hubd.v1.Hub/Subscribe" in proxy.methods and "/hubd.v1.Hub/Send" in proxy.methods
    assert "no agent stream" in caplog.text


def test_opens_go_over_the_stream(mhub: MetricsHub, clients: Callable[..., hubd.Client], names: Names) -> None:
    A, B = names("alice"), names("bob")
    alice, unary = clients(A), clients(A, transport="unary")
    before = mhub.requests()
    s = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B), idempotency_key="conv-1", task="hi")
    assert (s.creator, s.type, s.participants, s.existing) == (A, hubd.TYPE_CONVERSATION, [A, B], False)
    again = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B), idempotency_key="conv-1", task="hi")
    assert (again.id, again.existing) == (s.id, True)
    alice.send_text(s.id, "on the same stream")
    assert delta(before, mhub.requests()) == {("agent_stream", "Open", "OK"): 2, ("agent_stream", "Send", "OK"): 1}
    got = alice.get_session(s.id)
    assert (got.creator, got.participants, got.state) == (A, [A, B], "OPEN")
    # The same key with an Open call: the session the stream's open made.
    before = mhub.requests()
    third = unary.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B), idempotency_key="conv-1", task="hi")
    assert (third.id, third.existing) == (s.id, True)
    assert delta(before, mhub.requests()) == {("grpc", "Open", "OK"): 1}
    # Opens of several threads share the one stream.
    before = mhub.requests()
    with futures.ThreadPoolExecutor(8) as pool:
        opened = list(
            pool.map(lambda _: alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B)), range(12))
        )
    assert len({o.id for o in opened}) == 12 and {o.creator for o in opened} == {A}
    assert delta(before, mhub.requests()) == {("agent_stream", "Open", "OK"): 12}
    # A request over 1 MiB is an Open call (which refuses it alone), as an
    # envelope over 1 MiB is a Send call; the stream lives on.
    st = alice._core._stream
    before = mhub.requests()
    with pytest.raises(hubd.TooLarge):
        alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B), task="x" * (3 << 19))
    alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B))
    assert alice._core._stream is st
    assert delta(before, mhub.requests()) == {("grpc", "Open", "ResourceExhausted"): 1, ("agent_stream", "Open", "OK"): 1}


def test_a_refused_open_on_the_stream(mhub: MetricsHub, clients: Callable[..., hubd.Client], names: Names) -> None:
    """A refused open raises what the Open call raises (the same class,
    reason, detail, code and ErrorInfo) and leaves the stream open."""
    A = names("alice")
    stream, unary = clients(A), clients(A, transport="unary")
    s = stream.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(names("bob")))
    st = stream._core._stream
    assert st is not None and st.opens
    before = mhub.requests()
    got = [refusal(lambda: c.open("nosuch@1")) for c in (stream, unary)]
    assert got[0] == got[1]
    assert got[0][:2] == (hubd.UnknownSessionType, "UNKNOWN_SESSION_TYPE"), got[0]
    assert got[0][3] == grpc.StatusCode.INVALID_ARGUMENT and got[0][4][0] == "UNKNOWN_SESSION_TYPE", got[0]
    assert delta(before, mhub.requests()) == {
        ("agent_stream", "Open", "InvalidArgument"): 1,
        ("grpc", "Open", "InvalidArgument"): 1,
    }
    before = mhub.requests()
    stream.send_text(s.id, "still here")
    assert stream._core._stream is st and not st.done.is_set()
    assert delta(before, mhub.requests()) == {("agent_stream", "Send", "OK"): 1}


def test_a_hub_whose_stream_takes_no_opens(mhub: MetricsHub, older_hub: OlderHub, names: Names) -> None:
    """Against a hub whose ready frame does not say ``opens`` (which ends a
    stream on an open frame), opens are Open calls and sends still go over
    the stream; the asyncio client does the same."""
    proxy, addr = older_hub(mhub.addr, connect=True)
    A, B = names("alice"), names("bob")
    alice = hubd.Client(addr, name=A)
    try:
        alice.send_event(alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B)).id, "app.up")
        before = mhub.requests()
        s = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B), idempotency_key="k")
        assert (s.creator, s.existing) == (A, False)
        assert alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B), idempotency_key="k").existing
        with pytest.raises(hubd.UnknownSessionType):
            alice.open("nosuch@1")
        alice.send_text(s.id, "hi")
        assert alice.transport == "stream"
        assert delta(before, mhub.requests()) == {
            ("grpc", "Open", "OK"): 2,
            ("grpc", "Open", "InvalidArgument"): 1,
            ("agent_stream", "Send", "OK"): 1,
        }
    finally:
        alice.close()

    async def main() -> None:
        async with hubd.aio.Client(addr, name=A) as a:
            await a.send_event(s.id, "app.up")
            before = mhub.requests()
            again = await a.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B), idempotency_key="k")
            assert (again.id, again.existing) == (s.id, True)
            with pytest.raises(hubd.UnknownSessionType):
                await a.open("nosuch@1")
            await a.send_text(s.id, "hi")
            assert a.transport == "stream"
            assert delta(before, mhub.requests()) == {
                ("grpc", "Open", "OK"): 1,
                ("grpc", "Open", "InvalidArgument"): 1,
                ("agent_stream", "Send", "OK"): 1,
            }

    asyncio.run(main())
    assert "open" not in proxy.frames and proxy.frames.count("send") == 4, proxy.frames
    assert proxy.methods.count("/hubd.v1.Hub/Open") == 6 and proxy.methods.count("/hubd.v1.Hub/AgentStream") == 2


def test_an_open_in_flight_when_the_stream_breaks(hub: Hub, older_hub: OlderHub, names: Names) -> None:
    """An open on a stream that breaks before its answer raises Unavailable
    (its outcome unknown: open again with the same idempotency key). Here
    the stream is told that a hub without opens takes them: that hub ends
    the stream on the open frame."""
    from hubd import _stream

    proxy, addr = older_hub(hub.addr, connect=True)

    async def main() -> None:
        async with hubd.aio.Client(addr, name=names("alice")) as alice:
            st = _stream.AgentStream(alice.raw, alice.metadata, alice.log)
            await st.start(None, 10)
            assert not st.opens
            st.opens = True  # wrongly
            req = hubd.open_request(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(names("bob")))
            with pytest.raises(hubd.Unavailable) as e:
                await st.open(req, 10)
            assert e.value.op == "open" and "agent stream: " in str(e.value), repr(e.value)
            await asyncio.wait_for(st.done.wait(), 10)
            with pytest.raises(hubd.Unavailable):  # a broken stream takes no more
                await st.open(req, 10)

    asyncio.run(main())
    assert proxy.frames == ["open"]


def test_aio_opens_over_the_stream(mhub: MetricsHub, names: Names) -> None:
    A, B = names("alice"), names("bob")

    async def main() -> None:
        async with hubd.aio.Client(mhub.addr, name=A) as a, hubd.aio.Client(mhub.addr, name=A, transport="unary") as u:
            before = mhub.requests()
            s = await a.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B), idempotency_key="c-1")
            assert (s.creator, s.participants, s.existing) == (A, [A, B], False)
            again = await a.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B), idempotency_key="c-1")
            assert (again.id, again.existing) == (s.id, True)
            assert delta(before, mhub.requests()) == {("agent_stream", "Open", "OK"): 2}
            # Concurrent opens share the client's stream.
            before = mhub.requests()
            many = await asyncio.gather(
                *(a.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(B)) for _ in range(10))
            )
            assert len({o.id for o in many}) == 10
            assert delta(before, mhub.requests()) == {("agent_stream", "Open", "OK"): 10}
            # A refusal: what the Open call raises; the stream lives on.
            st = a._stream
            assert st is not None and st.opens
            before = mhub.requests()
            got = []
            for c in (a, u):
                with pytest.raises(hubd.HubError) as e:
                    await c.open("nosuch@1")
                got.append((type(e.value), e.value.reason, e.value.detail, e.value.code))
            assert got[0] == got[1] and got[0][0] is hubd.UnknownSessionType, got
            await a.send_text(s.id, "still here")
            assert a._stream is st and not st.done.is_set()
            assert delta(before, mhub.requests()) == {
                ("agent_stream", "Open", "InvalidArgument"): 1,
                ("grpc", "Open", "InvalidArgument"): 1,
                ("agent_stream", "Send", "OK"): 1,
            }

    asyncio.run(main())


def test_aio_sends_in_flight_when_the_stream_breaks(hub_factory: HubFactory, caplog: pytest.LogCaptureFixture) -> None:
    """The same through the asyncio client: four tasks send continuously
    over one stream while the hub is killed and comes back."""
    caplog.set_level("INFO", logger="hubd")
    h = hub_factory()

    async def main() -> None:
        async with hubd.aio.Client(h.addr, name="alice", send_attempts=100, retry_budget=30) as alice:
            s = await alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted("bob"))
            acks: Dict[str, int] = {}
            started = asyncio.Event()

            async def sender(n: int) -> None:
                for i in range(40):
                    key = f"k-{n}-{i}"
                    acks[key] = (await alice.send_event(s.id, "app.n", client_msg_id=key)).seq
                    if len(acks) == 20:
                        started.set()

            tasks = asyncio.gather(*(sender(n) for n in range(4)))
            await asyncio.wait_for(started.wait(), 20)
            h.kill()
            await asyncio.get_running_loop().run_in_executor(None, h.restart)
            await asyncio.wait_for(tasks, 60)
            assert len(acks) == 160
            log = [e for e in await alice.read_log(s.id, limit=1000) if e.client_msg_id.startswith("k-")]
            assert len(log) == 160 and {e.client_msg_id: e.seq for e in log} == acks

    asyncio.run(main())
    assert "agent stream: " in caplog.text  # a send was in flight as the stream broke


def test_the_hub_ending_the_stream_says_why(hub_factory: HubFactory) -> None:
    """A hub that stops ends each agent stream with a closing frame; the
    client closes its side and the stream ends DRAINING (Unavailable), not
    cancelled."""
    from hubd import _stream

    h = hub_factory()

    async def main() -> None:
        async with hubd.aio.Client(h.addr, name="alice") as alice:
            st = _stream.AgentStream(alice.raw, alice.metadata, alice.log)
            await st.start(pb.SubscribeRequest(), 10)
            assert await asyncio.to_thread(h.stop) == 0
            try:
                await asyncio.wait_for(st.done.wait(), 10)
            except asyncio.TimeoutError:
                raise AssertionError("the stream did not end with the hub") from None
            err = st.error
            assert isinstance(err, hubd.Unavailable), repr(err)
            assert err.reason == "DRAINING", repr(err)

    asyncio.run(main())


class ClosingHub(grpc.GenericRpcHandler):  # type: ignore[misc]
    """A scripted hub whose agent stream sends ready, then a closing frame
    (DRAINING), reads until the agent closes its side and ends the stream
    once the test releases it. The real hub ends the stream as soon as the
    agent closes its side, so a send in that window is a race there."""

    def __init__(self) -> None:
        self.half_closed = threading.Event()
        self.release = threading.Event()

    def service(self, details: Any) -> Any:
        if details.method != "/hubd.v1.Hub/AgentStream":
            return None

        def connect(frames: Iterator[pb.AgentFrame], ctx: grpc.ServicerContext) -> Iterator[pb.HubFrame]:
            yield pb.HubFrame(ready=pb.StreamReady(agent="alice", max_in_flight=8, opens=True))
            code = grpc.StatusCode.UNAVAILABLE.value[0]
            why = pb.StreamError(code=code, message="the hub is closing", reason=pb.DRAINING)
            yield pb.HubFrame(closing=why)
            for _ in frames:  # until the agent closes its side
                pass
            self.half_closed.set()
            self.release.wait(10)
            ctx.abort(grpc.StatusCode.UNAVAILABLE, "the hub is closing")

        return grpc.stream_stream_rpc_method_handler(
            connect, request_deserializer=pb.AgentFrame.FromString, response_serializer=pb.HubFrame.SerializeToString
        )


def test_a_send_after_the_closing_frame() -> None:
    """Once the hub's closing frame has made the agent close its side, a
    send or open on the stream raises Unavailable at once, naming the hub's
    reason, instead of waiting for the stream's end."""
    hub = ClosingHub()
    server = grpc.server(futures.ThreadPoolExecutor(4), handlers=[hub])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    alice = hubd.Client(f"127.0.0.1:{port}", name="alice")
    run = alice._loop.run  # the sync client's stream is its core's, on its loop
    try:
        st = run(alice._core._main_stream(5, False))
        assert st is not None
        assert hub.half_closed.wait(5), "the agent did not close its side after the closing frame"
        env = pb.Envelope(type="text", text=pb.Text(text="late"), client_msg_id="late-1")
        with pytest.raises(hubd.Unavailable, match="the hub is closing") as raised:
            run(st.send("0194d1a0-0000-7000-8000-0000000000aa", env, 1))
        assert raised.value.op == "send"
        with pytest.raises(hubd.Unavailable, match="the hub is closing"):
            run(st.open(pb.OpenRequest(type="conversation@1"), 1))
    finally:
        hub.release.set()
        alice.close()
        server.stop(None)


def test_aio_a_send_after_the_closing_frame() -> None:
    """The same with the asyncio client."""
    hub = ClosingHub()
    server = grpc.server(futures.ThreadPoolExecutor(4), handlers=[hub])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()

    async def main() -> None:
        alice = hubd.aio.Client(f"127.0.0.1:{port}", name="alice")
        try:
            st = await alice._main_stream(5, False)
            assert st is not None
            assert await asyncio.to_thread(hub.half_closed.wait, 5), "the agent did not close its side"
            env = pb.Envelope(type="text", text=pb.Text(text="late"), client_msg_id="late-1")
            with pytest.raises(hubd.Unavailable, match="the hub is closing"):
                await st.send("0194d1a0-0000-7000-8000-0000000000aa", env, 1)
            with pytest.raises(hubd.Unavailable, match="the hub is closing"):
                await st.open(pb.OpenRequest(type="conversation@1"), 1)
        finally:
            hub.release.set()
            await alice.close()

    try:
        asyncio.run(main())
    finally:
        server.stop(None)
