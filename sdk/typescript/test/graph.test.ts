// The graph builders write the same JSON values as the Go SDK's
// (sdk/testdata/graphs is the contract, on meaning: the hub keeps a graph in
// its canonical form), and the hub accepts them.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";

import {
  allOf,
  always,
  anyOf,
  autoAccepted,
  Client,
  contextCompare,
  contextEquals,
  contextIn,
  customCondition,
  customTarget,
  eventTypeIs,
  fromSpeaker,
  Graph,
  InvalidGraphError,
  mentions,
  not,
  revertToInitiator,
  roundRobin,
  sequence,
  SessionType,
  stay,
  supervisor,
  terminate,
  toActiveAgent,
  toAgent,
  toMentioned,
  toNextInOrder,
  toolCalled,
  toSupervisor,
  turnCountAtLeast,
} from "@hubd/sdk";

import { Hubd, hubdBinary, repoRoot, tempDir } from "./hub.js";

const run = promisify(execFile);

/** The graphs of agentsdk/graph_golden_test.go, built with this SDK. */
function goldenGraphs(): Record<string, Graph> {
  return {
    sequence: sequence("researcher", "writer", "editor"),
    round_robin: roundRobin(["a", "b", "c"], 6),
    supervisor: supervisor({ router: "router", specialists: ["billing", "tech"] }),
    supervisor_user: supervisor({
      router: "router",
      specialists: ["billing", "tech"],
      user: "user",
      maxTurns: 20,
      transferPrefix: "to_",
      helpTool: "help",
    }),
    every_node: new Graph("a")
      .on(always(), stay())
      .onPriority(1, fromSpeaker("a"), toAgent("b"))
      .onPriority(2, toolCalled("t"), toNextInOrder())
      .onPriority(3, contextEquals("k", { x: [1, "y", true, null] }), revertToInitiator())
      .onPriority(4, contextIn("k", "a", 2.5), terminate("done"))
      .onPriority(5, contextCompare("n", "ge", 3), toSupervisor())
      .onPriority(6, allOf(mentions("b"), not(turnCountAtLeast(2))), toMentioned())
      .onPriority(7, anyOf(eventTypeIs("packet"), customCondition("is_urgent", { level: 2 })), toActiveAgent("a"))
      .on(always(), toActiveAgent(""))
      .on(always(), customTarget("escalate_to_human"))
      .otherwise(terminate(""))
      .withMaxTurns(9),
  };
}

const goldenDir = join(repoRoot, "sdk", "testdata", "graphs");

describe("graph JSON", { timeout: 20_000 }, () => {
  test("every golden graph is written as the Go SDK writes it, in meaning", () => {
    const graphs = goldenGraphs();
    assert.equal(Object.keys(graphs).length, 5);
    for (const [name, g] of Object.entries(graphs)) {
      const want: unknown = JSON.parse(readFileSync(join(goldenDir, `${name}.json`), "utf8"));
      assert.deepStrictEqual(JSON.parse(g.json()), want, name);
      assert.deepStrictEqual(g.toJSON(), want, name);
    }
  });

  test("a golden graph read from JSON writes back the same value", () => {
    for (const name of Object.keys(goldenGraphs())) {
      const text = readFileSync(join(goldenDir, `${name}.json`), "utf8");
      const want: unknown = JSON.parse(text);
      assert.deepStrictEqual(JSON.parse(Graph.fromJSON(text).json()), want, name);
      assert.deepStrictEqual(JSON.parse(Graph.fromJSON(want as object).json()), want, name);
    }
  });

  test("a graph read from JSON keeps its values, and defaults are filled in", () => {
    const g = Graph.fromJSON(
      '{"initial_speaker":"a","transitions":[{"when":{"name":"context_compare","args":{"value":1.0,"op":"ge","key":"n"}},"then":{"name":"stay"}}]}',
    );
    assert.equal(
      g.json(),
      '{"version":1,"initial_speaker":"a","transitions":[{"when":{"name":"context_compare","args":{"value":1,"op":"ge","key":"n"}},"then":{"name":"stay","args":{}},"priority":0}],"default_target":{"name":"terminate","args":{"reason":"after_work"}},"max_turns":null}',
    );
    assert.throws(() => Graph.fromJSON('{"version":2}'), /version 2/);
    assert.throws(() => Graph.fromJSON('{"transitions":[{"when":{"name":"always"}}]}'), /transitions\[0\]/);
  });

  test("any string and number JSON holds is written as it is; what JSON cannot hold throws", () => {
    const name = 'a<b>&c"\\\b\f\n\r\t\x01\x1f\x7f é \u2028\u2029 😀';
    const value = { b: 1, a: 2, B: 3, é: 4, "😀": 5, "\uffff": 6, n: [1e21, 1e20, 1.5e-7, 1e-6, 0.000001234, 2.5, 1e100, 5e-324] };
    const g = new Graph(name).on(contextEquals("k", value), stay());
    const back = JSON.parse(g.json()) as { initial_speaker: string; transitions: { when: { args: { value: unknown } } }[] };
    assert.equal(back.initial_speaker, name);
    assert.deepStrictEqual(back.transitions[0].when.args.value, value);
    assert.throws(() => new Graph("a").on(contextCompare("n", "ge", Number.NaN), stay()).json(), /not a JSON number/);
    assert.throws(() => new Graph("a").on(contextIn("k", 1, Infinity), stay()).json(), /not a JSON number/);
    // Go passes no variadic arguments as a nil slice: null.
    assert.deepStrictEqual(contextIn("k").toJSON(), { name: "context_in", args: { key: "k", values: null } });
    assert.deepStrictEqual(allOf().toJSON(), { name: "all_of", args: { conditions: null } });
  });
});

