// A measurement, not a test: turns per second of a two-agent ping-pong
// served by the TypeScript SDK, over the agent stream and over unary
// calls, alternating in the same run against one real hubd (its data on
// the temporary directory's disk, synced as always). Prints each round and
// the ratio of the medians (stream / unary).
//
//     npm run pretest && node build/test/pingpong.js [turns per session] [rounds]

import { Client, roundRobin, Transport, type TransportName } from "@hubd/sdk";

import { Hubd } from "./hub.js";

const turns = Number(process.argv[2] ?? 400);
const rounds = Number(process.argv[3] ?? 3);

/** One session of `turns` turns between ping and pong, both served over transport; its turns per second. */
async function session(hub: Hubd, transport: TransportName): Promise<number> {
  const [ping, pong] = await Promise.all(["ping", "pong"].map((name) => Client.connect(hub.addr, { name, transport, timeoutMs: 5000 })));
  const ac = new AbortController();
  const runs = [ping, pong].map((c) => c.serve((turn) => `${c.name} ${turn.trigger.seq}`, { signal: ac.signal }));
  try {
    // Warm up: the serve streams up, one short session.
    await play(ping, 4);
    const began = process.hrtime.bigint();
    await play(ping, turns);
    const s = Number(process.hrtime.bigint() - began) / 1e9;
    if (ping.transport !== transport) {
      throw new Error(`ping sent over ${ping.transport}, want ${transport}`);
    }
    return turns / s;
  } finally {
    ac.abort();
    await Promise.all(runs);
    ping.close();
    pong.close();
  }
}

/** Opens a round robin of n turns (auto-accepted) and waits for its end. */
async function play(c: Client, n: number): Promise<void> {
  const s = await c.open({ graph: roundRobin(["ping", "pong"], n), participants: [{ name: "pong", role: "", autoAccept: true }] });
  for await (const e of c.follow(s.id)) {
    if (e.type === "session_closed" || e.type === "session_expired") {
      if (e.ended?.reason !== "max_turns") {
        throw new Error(`the session ended ${e.ended?.reason}`);
      }
      return;
    }
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const hub = await Hubd.start();
try {
  const got: Record<TransportName, number[]> = { stream: [], unary: [] };
  for (let r = 1; r <= rounds; r++) {
    for (const t of [Transport.Stream, Transport.Unary]) {
      const v = await session(hub, t);
      got[t].push(v);
      console.log(`round ${r} ${t.padEnd(6)} ${v.toFixed(0)} turns/s`);
    }
  }
  const s = median(got.stream);
  const u = median(got.unary);
  console.log(`median: stream ${s.toFixed(0)} turns/s, unary ${u.toFixed(0)} turns/s, stream/unary ${(s / u).toFixed(2)} (${turns} turns per session, ${rounds} rounds)`);
} finally {
  await hub.close();
}
