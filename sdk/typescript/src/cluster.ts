// Following a hubd cluster (docs/SCALING.md): agentsdk/cluster.go.
//
// A cluster serves each session on one node, the owner of its partition;
// any other node answers NOT_OWNER with the owner's gRPC address in the
// ErrorInfo metadata (owner_addr). A client given ClientOptions.peers
// follows it without its caller noticing:
//
// - a unary call refused with NOT_OWNER is sent again, unchanged (the same
//   client message id, so a send is never written twice), to the owner;
//   one without an owner yet (a partition changing hands) is sent again to
//   the same node after a short wait; one that cannot reach its node (a
//   dead node: UNAVAILABLE with no reason) or that a stopping node refuses
//   (DRAINING) goes to the next node, which knows the owner. It gives up
//   after followForMs with the last error.
// - subscribe (and serve) open one stream per node and merge them: each
//   node delivers the sessions it serves. A node's stream that ends (its
//   partitions moved: NOT_OWNER; the node died or restarts) is reopened
//   from the merged stream's cursors (the last seq handed out per session),
//   so the merged stream sees no gap and no duplicate per session (a
//   pending turn may be told again, as after any resubscribe).
// - watch, follow and followTree follow NOT_OWNER like a unary call, and a
//   watch that ends because its partition moved (or its node died) is
//   reopened on the owner after the last seq seen per session.

import * as grpc from "@grpc/grpc-js";

import { backoffDelay, sleep } from "./backoff.js";
import { errorInfoFromMetadata, HubError, retryable } from "./errors.js";
import { Delivery, SubscribeRequest, WatchRequest } from "./gen/hub.js";
import type { HubClient } from "./gen/hub_service.js";
import type { DeliveryStream, StreamSource } from "./stream.js";

/** A client's view of a cluster: every node's address (the one dialled first, then the peers, then owners learned from NOT_OWNER) and a client for each, made when first needed. */
export class Peers {
  private readonly addrs: string[];
  private readonly clients = new Map<string, HubClient>();

  constructor(
    readonly self: string,
    selfClient: HubClient,
    peers: string[],
    private readonly dial: (addr: string) => HubClient,
    readonly followForMs: number,
    readonly log: (line: string) => void,
  ) {
    this.addrs = [self];
    for (const a of peers) {
      if (!this.addrs.includes(a)) {
        this.addrs.push(a);
      }
    }
    this.clients.set(self, selfClient);
  }

  /** Every known node's address. */
  nodes(): string[] {
    return [...this.addrs];
  }

  /** The client of node addr, dialled (lazily) the first time. */
  client(addr: string): HubClient {
    let c = this.clients.get(addr);
    if (!c) {
      c = this.dial(addr);
      this.clients.set(addr, c);
      if (!this.addrs.includes(addr)) {
        this.addrs.push(addr);
      }
    }
    return c;
  }

  /** The node after addr in the ring of known nodes. */
  next(addr: string): string {
    const i = this.addrs.indexOf(addr);
    return this.addrs[(i + 1) % this.addrs.length];
  }

  /** Closes the clients of the peers (not the client's own). */
  close(): void {
    for (const [addr, c] of this.clients) {
      if (addr !== this.self) {
        c.close();
      }
    }
  }

  /** Where a call refused with err at node at goes next, and after what wait; undefined for an error not to follow. */
  redirect(err: unknown, at: string, attempt: number): { next: string; waitMs: number } | undefined {
    if (!(err instanceof HubError)) {
      return undefined;
    }
    const waitMs = backoffDelay(attempt, 50, 1000);
    const owner = errorInfoFromMetadata(err.metadata).metadata["owner_addr"] ?? "";
    if (err.reason === "NOT_OWNER" && owner !== "" && owner !== at) {
      return { next: owner, waitMs: attempt > 1 ? waitMs : 0 }; // a chain of moves: do not spin
    }
    if (err.reason === "NOT_OWNER") {
      return { next: at, waitMs }; // no owner yet: the partition changes hands
    }
    if ((err.reason === "" && err.code === grpc.status.UNAVAILABLE) || err.reason === "DRAINING") {
      return { next: this.next(at), waitMs }; // the node is unreachable or stopping: ask another
    }
    return undefined;
  }
}

/** Deliveries handed from the node streams to the merged stream's reader. */
class Mailbox<T> {
  private readonly items: T[] = [];
  private waiters: (() => void)[] = [];

  get length(): number {
    return this.items.length;
  }

  push(x: T): void {
    this.items.push(x);
    this.wake();
  }

  shift(): T | undefined {
    const x = this.items.shift();
    this.wake();
    return x;
  }

  /** Resolves at the next push, shift or wake. */
  changed(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) {
      f();
    }
  }
}

/** Subscribe over every node of a cluster: one stream per node, merged, each reopened from the merged cursors when it ends. */
export class MergedSubscribe implements StreamSource {
  private readonly box = new Mailbox<Delivery>();
  private readonly cursors: Map<string, number>;
  private readonly streams = new Set<DeliveryStream>();
  private readonly abort = new AbortController();
  private failure: unknown;

