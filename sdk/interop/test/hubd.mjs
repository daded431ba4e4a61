// Starts the real hubd for a test: development mode, a fresh data
// directory, free loopback ports; resolves with its addresses once it
// logs "hubd listening". HUBD is the binary (ci.sh builds it).
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

export const HUBD = process.env.HUBD ?? "hubd";

export async function startHubd(...extra) {
  const data = mkdtempSync(join(tmpdir(), "hubd-interop-"));
  const hub = await runHubd(data, extra);
  return {
    ...hub,
    // restart stops the hub and starts it again on the same data
    // directory (on new ports), as after a crash or an upgrade.
    async restart() {
      await this.halt();
      Object.assign(this, await runHubd(data, extra));
    },
    async stop() {
      await this.halt();
      rmSync(data, { recursive: true, force: true });
    },
  };
}

async function runHubd(data, extra) {
  const proc = spawn(HUBD, ["serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--data", data,
    "--log-format", "json", ...extra], { stdio: ["ignore", "ignore", "pipe"] });
  const log = [];
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("hubd did not start within 20 s:\n" + log.join("\n"))), 20000);
    proc.on("exit", (code) => { clearTimeout(timer); reject(new Error(`hubd exited ${code}:\n` + log.join("\n"))); });
    createInterface({ input: proc.stderr }).on("line", (line) => {
      log.push(line);
      try {
        const l = JSON.parse(line);
        if (l.message === "hubd listening") { clearTimeout(timer); resolve({ grpc: l.listen, http: l.http }); }
      } catch { /* not JSON */ }
    });
  });
  const addrs = await ready;
  proc.removeAllListeners("exit");
  return {
    ...addrs,
    log,
    async halt() {
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise((r) => proc.once("exit", r));
        proc.kill("SIGTERM");
        await exited;
      }
    },
  };
}
