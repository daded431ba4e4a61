"""Every stable reason the hub sends in normal use, provoked for real and
raised as its exception; and the mapping of every reason and code."""

from __future__ import annotations

import asyncio
import pickle
import re
from typing import Any, Callable, List, Optional, Tuple, Type

import grpc
import pytest

import hubd
import hubd.aio
from hubd import pb
from hubd._pb import error_details_pb2, status_pb2

from .conftest import MAX_ENVELOPE_BYTES, MAX_OPEN_PER_AGENT, Hub, Names

Connect = Callable[..., hubd.Client]


def test_every_reason_has_an_exception() -> None:
    missing = [n for n in pb.Reason.keys() if n != "REASON_UNSPECIFIED" and hubd.error_class(n) is None]
    assert missing == []
    for name in pb.Reason.keys():
        cls = hubd.error_class(name)
        if cls is not None:
            assert cls.REASON == name and issubclass(cls, hubd.HubError)
    assert hubd.error_class("NO_SUCH_REASON") is None


class FakeRpcError(grpc.RpcError, grpc.Call):  # type: ignore[misc]
    """What gRPC raises, with a chosen status."""

    def __init__(self, code: grpc.StatusCode, details: str, reason: str = "", domain: str = "hubd") -> None:
        self._code, self._details = code, details
        self._trailing: List[Tuple[str, Any]] = [("other", "x")]
        if reason:
            st = status_pb2.Status(code=code.value[0], message=details)
            st.details.add().Pack(error_details_pb2.ErrorInfo(reason=reason, domain=domain))
            self._trailing.append(("grpc-status-details-bin", st.SerializeToString()))

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> Any:
        return self._trailing

    def initial_metadata(self) -> Any:
        return ()

    def is_active(self) -> bool:
        return False

    def time_remaining(self) -> Optional[float]:
        return None

    def cancel(self) -> bool:
        return False

    def add_callback(self, callback: Any) -> bool:
        return False


@pytest.mark.parametrize("reason", [n for n in pb.Reason.keys() if n != "REASON_UNSPECIFIED"])
def test_mapping_of_every_reason(reason: str) -> None:
    e = hubd.errors.from_rpc_error("send", FakeRpcError(grpc.StatusCode.FAILED_PRECONDITION, "why", reason))
    assert type(e) is hubd.error_class(reason)
    assert (e.reason, e.detail, e.code, e.op) == (reason, "why", grpc.StatusCode.FAILED_PRECONDITION, "send")
    assert str(e) == f"send: why ({reason})"
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is type(e) and back.reason == reason and back.detail == "why"


@pytest.mark.parametrize(
    "code, cls",
    [
        (grpc.StatusCode.UNAVAILABLE, hubd.Unavailable),
        (grpc.StatusCode.UNAUTHENTICATED, hubd.Unauthenticated),
        (grpc.StatusCode.CANCELLED, hubd.Canceled),
        (grpc.StatusCode.DEADLINE_EXCEEDED, hubd.DeadlineExceeded),
        (grpc.StatusCode.INTERNAL, hubd.HubError),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, hubd.TooLarge),
    ],
)
def test_mapping_of_codes(code: grpc.StatusCode, cls: Type[hubd.HubError]) -> None:
    e = hubd.errors.from_rpc_error("open", FakeRpcError(code, "gone"))
    assert type(e) is cls and e.reason == "" and e.code == code
    assert str(e) == f"open: gone ({code.name})"
    # A reason of another domain is no reason of the hub's.
    other = hubd.errors.from_rpc_error("open", FakeRpcError(code, "gone", "OUT_OF_TURN", domain="elsewhere"))
    assert type(other) is cls


def test_retryable() -> None:
    def err(code: grpc.StatusCode, reason: str = "") -> hubd.HubError:
        return hubd.errors.from_rpc_error("x", FakeRpcError(code, "", reason))

    assert err(grpc.StatusCode.UNAVAILABLE).retryable
    assert err(grpc.StatusCode.UNAVAILABLE, "DRAINING").retryable
    assert err(grpc.StatusCode.UNAVAILABLE, "SESSION_FAILED").retryable
    assert err(grpc.StatusCode.RESOURCE_EXHAUSTED, "SLOW_SUBSCRIBER").retryable
    assert err(grpc.StatusCode.INTERNAL).retryable  # a reset stream
    assert not err(grpc.StatusCode.INTERNAL, "INTERNAL").retryable
    assert not err(grpc.StatusCode.FAILED_PRECONDITION, "OUT_OF_TURN").retryable
    assert not err(grpc.StatusCode.RESOURCE_EXHAUSTED, "DISK_FULL").retryable
    assert isinstance(err(grpc.StatusCode.UNAVAILABLE, "DRAINING"), hubd.Unavailable)


