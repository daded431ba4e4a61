"""The requests of a fork and of an operator's action (steer), built from
the clients' keyword arguments and checked before anything is sent."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence, Tuple

from ._model import Seconds, _duration, context_update
from ._pb import hub_pb2 as pb

STEER_ACTIONS = "set_context/unset_context, next_speaker, release_result, extend_timer or cancel_timer"


def fork_request(
    session_id: str,
    at_seq: int,
    set: Optional[Mapping[str, Any]],
    delete: Sequence[str],
    next_speaker: str,
    labels: Optional[Mapping[str, str]],
) -> pb.ForkRequest:
    """The ForkRequest: context edits only when there are some."""
    if isinstance(delete, str):
        raise ValueError(f"fork: delete is a list of context variable names, not the string {delete!r}")
    req = pb.ForkRequest(session_id=session_id, at_seq=at_seq, next_speaker=next_speaker, labels=dict(labels or {}))
    if set or delete:
        req.context.CopyFrom(context_update(set, delete))
    return req


def steer_request(
    session_id: str,
    reason: str,
    set_context: Optional[Mapping[str, Any]],
    unset_context: Sequence[str],
    next_speaker: Optional[str],
    release_result: Optional[str],
    extend_timer: Optional[Tuple[str, Seconds]],
    cancel_timer: Optional[str],
) -> pb.SteerRequest:
    """The SteerRequest of exactly one action (set_context and
    unset_context together are one: delete, then set); ValueError names
    the actions given when there are none or several."""
    if isinstance(unset_context, str):
        raise ValueError(f"steer: unset_context is a list of context variable names, not the string {unset_context!r}")
    given: List[str] = []
    action = pb.OperatorAction(reason=reason)
    if set_context or unset_context:
        given.append("set_context/unset_context")
        action.context.CopyFrom(context_update(set_context, unset_context))
    if next_speaker is not None:
        given.append("next_speaker")
        action.next_speaker = next_speaker
    if release_result is not None:
        given.append("release_result")
        action.release_result = release_result
    if extend_timer is not None:
        given.append("extend_timer")
        action.timer.CopyFrom(_extend(extend_timer))
    if cancel_timer is not None:
        given.append("cancel_timer")
        action.timer.CopyFrom(pb.TimerChange(name=cancel_timer, cancel=True))
    if len(given) != 1:
        got = ", ".join(given) if given else "none"
        raise ValueError(f"steer takes exactly one action ({STEER_ACTIONS}), got {got}")
    return pb.SteerRequest(session_id=session_id, action=action)


def _extend(timer: Any) -> pb.TimerChange:
    """The TimerChange of extend_timer=(name, seconds)."""
    try:
        name, by = timer
    except (TypeError, ValueError):
        raise ValueError(f"steer: extend_timer is (expectation name, seconds), not {timer!r}") from None
    return pb.TimerChange(name=name, extend=_duration(by))
