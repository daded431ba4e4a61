// A real hubd cluster on loopback for the tests: three hubd processes, each
// with its embedded NATS server routed to the others (--embed-nats), the
// deployment of docs/SCALING.md. P = 8 partitions, a 2 s lease.
//
// Every node's arguments are built in one place (nodeArgs). A hubd that
// forwards calls to the owner itself (a --forward flag) is started with
// --forward=false, so that the nodes answer NOT_OWNER and the SDK's
// following is what the tests exercise; Cluster.start(n, { forward: true })
// leaves forwarding on.

import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { freePort, hubdBinary } from "./hub.js";

export const partitions = 8;
const lease = "2s";

/** One hubd process of a Cluster. */
export class Node {
  proc?: ChildProcess;
  exited?: Promise<void>;
  log = "";

  constructor(
    readonly id: string,
    readonly addr: string,
    readonly nats: string,
    readonly args: string[],
  ) {}

  get alive(): boolean {
    return this.proc !== undefined && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Sends sig (SIGKILL: the node dies; SIGTERM: it hands its partitions back and stops) and waits until it is gone. */
  async signal(sig: NodeJS.Signals): Promise<void> {
    if (this.alive) {
      this.proc?.kill(sig);
    }
    await this.exited;
  }
}

/** Three hubd nodes (n1, n2, n3) sharing one session space. */
export class Cluster {
  readonly nodes: Node[] = [];

  private constructor(readonly dir: string) {}

  /** The one place a node's hubd arguments are made. */
  static nodeArgs(dir: string, id: string, addr: string, nats: string, route: string, routes: string[]): string[] {
    const args = [
      "serve",
      "--listen", addr,
      "--http", "off",
      "--data", join(dir, id),
      "--log-format", "json",
      "--node-id", id,
      "--partitions", String(partitions),
      "--lease-ttl", lease,
      "--embed-nats",
      "--nats-listen", nats,
      "--nats-route-listen", route,
      "--nats-routes", routes.join(","),
    ];
    return args;
  }

  /** Starts n nodes (each waits for a NATS quorum before it listens) and resolves once all listen and the partitions are spread over them. */
  static async start(n = 3): Promise<Cluster> {
    const c = new Cluster(mkdtempSync(join(tmpdir(), "hubd-ts-cluster-")));
    const ports: number[] = [];
    while (ports.length < 3 * n) {
      const p = await freePort();
      if (!ports.includes(p)) {
        ports.push(p);
      }
    }
    const routes = Array.from({ length: n }, (_, i) => `127.0.0.1:${ports[2 * n + i]}`);
    for (let i = 0; i < n; i++) {
      const id = `n${i + 1}`;
      const addr = `127.0.0.1:${ports[i]}`;
      const nats = `127.0.0.1:${ports[n + i]}`;
      c.nodes.push(new Node(id, addr, `nats://${nats}`, Cluster.nodeArgs(c.dir, id, addr, nats, routes[i], routes)));
    }
    try {
      c.nodes.forEach((node) => c.spawn(node));
      await Promise.all(c.nodes.map((node) => c.awaitListen(node, 60_000)));
      await c.waitSpread(c.nodes.map((node) => node.id), 60_000);
    } catch (err) {
      await c.close();
      throw err;
    }
    return c;
  }

  get addrs(): string[] {
    return this.nodes.map((n) => n.addr);
  }

  private spawn(n: Node): void {
    const proc = spawn(hubdBinary(), n.args, { stdio: ["ignore", "ignore", "pipe"] });
    n.proc = proc;
    n.log = "";
    n.exited = new Promise((res) => proc.once("exit", () => res()));
    proc.stderr?.setEncoding("utf8");
    proc.stderr?.on("data", (chunk: string) => {
      n.log += chunk;
    });
  }

  private async awaitListen(n: Node, timeoutMs: number): Promise<void> {
    const [host, port] = [n.addr.slice(0, n.addr.lastIndexOf(":")), Number(n.addr.slice(n.addr.lastIndexOf(":") + 1))];
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!n.alive) {
        throw new Error(`node ${n.id} exited:\n${tail(n.log)}`);
      }
      const up = await new Promise<boolean>((res) => {
        const s = connect(port, host, () => {
          s.destroy();
          res(true);
        });
        s.once("error", () => res(false));
      });
      if (up) {
        return;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`node ${n.id} did not listen within ${timeoutMs} ms:\n${tail(n.log)}`);
  }

  /** Partition → owning node id, as `hubd cluster status --json` through via's NATS server tells. */
  owners(via: Node): Map<number, string> {
    const out = new Map<number, string>();
    try {
      const json = execFileSync(hubdBinary(), ["cluster", "status", "--nats", via.nats, "--json"], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
      });
      for (const p of (JSON.parse(json) as { partitions?: { partition: number; owner?: string }[] }).partitions ?? []) {
        out.set(p.partition, p.owner ?? "");
      }
    } catch {
      // not answering yet
    }
    return out;
  }

  /** The id of the node serving the tree whose root is rootId, as `hubd cluster status` through via tells; undefined when none does. */
  ownerOf(rootId: string, via: Node = this.nodes[0]): string | undefined {
    return this.owners(via).get(partitionOf(rootId)) || undefined;
  }

  /** Waits until every partition is owned by one of ids, each owning some; resolves with how long that took (ms). */
  async waitSpread(ids: string[], timeoutMs = 60_000): Promise<number> {
    const start = Date.now();
    const via = this.nodes.find((n) => n.id === ids[0]) as Node;
    let last = new Map<number, string>();
    while (Date.now() - start < timeoutMs) {
      last = this.owners(via);
      const owners = new Set(last.values());
      if (last.size === partitions && owners.size === ids.length && ids.every((id) => owners.has(id))) {
        return Date.now() - start;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const logs = this.nodes.map((n) => `${n.id}:\n${tail(n.log)}`).join("\n");
    throw new Error(`partitions not spread over ${ids.join(",")} within ${timeoutMs} ms: ${JSON.stringify([...last])}\n${logs}`);
  }

  /** Kills every node still running and removes the data. */
  async close(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.signal("SIGKILL")));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The partition of a tree given its root session id: FNV-1a (32 bits) of the UUID's 16 bytes, modulo partitions (wal/jetstream.Partition). */
export function partitionOf(rootId: string): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(rootId.replace(/-/g, ""), "hex")) {
    h = Math.imul(h ^ b, 0x01000193) >>> 0;
  }
  return h % partitions;
}

function tail(log: string, lines = 30): string {
  return log.split("\n").slice(-lines).join("\n");
}

// Nodes still running when the test process exits are killed.
const started: Node[] = [];
process.on("exit", () => {
  for (const n of started) {
    if (n.alive) {
      n.proc?.kill("SIGKILL");
    }
  }
});
export function track(c: Cluster): Cluster {
  started.push(...c.nodes);
  return c;
}
