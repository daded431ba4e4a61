// The SDK in a hubd cluster (docs/SCALING.md): three real hubd nodes on
// loopback, each with its embedded NATS server. A client of one node, which
// knows nothing of the cluster, works with every session: the node runs its
// calls, sends and opens where their sessions are served, delivers its
// stream from every node and follows a watched session; a node then hands
// its partitions back and stops (SIGTERM) and the served agents carry on
// with no gap and no duplicate in what they saw. (The Python SDK's test
// kills a node with SIGKILL.)

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import * as grpc from "@grpc/grpc-js";

import {
  autoAccepted,
  Client,
  closeReason,
  isTurn,
  NotParticipantError,
  roundRobin,
  SessionType,
  Transport,
  type Delivery,
  type Envelope,
} from "@hubd/sdk";

import { Cluster, partitionOf, track } from "./cluster.js";
import { watchReceived, within } from "./hub.js";

const turns = 24; // per session

describe("a cluster", { timeout: 180_000 }, () => {
  let c: Cluster;
  before(async () => {
    c = track(await Cluster.start());
  });
  after(async () => {
    await c?.close();
  });

  // The open goes on the client's agent stream, to a node that does not
  // serve the parent: the node runs it on the parent's owner.
  test("a client of one node opens a child of a session another node serves", async () => {
    const clients: Client[] = [];
    const dial = async (addr: string, name: string) => {
      const cl = await Client.connect(addr, { name, timeoutMs: 10_000 });
      clients.push(cl);
      return cl;
    };
    try {
      const opener = await dial(c.nodes[0].addr, "oc-a");
      const root = await opener.open({ type: SessionType.Conversation, participants: autoAccepted("oc-b") });
      const owner = c.ownerOf(root.id);
      const other = c.nodes.find((n) => n.id !== owner);
      assert.ok(owner && other, `partition ${partitionOf(root.id)} of ${root.id}: owner ${owner}`);
      const a = await dial(other.addr, "oc-a");
      assert.equal(a.transport, Transport.Stream);
      const child = await a.open({ type: SessionType.Conversation, participants: autoAccepted("oc-b"), parent: root.id, timeoutMs: 10_000 });
      assert.equal(child.meta?.parentSessionId, root.id);
      const onOwner = await dial(c.nodes.find((n) => n.id === owner)!.addr, "oc-a");
      assert.equal((await onOwner.getSession(child.id)).meta?.parentSessionId, root.id);
    } finally {
      clients.forEach((cl) => cl.close());
    }
  });

  test("serve runs sessions across nodes, and carries on when a node hands its partitions back (SIGTERM)", async () => {
    const [n1, n2, n3] = c.nodes;
    const handled = new Map<string, number[]>(); // per session, the trigger seqs handled
    const seen = new Map<string, number[]>(); // per session, b's deliveries
    const toldAgain: boolean[] = [];
    const observe = (d: Delivery) => {
      const e = d.envelope as Envelope;
      const got = seen.get(e.sessionId) ?? [];
      seen.set(e.sessionId, got);
      if (got.length > 0 && e.seq <= got[got.length - 1]) {
        // Only a pending turn is told again (a node's stream reopened tells
        // its pending turns, as after any resubscribe).
        toldAgain.push(e.seq === got[got.length - 1] && d.yourTurn);
        return;
      }
      got.push(e.seq);
    };
    const clients: Client[] = [];
    const dial = async (addr: string, name: string, channelOptions?: grpc.ClientOptions) => {
      const cl = await Client.connect(addr, { name, timeoutMs: 10_000, channelOptions });
      clients.push(cl);
      return cl;
    };
    // What a's stream brings over the wire, and the views a fetches: every
    // node's part carries the whole request (terse, with the turn view), so
    // a is told only its turns, each with its view, and the ends.
    const aWire: string[] = [];
    let aViews = 0;
    const aDeliveries = watchReceived(["/hubd.v1.Hub/AgentStream", "/hubd.v1.Hub/Subscribe"], (method, m: { delivery?: Delivery } & Delivery) => {
      const d = method === "/hubd.v1.Hub/Subscribe" ? m : m.delivery;
      if (d) {
        aWire.push(d.yourTurn ? "turn" : (d.envelope?.type ?? ""));
      }
    });
    const aSpy: grpc.Interceptor = (options, nextCall) => {
      if (options.method_definition.path === "/hubd.v1.Hub/GetView") {
        aViews++;
      }
      return aDeliveries(options, nextCall);
    };
    // Both agents are connected to n1 alone.
    const a = await dial(n1.addr, "a", { interceptors: [aSpy] });
    const b = await dial(n1.addr, "b");
    const ac = new AbortController();
    const handler = async (t: { sessionId: string; trigger: Envelope; client: Client }) => {
      const h = handled.get(t.sessionId) ?? [];
      handled.set(t.sessionId, h);
      h.push(t.trigger.seq);
      await new Promise((r) => setTimeout(r, 50));
      return `${t.client.name} at ${t.trigger.seq}`;
    };
    const runs = [
      a.serve(handler, { signal: ac.signal, backoff: { baseMs: 20, maxMs: 500 } }),
      b.serve(handler, { signal: ac.signal, backoff: { baseMs: 20, maxMs: 500 }, observer: observe }),
    ];
    try {
      // One session opened through each node: a new root session lands in a
      // partition of the node asked.
      const ids: string[] = [];
      for (const n of c.nodes) {
        const opener = await dial(n.addr, "a");
        ids.push((await opener.openWorkflow(roundRobin(["a", "b"], turns), ["b"])).id);
      }
      // Each is served by the node it was opened through.
      for (const [i, n] of c.nodes.entries()) {
        assert.equal(c.ownerOf(ids[i]), n.id, `partition ${partitionOf(ids[i])} of ${ids[i]}`);
      }
      // Unary calls through n1 run on the owner, which answers them.
      const s2 = ids[1];
      assert.equal((await a.getSession(s2)).id, s2);
      const mallory = await dial(n1.addr, "mallory");
      await assert.rejects(mallory.sendText(s2, "hi"), NotParticipantError);

      // A follow through n1 of the session n2 serves, live across n2's stop.
      const w = await dial(n1.addr, "a");
      const watched: number[] = [];
      const watching = (async () => {
        for await (const e of w.follow(s2, 1, { timeoutMs: 120_000 })) {
          watched.push(e.seq);
        }
      })();

      const progressed = (n: number) => ids.every((id) => (handled.get(id)?.length ?? 0) >= n);
      const deadline = Date.now() + 30_000;
      while (!progressed(4) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.ok(progressed(4), JSON.stringify([...handled]));

      // n2 hands its partitions back and stops, mid-conversation.
      await n2.signal("SIGTERM");
      const moved = await c.waitSpread([n1.id, n3.id], 60_000);

      const reader = await dial(n3.addr, "a");
      for (const sid of ids) {
        let end: Envelope | undefined;
        for await (const e of reader.follow(sid, 1, { timeoutMs: 120_000 })) {
          end = e;
        }
        assert.equal(closeReason(end), "max_turns", sid);
        const log = await reader.readLog(sid);
        const taken = log.filter(isTurn);
        // Every turn taken once, in order: each trigger handled once, each
        // reply written once.
        assert.equal(taken.length, turns, sid);
        assert.deepEqual(
          taken.map((e) => e.from),
          Array.from({ length: turns }, (_, i) => (i % 2 === 0 ? "a" : "b")),
        );
        const got = handled.get(sid) ?? [];
        assert.equal(new Set(got).size, turns, `${sid}: ${got.join(" ")}`);
        assert.equal(got.length, turns, `${sid}: ${got.join(" ")}`);
        assert.equal(new Set(taken.map((e) => e.clientMsgId)).size, turns);
        // b saw every envelope of its log once, in order: no gap, no
        // duplicate, across the move. (An agent is not sent its own.)
        const bLog = (await b.readLog(sid)).filter((e) => e.from !== "b").map((e) => e.seq);
        assert.deepEqual(seen.get(sid), bLog, sid);
      }
      assert.ok(toldAgain.every(Boolean), JSON.stringify(toldAgain));
      assert.deepEqual(
        aWire.filter((x) => x !== "turn" && x !== "session_closed"),
        [],
        "a's terse streams brought only turns and ends",
      );
      assert.ok(aWire.includes("turn"));
      assert.equal(aViews, 0, "a's turns came with their views");
      await within(watching, 30_000, "the follow of the moved session");
      assert.deepEqual(
        watched,
        (await w.readLog(s2)).map((e) => e.seq),
      );
      console.log(`n2 stopped with SIGTERM: its partitions moved in ${moved} ms`);
    } finally {
      ac.abort();
      await Promise.allSettled(runs);
      clients.forEach((cl) => cl.close());
    }
  });
});