def test_made_by_hand() -> None:
    e = hubd.OutOfTurn("late")
    assert e.reason == "OUT_OF_TURN" and e.code is None and str(e) == "late (OUT_OF_TURN)"
    assert repr(e).startswith("OutOfTurn('late'")


def check(call: Callable[[], Any], cls: Type[hubd.HubError], code: grpc.StatusCode, msg: str) -> hubd.HubError:
    with pytest.raises(hubd.HubError) as info:
        call()
    e = info.value
    assert type(e) is cls, repr(e)
    assert e.reason == cls.REASON and e.code == code, repr(e)
    assert msg in e.detail and e.detail in str(e), repr(e)
    return e


@pytest.mark.parametrize("transport", ["stream", "unary"])
def test_refusals(connect: Connect, names: Names, transport: str) -> None:
    """Every refusal, the sends' over the agent stream and with Send calls."""
    alice, bob, carol, mallory = (connect(names(n), transport=transport) for n in ("alice", "bob", "carol", "mallory"))
    A, B, C = names("alice"), names("bob"), names("carol")

    def pipeline() -> str:
        return alice.open(graph=hubd.sequence(A, B, C), participants=hubd.auto_accepted(B, C)).id

    live, closed = pipeline(), pipeline()
    alice.close_session(closed)
    pending = alice.open_workflow(hubd.sequence(A, B), B).id
    acked = alice.open_workflow(hubd.sequence(A, B), B).id
    bob.ack_invite(acked)

    FP, IA, PD = (
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.PERMISSION_DENIED,
    )
    check(lambda: carol.send_text(live, "me first"), hubd.OutOfTurn, FP, f'workflow expects "{A}" to speak, got "{C}"')
    check(lambda: alice.send_text(closed, "late"), hubd.SessionClosed, FP, "explicit_close")
    check(lambda: alice.send_text(pending, "early"), hubd.SessionNotOpen, FP, f"waiting for invite acks from {B}")
    check(lambda: mallory.send_text(live, "hi"), hubd.NotParticipant, PD, names("mallory"))
    check(
        lambda: alice.send_packet(live, hubd.Packet("over").handoff(target="zed")),
        hubd.BadHandoffTarget,
        IA,
        f"valid targets: {B}, {C}",
    )
    check(lambda: alice.open_workflow(hubd.sequence(A, "zed"), B), hubd.InvalidGraph, IA, "zed")
    check(lambda: alice.open("nosuch@1"), hubd.UnknownSessionType, IA, "nosuch")
    check(lambda: bob.ack_invite(acked), hubd.BadLifecycleTransition, FP, "session_invite_ack")
    check(lambda: alice.send(live, pb.Envelope(type=hubd.EVENT_OPENED)), hubd.HubOnlyEvent, PD, "session_opened")
    check(lambda: alice.get_session("not-a-uuid"), hubd.Malformed, IA, "session_id")
    check(
        lambda: alice.get_session("01900000-0000-7000-8000-000000000000"),
        hubd.UnknownSession,
        grpc.StatusCode.NOT_FOUND,
        "01900000-0000-7000-8000-000000000000",
    )
    check(
        lambda: alice.send_text(live, "x" * (MAX_ENVELOPE_BYTES + 100)),
        hubd.TooLarge,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        str(MAX_ENVELOPE_BYTES),
    )
    check(lambda: bob.close_session(live), hubd.PermissionDenied, PD, f'only the creator "{A}"')
    forged = pb.Envelope(type="text", text=pb.Text(text="it is me, bob"))
    setattr(forged, "from", B)  # "from" is a Python keyword
    check(lambda: alice.send(live, forged), hubd.Impersonation, PD, f'caller is "{A}"')
    # None of these wrote anything.
    assert alice.get_session(live).seq == alice.get_session(closed).seq - 1


def test_depth_exceeded(connect: Connect, names: Names) -> None:
    alice = connect(names("alice"))
    parent = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(names("bob"))).id
    with pytest.raises(hubd.DepthExceeded) as e:
        for _ in range(MAX_OPEN_PER_AGENT):
            parent = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(names("bob")), parent=parent).id
    assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION and "depth" in e.value.detail


def test_limit_reached(connect: Connect, names: Names) -> None:
    alice = connect(names("alice"))
    for _ in range(MAX_OPEN_PER_AGENT):
        alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(names("bob")))
    e = check(
        lambda: alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(names("bob"))),
        hubd.LimitReached,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        f"the limit is {MAX_OPEN_PER_AGENT}",
    )
    assert not e.retryable


def over_grpc_cap(e: hubd.HubError) -> int:
    """The limit an error of gRPC's own size cap names (its reason empty:
    gRPC refused the message, not the hub)."""
    assert type(e) is hubd.TooLarge and e.code == grpc.StatusCode.RESOURCE_EXHAUSTED and e.reason == "", repr(e)
    m = re.search(r"over gRPC's limit of (\d+) bytes per message", e.detail)
    assert m is not None and e.detail in str(e), repr(e)
    return int(m.group(1))


