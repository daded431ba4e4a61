// Callbacks of the application that fail, against the real hub: a serve
// handler that throws anything (even a value with no string form), an
// observer that throws such a value, a log function that throws, and a
// agent stream's delivery callback that throws are reported; the stream,
// serve and the client go on, and the next delivery is handled.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { autoAccepted, hubpb, SessionType, textOf, Transport, type Client, type Delivery, type Handler } from "@hubd/sdk";

import { deferred, Hubd, within } from "./hub.js";

/** A value whose String() throws: an object without a prototype. */
function unprintable(): unknown {
  return Object.create(null) as unknown;
}

/** Collects log lines; waits for one that says what. */
class Logs {
  lines: string[] = [];
  private waiters: { what: string; resolve: () => void }[] = [];
  constructor(private readonly throwing = false) {}
  log = (line: string): void => {
    this.lines.push(line);
    this.waiters = this.waiters.filter((w) => (line.includes(w.what) ? (w.resolve(), false) : true));
    if (this.throwing) {
      throw new Error("the log is broken too");
    }
  };
  waitFor(what: string): Promise<void> {
    if (this.lines.some((l) => l.includes(what))) {
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push({ what, resolve }));
  }
}

/** Waits until a session's log has an envelope whose text is text. */
async function said(c: Client, sessionId: string, text: string): Promise<void> {
  for await (const d of c.watch(sessionId)) {
    if (textOf(d.envelope) === text) {
      return;
    }
  }
}

describe("a failing callback", { timeout: 60_000 }, () => {
  let hub: Hubd;
  before(async () => {
    hub = await Hubd.start();
  });
  after(() => hub.close());

  for (const transport of [Transport.Stream, Transport.Unary]) {
    for (const throwingLog of [false, true]) {
      test(`${transport}${throwingLog ? ", a log that throws" : ""}: a handler that throws anything is logged, and the session's next turn is handled`, async () => {
        const logs = new Logs(throwingLog);
        const alice = await hub.connect("alice");
        const bob = await hub.connect("bob", { transport, log: logs.log });
        const calls: string[] = [];
        const called = new Map<string, ReturnType<typeof deferred<void>>>();
        for (const t of ["one", "two", "three"]) {
          called.set(t, deferred());
        }
        // A plain function: a synchronous throw, not a rejection.
        const handler: Handler = (turn) => {
          calls.push(turn.text());
          called.get(turn.text())?.resolve();
          if (turn.text() === "one") {
            throw unprintable();
          }
          if (turn.text() === "two") {
            throw new Error("the model is down");
          }
          return `ok ${turn.text()}`;
        };
        const ac = new AbortController();
        const run = bob.serve(handler, { signal: ac.signal, view: null });
        try {
          const s = await alice.open({ type: SessionType.Conversation, participants: autoAccepted("bob") });
          for (const t of ["one", "two", "three"]) {
            await alice.sendText(s.id, t);
            await within(called.get(t)!.promise, 10_000, `bob's handler called for "${t}"`);
          }
          await within(said(alice, s.id, "ok three"), 10_000, "bob's reply to the third turn");
          assert.deepEqual(calls, ["one", "two", "three"]);
          await within(logs.waitFor("the model is down"), 10_000, "the handler's error logged");
          assert.ok(logs.lines.some((l) => l.includes("no string form")), logs.lines.join("\n"));
        } finally {
          ac.abort();
          await run;
          alice.close();
          bob.close();
        }
      });
    }

    test(`${transport}: an observer that throws a value with no string form is logged; serve goes on`, async () => {
      const logs = new Logs();
      const alice = await hub.connect("alice");
      const bob = await hub.connect("bob", { transport, log: logs.log });
      const ac = new AbortController();
      let observed = 0;
      const run = bob.serve((turn) => `ok ${turn.text()}`, {
        signal: ac.signal,
        view: null,
        observer: () => {
          observed++;
          throw unprintable();
        },
      });
      try {
        const s = await alice.open({ type: SessionType.Conversation, participants: autoAccepted("bob") });
        for (const t of ["one", "two"]) {
          await alice.sendText(s.id, t);
          await within(said(alice, s.id, `ok ${t}`), 10_000, `bob's reply to "${t}"`);
        }
        assert.ok(observed >= 2, `observed ${observed}`);
        assert.ok(logs.lines.some((l) => l.includes("observer") && l.includes("no string form")), logs.lines.join("\n"));
      } finally {
        ac.abort();
        await run;
        alice.close();
        bob.close();
      }
    });
  }

  test("an agent stream's delivery callback that throws is reported; the stream reads on and answers its sends", async () => {
    const logs = new Logs();
    const alice = await hub.connect("alice");
    const bob = await hub.connect("bob", { log: logs.log });
    const seen: string[] = [];
    const next = new Map<string, ReturnType<typeof deferred<void>>>([
      ["one", deferred()],
      ["two", deferred()],
    ]);
    try {
      const st = await bob.connectStream({
        subscribe: { cursors: {}, includeEnded: false, terse: false, turnView: undefined },
        onDelivery: (d: Delivery) => {
          const text = textOf(d.envelope);
          seen.push(text);
          next.get(text)?.resolve();
          if (text === "one") {
            throw unprintable();
          }
          if (text === "two") {
            return Promise.reject(new Error("the callback rejected"));
          }
          throw new Error("the callback failed");
        },
        waitForReady: false,
      });
      assert.ok(st, "bob has an agent stream");
      const s = await alice.open({ type: SessionType.Conversation, participants: autoAccepted("bob") });
      await alice.sendText(s.id, "one");
      await within(next.get("one")!.promise, 10_000, "the first delivery");
      await alice.sendText(s.id, "two");
      await within(next.get("two")!.promise, 10_000, "the next delivery, after the callback threw");
      await within(logs.waitFor("the callback rejected"), 10_000, "the rejection reported");
      const ack = await st.send(s.id, hubpb.Envelope.fromPartial({ type: "app.back", clientMsgId: "m-back" }));
      assert.ok(ack.seq > 0 && !st.ended);
      assert.ok(logs.lines.some((l) => l.includes("no string form")), logs.lines.join("\n"));
      st.close();
    } finally {
      alice.close();
      bob.close();
    }
  });
});
