"""What the client core needs besides its calls: connection settings,
requests, backoff, serve's hooks."""

from __future__ import annotations

import asyncio
import inspect
import ipaddress
import logging
import random
from typing import Any, Callable, List, Mapping, Optional, Sequence, Tuple

import grpc

from . import errors
from ._model import AGENT_HEADER, TLS, Packet, context_update, new_msg_id
from ._pb import hub_pb2 as pb

_CHANNEL_OPTIONS: List[Tuple[str, Any]] = [
    # gRPC's default reconnect backoff grows to two minutes; an agent wants
    # its hub back within seconds of a restart.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 5000),
    # gRPC core reads this one as the connect timeout of an attempt (as
    # Go's MinConnectTimeout): a hub busy starting up needs a moment.
    ("grpc.min_reconnect_backoff_ms", 5000),
    # A log page of 1000 envelopes can exceed gRPC's default 4 MiB.
    ("grpc.max_receive_message_length", 256 << 20),
]

Metadata = Tuple[Tuple[str, str], ...]

STALE = (errors.OutOfTurn, errors.SessionClosed, errors.SessionNotOpen)
"""The refusals of a reply whose turn had passed: dropped quietly."""

LOG = logging.getLogger("hubd")


def is_loopback(target: str) -> bool:
    """Whether a gRPC target names a loopback host or a unix socket."""
    if target.startswith("unix:"):
        return True
    if ":///" in target:
        target = target.split(":///", 1)[1]
    host = target
    if target.startswith("["):
        host = target[1:].split("]", 1)[0]
    elif target.count(":") == 1:
        host = target.rsplit(":", 1)[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check(target: str, name: str, token: str, tls: Optional[TLS], insecure: bool) -> None:
    """Refuse settings that cannot work or would leak a token."""
    if not name and not token and not (tls is not None and tls.has_client_cert):
        raise ValueError("hubd: a name, a token or a client certificate (TLS with cert) is required")
    if token and tls is None and not insecure and not is_loopback(target):
        raise ValueError(
            f"hubd: refusing to send a token over plaintext to {target}: "
            "give tls= (or insecure=True on a trusted network)"
        )
    if tls is not None and (tls.cert is None) != (tls.key is None):
        raise ValueError("hubd: TLS needs both cert and key for a client certificate")


def metadata(name: str, token: str) -> Metadata:
    """The call metadata naming the agent: its bearer token, or in
    development mode its name."""
    if token:
        return (("authorization", "Bearer " + token),)
    if name:
        return ((AGENT_HEADER, name),)
    return ()


def channel_options(tls: Optional[TLS], extra: Sequence[Tuple[str, Any]]) -> List[Tuple[str, Any]]:
    """The channel options: the SDK's, TLS's name override, then the
    caller's (which win)."""
    opts = list(_CHANNEL_OPTIONS)
    if tls is not None and tls.server_name:
        opts.append(("grpc.ssl_target_name_override", tls.server_name))
    opts.extend(extra)
    return opts


def credentials(tls: TLS) -> grpc.ChannelCredentials:
    """The channel credentials of TLS settings."""
    return grpc.ssl_channel_credentials(root_certificates=tls.ca, private_key=tls.key, certificate_chain=tls.cert)


def backoff_delay(n: int, base: float, cap: float) -> float:
    """The wait in seconds before retry ``n`` (from 1): exponential from
    base, capped, with "equal jitter" (half fixed, half random) so that many
    agents cut off at once do not come back in step."""
    d = base
    for _ in range(1, n):
        if d >= cap:
            break
        d *= 2
    d = min(d, cap)
    return d / 2 + random.uniform(0, d / 2)


def envelope(
    e: pb.Envelope,
    client_msg_id: Optional[str],
    causation_id: Optional[str],
    audience: Optional[Sequence[str]],
    traceparent: Optional[str],
) -> pb.Envelope:
    """Apply the send options to an envelope the SDK owns; give it a client
    message id when it has none."""
    if client_msg_id:
        e.client_msg_id = client_msg_id
    if causation_id:
        e.causation_id = causation_id
    if audience is not None:
        e.audience.SetInParent()
        e.audience.names.extend(audience)
    if traceparent:
        e.traceparent = traceparent
    if not e.client_msg_id:
        e.client_msg_id = new_msg_id()
    return e


def text_envelope(text: str) -> pb.Envelope:
    """A text turn."""
    return pb.Envelope(type="text", text=pb.Text(text=text))


def packet_envelope(p: Packet) -> pb.Envelope:
    """A packet turn."""
    return pb.Envelope(type="packet", packet=p.proto())


def context_envelope(set: Optional[Mapping[str, Any]], delete: Sequence[str]) -> pb.Envelope:
    """A context_set (not a turn)."""
    return pb.Envelope(type="context_set", context_set=context_update(set, delete))


def event_envelope(event_type: str, data: bytes) -> pb.Envelope:
    """A custom event."""
    return pb.Envelope(type=event_type, custom=bytes(data))


def copy_envelope(env: Optional[pb.Envelope]) -> pb.Envelope:
    """A copy of a caller's envelope, which the SDK may change."""
    out = pb.Envelope()
    if env is not None:
        out.CopyFrom(env)
    return out


def reply_envelope(reply: Any) -> Optional[pb.Envelope]:
    """The envelope of a handler's reply: a text, a Packet, or None."""
    if reply is None:
        return None
    if isinstance(reply, Packet):
        return packet_envelope(reply)
    if isinstance(reply, str):
        return text_envelope(reply) if reply else None
    raise TypeError(f"a handler returns a str, a hubd.Packet or None, not {type(reply).__name__}")


def list_request(
    state: str, creator: str, participant: str, labels: Optional[Mapping[str, str]], page_token: str, page_size: int
) -> pb.ListSessionsRequest:
    """A ListSessions request."""
    return pb.ListSessionsRequest(
        state=state,
        creator=creator,
        participant=participant,
        labels=dict(labels or {}),
        page_token=page_token,
        page_size=page_size,
    )


def subscribe_request(
    cursors: Optional[Mapping[str, int]], include_ended: bool, terse: bool, view: Optional[str], window: int
) -> pb.SubscribeRequest:
    """The SubscribeRequest of subscribe's (and serve's) options: every
    your_turn delivery carries the caller's view (turn_view) only when a
    view name is given."""
    req = pb.SubscribeRequest(cursors=dict(cursors or {}), include_ended=include_ended, terse=terse)
    if view is not None:
        req.turn_view.CopyFrom(pb.GetViewRequest(name=view, window=window))
    return req


async def guarded(log: logging.Logger, what: str, e: pb.Envelope, f: Callable[[Any], Any], arg: Any) -> None:
    """Call f(arg) on the delivery of e (a stream's callback, serve's
    observer or on_session_end), awaiting what it returns when that is
    awaitable. What it raises is logged ("hubd: <what> seq N of session S
    failed (ignored)", with its traceback) and goes no further: one failing
    delivery does not end a stream, nor serve."""
    try:
        r = f(arg)
        if inspect.isawaitable(r):
            await r
    except asyncio.CancelledError:
        raise
    except Exception:
        log.warning("hubd: %s seq %d of session %s failed (ignored)", what, e.seq, e.session_id, exc_info=True)


def invite_decision(decision: Any) -> Optional[str]:
    """What an invite function said: ``None`` to accept, else the reject
    reason."""
    if decision is None or decision is True:
        return None
    if decision is False:
        return ""
    return str(decision)
