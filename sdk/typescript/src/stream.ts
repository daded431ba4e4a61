// Delivery streams of Subscribe and Watch as async iterators:
// agentsdk/stream.go.

import type { ClientReadableStream } from "@grpc/grpc-js";

import type { Delivery } from "./gen/hub.js";
import { hubError } from "./errors.js";

/**
 * A stream of deliveries from Client.subscribe or Client.watch. Iterate it
 * with `for await`, or call recv(); close it when done (breaking out of a
 * `for await` closes it too). It ends without an error when the hub ends it
 * cleanly or it is closed, and throws a HubError when it is cut off: a
 * SlowSubscriberError or an UnavailableError (DrainingError when the hub
 * stops) means resubscribe from your cursors.
 */
export class DeliveryStream implements AsyncIterable<Delivery> {
  private closed = false;
  private failure: unknown;
  private readonly status: Promise<void>;
  private iterator?: AsyncGenerator<Delivery, void, undefined>;
  private readonly onAbort = () => this.close();
  private readonly call: ClientReadableStream<Delivery>;

  /** @internal */
  constructor(
    private readonly op: string,
    call: ClientReadableStream<Delivery>,
    private readonly signal?: AbortSignal,
    private readonly deadline?: number,
  ) {
    signal?.addEventListener("abort", this.onAbort, { once: true });
    this.call = call;
    // @grpc/grpc-js ends the stream (push(null)) before it emits the error
    // of a failed call, so a reader that comes late would see a clean end:
    // the error is kept here, from the start, and thrown after the last
    // delivery. (Listening also keeps an 'error' nobody reads from crashing
    // the process.)
    call.on("error", (err: unknown) => {
      this.failure ??= err;
    });
    this.status = new Promise((resolve) => call.once("status", () => resolve()));
  }

  /** The deliveries, in order, until the stream ends. */
  [Symbol.asyncIterator](): AsyncGenerator<Delivery, void, undefined> {
    this.iterator ??= this.iterate();
    return this.iterator;
  }

  /** The next delivery, or undefined once the stream has ended. */
  async recv(): Promise<Delivery | undefined> {
    const r = await this[Symbol.asyncIterator]().next();
    return r.done ? undefined : r.value;
  }

  /** Ends the stream (cancels the call). */
  close(): void {
    if (this.closed) {
      return;
    }
    this.closed = true;
    this.signal?.removeEventListener("abort", this.onAbort);
    this.call.cancel();
  }

  private async *iterate(): AsyncGenerator<Delivery, void, undefined> {
    try {
      try {
        for await (const d of this.call as AsyncIterable<Delivery>) {
          yield d;
        }
      } catch (err) {
        this.failure ??= err;
      }
      await this.status; // the call's status follows its end at once
      if (this.failure !== undefined && !this.closed) {
        throw hubError(this.op, this.failure, this.deadline);
      }
    } finally {
      this.close();
    }
  }
}