describe("graphs and the hub", { timeout: 20_000 }, () => {
  let hub: Hubd;
  let alice: Client;
  before(async () => {
    hub = await Hubd.start();
    alice = await hub.connect("alice");
  });
  after(async () => {
    alice.close();
    await hub.close();
  });

  test("hubd graph validate accepts every golden graph built here (custom nodes are the operator's)", async () => {
    const dir = tempDir();
    for (const [name, g] of Object.entries(goldenGraphs())) {
      const file = join(dir, `${name}.json`);
      writeFileSync(file, g.json());
      if (name === "every_node") {
        // A stock hub knows no custom condition: validation fails there, and
        // only there.
        await assert.rejects(run(hubdBinary(), ["graph", "validate", file]), (err: { stderr: string }) => {
          assert.match(err.stderr, /transitions\[7\]\.when\.args\.conditions\[1\]: unknown condition "is_urgent"/);
          return true;
        });
        continue;
      }
      const { stdout } = await run(hubdBinary(), ["graph", "validate", file]);
      assert.match(stdout, /^ok: /, name);
    }
    // every_node without its custom nodes is valid.
    const builtin = goldenGraphs().every_node;
    builtin.transitions = builtin.transitions.filter((t) => t.then.name !== "escalate_to_human" && t.priority !== 7);
    const file = join(dir, "builtin.json");
    writeFileSync(file, builtin.json());
    const { stdout } = await run(hubdBinary(), ["graph", "validate", file]);
    assert.match(stdout, /^ok: 8 transitions/);
  });

  test("the hub opens workflow sessions with the graphs, and refuses a bad one naming the node", async () => {
    const cases: [Graph, string[]][] = [
      [sequence("alice", "writer", "editor"), ["writer", "editor"]],
      [roundRobin(["alice", "b", "c"], 6), ["b", "c"]],
      [supervisor({ router: "alice", specialists: ["billing", "tech"] }), ["billing", "tech"]],
      [supervisor({ router: "router", specialists: ["billing"], user: "alice", maxTurns: 20 }), ["router", "billing"]],
    ];
    for (const [g, others] of cases) {
      const s = await alice.open({ type: SessionType.Workflow, graph: g, participants: autoAccepted(...others) });
      assert.equal(s.state, "OPEN");
      assert.deepEqual(s.meta?.knobs.graph, JSON.parse(g.json()));
    }
    await assert.rejects(alice.open({ graph: sequence("alice", "zed"), participants: autoAccepted("bob") }), (err) => {
      assert.ok(err instanceof InvalidGraphError);
      assert.match(err.detail, /zed/);
      return true;
    });
  });
});
