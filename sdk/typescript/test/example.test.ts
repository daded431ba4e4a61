// examples/typescript/pipeline.ts against the real hub prints the same
// transcript as the Go example (examples/pipeline).

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { describe, test } from "node:test";
import { promisify } from "node:util";

import { autoAccepted, sequence } from "@hubd/sdk";

import { Hubd, pkgDir } from "./hub.js";

const run = promisify(execFile);
const example = join(pkgDir, "build", "examples", "typescript", "pipeline.js");

const want = `[5] researcher: Findings: group commit batches the fsyncs of concurrent sends.
[6] writer: Draft: durable writes stay fast because group commit batches the fsyncs of concurrent sends.
[7] editor: Approved after reading 2 turns.
closed: sequence_complete
`;

describe("examples/typescript/pipeline.ts", { timeout: 60_000 }, () => {
  test("prints the transcript and the close reason, in development mode", async () => {
    const hub = await Hubd.start();
    try {
      const { stdout } = await run(process.execPath, [example, "--hub", hub.addr, "--timeout", "20s"]);
      assert.equal(stdout, want);
    } finally {
      await hub.close();
    }
  });

  test("serves only the session it opened: another client's sessions with its editor get nothing", async () => {
    const hub = await Hubd.start();
    try {
      const person = await hub.connect("person");
      try {
        const invitedOne = await person.openWorkflow(sequence("person", "editor"), ["editor"]);
        const first = await person.open({ graph: sequence("editor", "person"), participants: autoAccepted("editor") });
        const { stdout } = await run(process.execPath, [example, "--hub", hub.addr, "--timeout", "20s"]);
        assert.equal(stdout, want);
        for (const s of [invitedOne, first]) {
          const acted = (await person.readLog(s.id)).filter((e) => e.from === "editor");
          assert.deepEqual(acted, [], `the example's editor acted in ${s.id}, a session it did not open`);
        }
        assert.equal((await person.getSession(invitedOne.id)).state, "PENDING");
      } finally {
        person.close();
      }
    } finally {
      await hub.close();
    }
  });

  test("and with the hub's tokens file", async () => {
    const hub = await Hubd.start({
      tokens: "# agent token [operator]\nresearcher r-token-0123456789\nwriter w-token-0123456789\neditor e-token-0123456789\n",
    });
    try {
      const tokens = join(hub.dataDir, "..", "tokens.txt");
      const { stdout } = await run(process.execPath, [example, "--hub", hub.addr, "--token-file", tokens]);
      assert.equal(stdout, want);
      // A hub that knows no such agents: the example fails and says why.
      const other = await Hubd.start({ tokens: "mallory m-token-0123456789\n" });
      try {
        await assert.rejects(run(process.execPath, [example, "--hub", other.addr, "--token-file", tokens, "--timeout", "10s"]), (err: { code: number; stderr: string }) => {
          assert.equal(err.code, 1);
          assert.match(err.stderr, /^error: .*UNAUTHENTICATED/m);
          return true;
        });
      } finally {
        await other.close();
      }
    } finally {
      await hub.close();
    }
  });
});
