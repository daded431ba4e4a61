"""A turn's reply written as it is made (Go: agentsdk/delta.go): each
piece is forwarded at once as a delta, never logged; the final envelope,
sent with the turn's client message id, is what the log keeps."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional

from . import errors
from ._model import Ack, turn_msg_id
from ._pb import hub_pb2 as pb

if TYPE_CHECKING:  # pragma: no cover
    from ._calls import Turn

__all__ = ["TurnStream"]

RATE_FLAG = "--max-deltas-per-second"


class TurnStream:
    """The writer of a turn's reply (``turn.stream()``): ``await
    s.write(piece)`` forwards each piece to the session's watchers and to
    the subscribers that asked for deltas, and keeps it; ``await s.close()``
    sends the final envelope, a text of everything written (or return
    :meth:`reply` from the handler: serve posts it with the same client
    message id, so it is written once either way). Also an async context
    manager that closes it on a clean exit.

    Deltas are best-effort: a piece over the hub's rate cap goes out with
    the next one, and past its cap of bytes per turn the rest is in the
    final envelope only. A write fails when the turn is no longer the
    agent's (:class:`hubd.OutOfTurn`, :class:`hubd.SessionClosed`, ...)."""

    def __init__(self, turn: "Turn") -> None:
        self._turn = turn
        self.id = turn_msg_id(turn.session_id, turn.seq)
        """The client message id of the final envelope, tying the deltas to it."""
        self._parts: List[str] = []
        self._pending = ""
        self._n = 0
        self._capped = False
        self._closed = False

    @property
    def text(self) -> str:
        """What was written so far."""
        return "".join(self._parts)

    async def write(self, text: str) -> None:
        """Forward ``text`` as a delta and keep it for the final envelope."""
        if self._closed:
            raise ValueError("write to a closed turn stream")
        if not text:
            return
        self._parts.append(text)
        if self._capped:
            return
        self._pending += text
        try:
            await self._turn.client.send_delta(self._turn.session_id, self.id, self._n, self._pending)
        except errors.LimitReached as e:
            if RATE_FLAG not in e.detail:
                self._capped = True  # the turn's bytes of deltas: the rest goes in the final envelope
            return  # too fast: this piece goes out with the next one
        self._n += 1
        self._pending = ""

    def reply(self) -> str:
        """The final reply, the text written: return it from the handler."""
        return self.text

    async def close(self, final: Optional[Any] = None) -> Ack:
        """Send the final envelope: ``final`` (a text or a
        :class:`hubd.Packet`), by default the text written."""
        self._closed = True
        body = self.text if final is None else final
        c = self._turn.client
        if isinstance(body, str):
            return await c.send_text(self._turn.session_id, body, client_msg_id=self.id, causation_id=self._turn.trigger.id)  # type: ignore[no-any-return]
        return await c.send_packet(self._turn.session_id, body, client_msg_id=self.id, causation_id=self._turn.trigger.id)  # type: ignore[no-any-return]

    async def __aenter__(self) -> "TurnStream":
        return self

    async def __aexit__(self, exc_type: Any, *exc: Any) -> None:
        if exc_type is None and not self._closed:
            await self.close()


def delta(session_id: str, stream_id: str, index: int, text: str) -> pb.Delta:
    """A Delta message."""
    return pb.Delta(session_id=session_id, stream_id=stream_id, index=index, text=text)
