// A turn's reply written as it is made: agentsdk/delta.go. Each piece is
// forwarded at once as a delta, never logged; the final envelope, sent
// with the turn's client message id, is what the log keeps.

import type { Ack, Client } from "./client.js";
import { Packet, turnMsgId } from "./envelope.js";
import { LimitReachedError } from "./errors.js";
import type { Envelope } from "./gen/hub.js";

/** The hub's cap on deltas per second, as its refusals name it. */
const rateFlag = "--max-deltas-per-second";

/**
 * The writer of a turn's reply (turn.stream()): `await s.write(piece)`
 * forwards each piece to the session's watchers and to the subscribers that
 * asked for deltas, and keeps it; `await s.close()` sends the final
 * envelope, a text of everything written (or return s.reply() from the
 * handler: serve posts it with the same client message id, so it is written
 * once either way). Deltas are best-effort: a piece over the hub's rate cap
 * goes out with the next one, and past its cap of bytes per turn the rest is
 * in the final envelope only. A write rejects when the turn is no longer the
 * agent's (OutOfTurnError, SessionClosedError, ...).
 */
export class TurnStream {
  /** The client message id of the final envelope, tying the deltas to it. */
  readonly id: string;
  private readonly parts: string[] = [];
  private pending = "";
  private n = 0;
  private capped = false;
  private closed = false;

  /** @internal */
  constructor(
    private readonly client: Client,
    private readonly sessionId: string,
    private readonly trigger: Envelope,
  ) {
    this.id = turnMsgId(sessionId, trigger.seq);
  }

  /** What was written so far. */
  text(): string {
    return this.parts.join("");
  }

  /** Forwards text as a delta and keeps it for the final envelope. */
  async write(text: string): Promise<void> {
    if (this.closed) {
      throw new Error("write to a closed turn stream");
    }
    if (text === "") {
      return;
    }
    this.parts.push(text);
    if (this.capped) {
      return;
    }
    this.pending += text;
    try {
      await this.client.sendDelta(this.sessionId, this.id, this.n, this.pending);
    } catch (err) {
      if (!(err instanceof LimitReachedError)) {
        throw err;
      }
      if (!err.message.includes(rateFlag)) {
        this.capped = true; // the turn's bytes of deltas: the rest goes in the final envelope
      }
      return; // too fast: this piece goes out with the next one
    }
    this.n++;
    this.pending = "";
  }

  /** The final reply, the text written: return it from the handler. */
  reply(): string {
    return this.text();
  }

  /** Sends the final envelope: final (a text or a Packet), by default the text written. */
  async close(final?: string | Packet): Promise<Ack> {
    this.closed = true;
    const body = final ?? this.text();
    const opts = { clientMsgId: this.id, causationId: this.trigger.id };
    if (typeof body === "string") {
      return this.client.sendText(this.sessionId, body, opts);
    }
    return this.client.sendPacket(this.sessionId, body, opts);
  }
}