  /**
   * Opens a stream on every node with req, each (re)opened with req's
   * options (turn view, terse, ...) from the merged stream's cursors.
   */
  constructor(
    private readonly peers: Peers,
    private readonly req: SubscribeRequest,
    private readonly open: (client: HubClient, req: SubscribeRequest) => DeliveryStream,
  ) {
    this.cursors = new Map(Object.entries(req.cursors));
    for (const addr of peers.nodes()) {
      void this.node(addr);
    }
  }

  private async node(addr: string): Promise<void> {
    for (let attempt = 0; !this.abort.signal.aborted; ) {
      const s = this.open(this.peers.client(addr), SubscribeRequest.fromPartial({ ...this.req, cursors: Object.fromEntries(this.cursors) }));
      this.streams.add(s);
      let err: unknown;
      try {
        for await (const d of s) {
          attempt = 0;
          this.box.push(d);
          while (this.box.length > 256 && !this.abort.signal.aborted) {
            await this.box.changed();
          }
        }
      } catch (e) {
        err = e;
      } finally {
        this.streams.delete(s);
        s.close();
      }
      if (this.abort.signal.aborted) {
        return;
      }
      if (err !== undefined && !retryable(err)) {
        this.failure ??= err;
        this.box.wake();
        return;
      }
      attempt++;
      this.peers.log(`hubd: subscribe: the stream of ${addr} ended (${String(err ?? "cleanly")}); reopening from the cursors`);
      await sleep(backoffDelay(attempt, 50, 1000), this.abort.signal);
    }
  }

  async *iterate(): AsyncGenerator<Delivery, void, undefined> {
    for (;;) {
      const d = this.box.shift();
      if (d === undefined) {
        if (this.failure !== undefined) {
          this.cancel();
          throw this.failure;
        }
        if (this.abort.signal.aborted) {
          return;
        }
        await this.box.changed();
        continue;
      }
      const e = d.envelope;
      const sid = e?.sessionId ?? "";
      const seq = e?.seq ?? 0;
      const fresh = seq > (this.cursors.get(sid) ?? 0);
      if (fresh) {
        this.cursors.set(sid, seq);
      }
      if (fresh || d.yourTurn) {
        yield d;
      }
    }
  }

  cancel(): void {
    this.abort.abort();
    for (const s of this.streams) {
      s.close();
    }
    this.box.wake();
  }
}

/** A Watch (one session, or a tree) that follows its session's partition: refused with NOT_OWNER, or ended by a move or by its node's death, it is reopened where the session is served, after the last seq seen. */
export class FollowedWatch implements StreamSource {
  private readonly next = new Map<string, number>();
  private current?: DeliveryStream;
  private readonly abort = new AbortController();

  constructor(
    private readonly peers: Peers,
    private readonly req: WatchRequest,
    private readonly open: (client: HubClient, req: WatchRequest) => DeliveryStream,
  ) {
    this.next.set(req.sessionId, Math.max(req.fromSeq, 1));
    for (const [id, c] of Object.entries(req.cursors)) {
      this.next.set(id, c + 1);
    }
  }

  /** The request resumed after the seqs seen. */
  private resumed(): WatchRequest {
    const root = this.req.sessionId;
    const cursors: Record<string, number> = {};
    if (this.req.tree) {
      for (const [id, n] of this.next) {
        if (id !== root) {
          cursors[id] = n - 1;
        }
      }
    }
    return WatchRequest.fromPartial({ ...this.req, fromSeq: this.next.get(root) ?? this.req.fromSeq, cursors });
  }

  async *iterate(): AsyncGenerator<Delivery, void, undefined> {
    let at = this.peers.self;
    let attempt = 1;
    let since = 0;
    while (!this.abort.signal.aborted) {
      const s = this.open(this.peers.client(at), this.resumed());
      this.current = s;
      try {
        for await (const d of s) {
          attempt = 1;
          since = 0;
          const e = d.envelope;
          if (!e || e.seq < (this.next.get(e.sessionId) ?? 0)) {
            continue;
          }
          this.next.set(e.sessionId, e.seq + 1);
          yield d;
        }
        return;
      } catch (err) {
        if (this.abort.signal.aborted) {
          return;
        }
        since ||= Date.now();
        const where = this.peers.redirect(err, at, attempt);
        if (!where || Date.now() - since > this.peers.followForMs) {
          throw err;
        }
        if (where.waitMs > 0 && !(await sleep(where.waitMs, this.abort.signal))) {
          return;
        }
        if (where.next !== at) {
          this.peers.log(`hubd: watch: following to ${where.next} (${String(err)})`);
        }
        at = where.next;
        attempt++;
      } finally {
        s.close();
      }
    }
  }

  cancel(): void {
    this.abort.abort();
    this.current?.close();
  }
}