@pytest.mark.parametrize("transport", ["stream", "unary"])
def test_over_grpc_size_cap_is_too_large(connect: Connect, names: Names, transport: str) -> None:
    """A request over the hub's request limit is refused by the hub, with
    TOO_LARGE naming the limit and its flag; one over gRPC's own cap on one
    message (twice the hub's limit, or the client's when it sets one) is
    refused by gRPC without an ErrorInfo: it is TooLarge all the same, its
    detail naming the size and the limit."""
    alice = connect(names("alice"), transport=transport)
    s = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(names("bob")))
    with pytest.raises(hubd.TooLarge) as hub_info:
        alice.send_event(s.id, "app.big", b"x" * (5 << 20))
    assert hub_info.value.reason == "TOO_LARGE" and "(--max-request-bytes)" in hub_info.value.detail, repr(hub_info.value)
    big = 9 << 20  # over twice the hub's default request limit of 4 MiB + 64 KiB: gRPC's cap
    with pytest.raises(hubd.HubError) as info:
        alice.send_event(s.id, "app.big", b"x" * big)
    limit = over_grpc_cap(info.value)
    size = re.search(r"the message is (\d+) bytes", info.value.detail)
    assert size is not None and int(size.group(1)) > big > limit >= 4 << 20, info.value.detail
    with pytest.raises(hubd.HubError) as info:
        alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(names("bob")), task="x" * big)
    assert over_grpc_cap(info.value) == limit
    alice.send_event(s.id, "app.small")  # the client goes on
    tiny = connect(names("alice"), transport="unary", channel_options=[("grpc.max_send_message_length", 1024)])
    with pytest.raises(hubd.HubError) as info:
        tiny.send_event(s.id, "app.medium", b"x" * 2048)
    assert over_grpc_cap(info.value) == 1024


def test_over_grpc_size_cap_is_too_large_aio(hub: Hub, names: Names) -> None:
    async def main() -> None:
        async with hubd.aio.Client(hub.addr, name=names("alice")) as alice:
            s = await alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(names("bob")))
            with pytest.raises(hubd.HubError) as info:
                await alice.send_event(s.id, "app.big", b"x" * (9 << 20))
            assert over_grpc_cap(info.value) >= 4 << 20

    asyncio.run(asyncio.wait_for(main(), 60))


def test_over_cap_detail() -> None:
    """gRPC's texts of a message over its cap, each with the size and the
    limit named first."""
    cases = {
        "grpc: received message larger than max (5242995 vs. 4194304)": (
            "the message is 5242995 bytes, over gRPC's limit of 4194304 bytes"
        ),
        "Received message larger than max (300 vs 200)": "the message is 300 bytes, over gRPC's limit of 200 bytes",
        "Attempted to send message with a size larger than 16": "the message is over gRPC's limit of 16 bytes",
    }
    for text, want in cases.items():
        e = hubd.errors.from_rpc_error("send", FakeRpcError(grpc.StatusCode.RESOURCE_EXHAUSTED, text))
        assert type(e) is hubd.TooLarge and e.detail.startswith(want) and text in e.detail, e.detail
    # The hub's own refusals keep their message.
    e = hubd.errors.from_rpc_error(
        "send", FakeRpcError(grpc.StatusCode.RESOURCE_EXHAUSTED, "larger than max (1 vs. 0)", "LIMIT_REACHED")
    )
    assert type(e) is hubd.LimitReached and e.detail == "larger than max (1 vs. 0)"


def test_token_to_a_development_hub(hub: Hub) -> None:
    c = hubd.Client(hub.addr, token="not-a-token-of-this-hub")
    check(lambda: c.list_sessions(), hubd.Unauthenticated, grpc.StatusCode.UNAUTHENTICATED, "Bearer")
    c.close()


def test_deadline_and_cancel(connect: Connect, names: Names) -> None:
    alice = connect(names("alice"))
    s = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted(names("bob")))
    with pytest.raises(hubd.DeadlineExceeded) as e:
        list(alice.watch(s.id, timeout=0.3))
    # The client's deadline or the hub's (its status then carries the
    # reason): both expire at 0.3 s, and on a loaded machine either can be
    # first.
    assert e.value.code == grpc.StatusCode.DEADLINE_EXCEEDED and e.value.reason in ("", "DEADLINE_EXCEEDED")
    call = alice.raw.Subscribe(pb.SubscribeRequest(), metadata=alice.metadata)
    call.cancel()
    with pytest.raises(hubd.Canceled):
        next(hubd.Stream("subscribe", call))
