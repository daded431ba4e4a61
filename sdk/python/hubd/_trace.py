"""The W3C trace context the SDK carries to the hub (the reference is the
Go SDK's agentsdk/trace.go).

Every frame of the agent's stream (``StreamSend``, ``StreamOpen``)
and every unary call (as the ``traceparent`` and ``tracestate`` metadata)
carries the caller's trace context: the current span of OpenTelemetry's
API when it is installed and a span is current, else the one given with
:func:`trace_context`. serve runs each turn in the trace of the envelope
that began it, so the reply, and every call the handler makes, continues
that trace. Neither needs OpenTelemetry: without it the trace still
travels, and nothing is recorded.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import re
from typing import Any, Dict, Iterator, Optional, Tuple

TraceContext = Tuple[str, str]
"""A traceparent and its tracestate (``""`` each when there is none)."""

NONE: TraceContext = ("", "")

_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")

_given: "contextvars.ContextVar[Optional[TraceContext]]" = contextvars.ContextVar("hubd_trace", default=None)


def valid(traceparent: str) -> bool:
    """Whether traceparent is a W3C traceparent that names a trace
    ("00-<32 hex>-<16 hex>-<2 hex>", ids not all zero, version not ff)."""
    m = _TRACEPARENT.match(traceparent)
    if m is None:
        return False
    version, trace_id, span_id, _ = m.groups()
    return version != "ff" and trace_id != "0" * 32 and span_id != "0" * 16


def trace_id(traceparent: str) -> str:
    """The trace id of a traceparent ("" when it is not one)."""
    return traceparent.split("-")[1] if valid(traceparent) else ""


@functools.lru_cache(maxsize=None)
def _otel() -> Any:
    """OpenTelemetry's API (its context module, trace module and W3C
    propagator) when it is installed, else None."""
    try:
        from opentelemetry import context as otel_context  # type: ignore[import-not-found,unused-ignore]
        from opentelemetry import trace as otel_trace  # type: ignore[import-not-found,unused-ignore]
        from opentelemetry.trace.propagation.tracecontext import (  # type: ignore[import-not-found,unused-ignore]
            TraceContextTextMapPropagator,
        )
    except ImportError:
        return None
    return otel_context, otel_trace, TraceContextTextMapPropagator()


def current() -> TraceContext:
    """The trace context of what the caller does now: OpenTelemetry's
    current span when there is a valid one, else the one given with
    :func:`trace_context` (or by serve for the turn), else none."""
    otel = _otel()
    if otel is not None:
        _, otel_trace, propagator = otel
        if otel_trace.get_current_span().get_span_context().is_valid:
            carrier: Dict[str, str] = {}
            propagator.inject(carrier)
            tp = str(carrier.get("traceparent", ""))
            if valid(tp):
                return tp, str(carrier.get("tracestate", ""))
    given = _given.get()
    return given if given is not None else NONE


def of_envelope(traceparent: str) -> TraceContext:
    """The trace context of a send: the envelope's own traceparent when it
    has one (the send's ``traceparent=``), else the caller's."""
    if traceparent:
        return traceparent, ""
    return current()


def metadata(md: Tuple[Tuple[str, str], ...], tc: Optional[TraceContext] = None) -> Tuple[Tuple[str, str], ...]:
    """A call's metadata: md and the trace context tc (the caller's when
    None) as "traceparent" and "tracestate"."""
    parent, state = current() if tc is None else tc
    if not parent:
        return md
    extra = (("traceparent", parent),) + ((("tracestate", state),) if state else ())
    return md + extra


@contextlib.contextmanager
def trace_context(traceparent: str, tracestate: str = "") -> Iterator[None]:
    """Carry a W3C trace context on every call and send made inside the
    ``with`` block (in this thread, or this asyncio task and the tasks it
    starts): the hub's spans continue it and the envelopes it writes carry
    it. With OpenTelemetry installed it is also the current span context
    there (a remote parent), so spans started inside are its children::

        with hubd.trace_context("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"):
            client.send_text(session_id, "findings")

    An empty traceparent leaves the context as it is.

    Raises:
        ValueError: traceparent is not a W3C traceparent.
    """
    if not traceparent:
        yield
        return
    if not valid(traceparent):
        raise ValueError(f"hubd: traceparent {traceparent!r}: want 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>")
    token = _given.set((traceparent, tracestate))
    otel = _otel()
    if otel is None:
        try:
            yield
        finally:
            _given.reset(token)
        return
    otel_context, _, propagator = otel
    carrier = {"traceparent": traceparent}
    if tracestate:
        carrier["tracestate"] = tracestate
    attached = otel_context.attach(propagator.extract(carrier))
    try:
        yield
    finally:
        otel_context.detach(attached)
        _given.reset(token)


def continuing(traceparent: str) -> "contextlib.AbstractContextManager[None]":
    """The context of a served turn: the trace of the envelope that began
    it (a traceparent the hub wrote; one it could not read is left out)."""
    if valid(traceparent):
        return trace_context(traceparent)
    return contextlib.nullcontext()
