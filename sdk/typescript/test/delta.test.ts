// Deltas against the real hub: a handler writes its reply through
// turn.stream(); a watcher with deltas sees each piece before the final
// envelope, which is written once.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { autoAccepted, OutOfTurnError, sequence, textOf, turnMsgId, type Turn } from "@hubd/sdk";

import { Hubd } from "./hub.js";

describe("deltas", { timeout: 30_000 }, () => {
  let hub: Hubd;
  before(async () => {
    hub = await Hubd.start();
  });
  after(() => hub.close());

  test("turn.stream(): pieces reach a watcher before the final envelope, written once", async () => {
    const [alice, bob, carol] = await Promise.all(["alice", "bob", "carol"].map((n) => hub.connect(n)));
    const ac = new AbortController();
    try {
      const s = await alice.open({ graph: sequence("alice", "bob", "carol"), participants: autoAccepted("bob", "carol") });
      const info = await alice.getSession(s.id);
      const watch = carol.watch(s.id, 1, { deltas: true });
      const it = watch[Symbol.asyncIterator]();
      for (;;) {
        // the catch-up: the watch is registered
        const d = await it.next();
        assert.ok(!d.done);
        if (d.value.envelope?.seq === info.seq) {
          break;
        }
      }
      const turns: Turn[] = [];
      const serving = bob.serve(
        async (turn) => {
          const out = turn.stream();
          for (const piece of ["Hel", "lo"]) {
            await out.write(piece);
          }
          turns.push(turn);
          return out.reply();
        },
        { signal: ac.signal, view: null },
      );
      await alice.sendText(s.id, "go");
      const got: string[] = [];
      while (got.length < 4) {
        const d = await it.next();
        assert.ok(!d.done);
        if (d.value.delta) {
          assert.equal(d.value.delta.from, "bob");
          got.push(`delta:${d.value.delta.text}`);
        } else if (d.value.envelope?.type === "text") {
          got.push(`${d.value.envelope.from}:${textOf(d.value.envelope)}`);
        }
      }
      watch.close();
      assert.deepEqual(got, ["alice:go", "delta:Hel", "delta:lo", "bob:Hello"]);
      const mine = (await alice.readLog(s.id)).filter((e) => e.from === "bob");
      assert.deepEqual(
        mine.map((e) => textOf(e)),
        ["Hello"],
      );
      assert.equal(mine[0].clientMsgId, turnMsgId(s.id, turns[0].trigger.seq));
      await assert.rejects(turns[0].stream().write("late"), OutOfTurnError);
      await assert.rejects(alice.sendDelta(s.id, "x", 0, "not hers"), OutOfTurnError);
      ac.abort();
      await serving;
    } finally {
      ac.abort();
      [alice, bob, carol].forEach((c) => c.close());
    }
  });
});
