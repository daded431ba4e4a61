// Forks and operator actions (steer) against the real hub (sdk/go/fork_test.go
// and cmd/hubd/e2e_steer_test.go are the Go twins): a fork at a seq with its
// context edits, chosen next speaker and labels; an operator's next speaker,
// context and timer actions; a participant's steer refused; NOTHING_TO_STEER;
// exactly one action. In development mode the agent "operator" is an operator.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  autoAccepted,
  cancelTimerAction,
  Client,
  expect,
  extendTimerAction,
  MalformedError,
  nextSpeakerAction,
  NothingToSteerError,
  OutOfTurnError,
  PermissionDeniedError,
  releaseTurnAction,
  roundRobin,
  setContextAction,
  State,
  UnknownSessionError,
  unsetContextAction,
  type Session,
} from "@hubd/sdk";

import { Hubd } from "./hub.js";

let unique = 0;
/** Agent names unique to one test. */
function namer(): (base: string) => string {
  const n = ++unique;
  return (base) => `${base}-${n}`;
}

describe("fork and steer", { timeout: 60_000 }, () => {
  let hub: Hubd;
  const clients: Client[] = [];
  const dial = async (name: string) => {
    const c = await hub.connect(name);
    clients.push(c);
    return c;
  };
  /** alice, bob and carol in a round_robin(alice, bob, carol) session alice opened, open at once. */
  const three = async (withTimer = false): Promise<[Client, Client, Client, Session]> => {
    const n = namer();
    const [alice, bob, carol] = await Promise.all([n("alice"), n("bob"), n("carol")].map(dial));
    const s = await alice.open({
      graph: roundRobin([alice.name, bob.name, carol.name], 20),
      participants: autoAccepted(bob.name, carol.name),
      expectations: withTimer ? [expect("turn_within", 600_000, "warn")] : [],
    });
    return [alice, bob, carol, s];
  };
  before(async () => {
    hub = await Hubd.start();
  });
  after(async () => {
    clients.forEach((c) => c.close());
    await hub.close();
  });

  test("fork at a seq: context edits, the chosen next speaker, labels; the source unchanged", async () => {
    const [alice, bob, carol, s] = await three();
    const first = await alice.sendText(s.id, "first");
    await bob.sendText(s.id, "second");

    const f = await bob.fork(s.id, first.seq, { set: { tone: "dry" }, nextSpeaker: carol.name, labels: { try: "2" } });
    assert.notEqual(f.id, s.id);
    assert.equal(f.state, State.Open);
    assert.equal(f.meta?.labels["forked_from"], s.id);
    assert.equal(f.meta?.labels["try"], "2");
    assert.deepEqual([f.meta?.forkedFrom?.sessionId, f.meta?.forkedFrom?.atSeq], [s.id, first.seq]);
    assert.equal(f.var("tone"), "dry");
    assert.deepEqual(f.expected, [carol.name]);
    await assert.rejects(bob.sendText(f.id, "me?"), OutOfTurnError);
    await carol.sendText(f.id, "carol in the fork");

    const plain = await alice.fork(s.id, first.seq);
    assert.deepEqual(plain.expected, [bob.name]);
    assert.equal(plain.var("tone"), undefined);
    assert.deepEqual((await alice.getSession(s.id)).expected, [carol.name]);

    await alice.setContext(s.id, { stage: "draft" });
    const last = (await alice.getSession(s.id)).seq;
    assert.equal((await alice.fork(s.id, last)).var("stage"), "draft");
    assert.equal((await alice.fork(s.id, last, { delete: ["stage"] })).var("stage"), undefined);
  });

  test("fork refusals: a seq out of range, a stranger, an unknown source", async () => {
    const [alice, , , s] = await three();
    await alice.sendText(s.id, "first");
    const last = (await alice.getSession(s.id)).seq;
    await assert.rejects(alice.fork(s.id, last + 5), (e: Error) => e instanceof MalformedError && e.message.includes(`from 1 to ${last}`));
    await assert.rejects(alice.fork(s.id, last, { nextSpeaker: "nobody-at-all" }), MalformedError);
    const stranger = await dial(namer()("stranger"));
    await assert.rejects(stranger.fork(s.id, last), PermissionDeniedError);
    await assert.rejects(alice.fork("00000000-0000-4000-8000-000000000000", 1), UnknownSessionError);
  });

  test("steer as the operator: next speaker and context; a participant refused", async () => {
    const [alice, bob, carol, s] = await three();
    const op = await dial("operator");
    await alice.sendText(s.id, "over to bob");

    await assert.rejects(bob.steer(s.id, "mine", nextSpeakerAction(carol.name)), PermissionDeniedError);
    const ack = await op.steer(s.id, "carol has the logs", nextSpeakerAction(carol.name));
    assert.ok(ack.seq > 0);
    await assert.rejects(bob.sendText(s.id, "me?"), OutOfTurnError);
    await carol.sendText(s.id, "here are the logs");

    await op.steer(s.id, "escalated", setContextAction({ priority: 1, team: "core" }));
    const got = await alice.getSession(s.id);
    assert.deepEqual([got.var("priority"), got.var("team")], [1, "core"]);
    await op.steer(s.id, "de-escalated", unsetContextAction("priority"));
    assert.equal((await alice.getSession(s.id)).var("priority"), undefined);
    await assert.rejects(op.steer(s.id, "again", unsetContextAction("priority")), MalformedError);

    const actions = (await alice.readLog(s.id)).flatMap((e) => (e.operatorAction ? [e.operatorAction] : []));
    assert.deepEqual(
      actions.map((a) => a.reason),
      ["carol has the logs", "escalated", "de-escalated"],
    );
    assert.deepEqual([...new Set(actions.map((a) => a.operator))], ["operator"]);
  });

  test("steer: NOTHING_TO_STEER, timers extended and cancelled", async () => {
    const [alice, , , s] = await three(true);
    const op = await dial("operator");
    await alice.sendText(s.id, "over to bob");
    await assert.rejects(
      op.steer(s.id, "unstick", releaseTurnAction("go")),
      (e: Error) => e instanceof NothingToSteerError && e.reason === "NOTHING_TO_STEER" && e.message.includes("no turn is held"),
    );
    await op.steer(s.id, "bob is slow today", extendTimerAction("turn_within", 120_000));
    await op.steer(s.id, "no hurry", cancelTimerAction("turn_within"));
    await assert.rejects(op.steer(s.id, "again", cancelTimerAction("turn_within")), NothingToSteerError);
    await assert.rejects(op.steer(s.id, "which?", extendTimerAction("no_such_timer", 5000)), MalformedError);
  });

  test("steer takes exactly one action", async () => {
    const op = await dial("operator");
    await assert.rejects(op.steer("any", "why", {}), /exactly one action .* got none/);
    await assert.rejects(op.steer("any", "why", { nextSpeaker: "x", releaseResult: "go" }), /got nextSpeaker, releaseResult/);
    await assert.rejects(op.steer("any", "why", { setContext: { a: 1 }, cancelTimer: "t" }), /got setContext\/unsetContext, cancelTimer/);
  });
});
