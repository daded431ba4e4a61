// The real hubd for the tests: built once from the repository
// (`go build -o build/hubd ./cmd/hubd`, or $HUBD_BIN), started on a free
// loopback port with a temporary data directory, killed or restarted at
// will.

import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import * as grpc from "@grpc/grpc-js";
import { Client, type ClientOptions } from "@hubd/sdk";

/** The package directory (sdk/typescript). */
export const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
/** The repository root. */
export const repoRoot = resolve(pkgDir, "..", "..");

/** The hubd binary: $HUBD_BIN, or build/hubd, built from the repository when missing. */
export function hubdBinary(): string {
  if (process.env.HUBD_BIN) {
    return process.env.HUBD_BIN;
  }
  const bin = join(pkgDir, "build", "hubd");
  if (!existsSync(bin)) {
    buildHubd(bin);
  }
  return bin;
}

/** Builds hubd from the repository into bin. */
export function buildHubd(bin: string): void {
  const path = [process.env.PATH ?? "", "/usr/local/go/bin"].join(":");
  execFileSync("go", ["build", "-o", bin, "./cmd/hubd"], {
    cwd: repoRoot,
    env: { ...process.env, PATH: path, GOFLAGS: `${process.env.GOFLAGS ?? ""} -buildvcs=false`.trim() },
    stdio: "inherit",
  });
}

/** A free loopback port (the kernel's choice, released for hubd to take). */
export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? res(addr.port) : rej(new Error("no port"))));
    });
  });
}

/** A fresh temporary directory. */
export function tempDir(prefix = "hubd-ts-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** The agents that take sessions from anyone on a hub with tokens or certificates (its --auto-accept-from file). */
const consenting = ["alice", "bob", "carol", "dave", "mallory", "op", "operator"];

export interface HubOptions {
  /** Extra flags of hubd serve. */
  args?: string[];
  /** A tokens file's content ("agent token [operator]" per line). */
  tokens?: string;
}

/** The hubd processes still running, killed if the test process exits first. */
const running = new Set<ChildProcess>();
process.on("exit", () => {
  for (const p of running) {
    p.kill("SIGKILL");
  }
});

/** A hubd process serving on a loopback port with its own data directory. */
export class Hubd {
  private proc?: ChildProcess;
  private exited?: Promise<void>;
  /** What hubd logged (stderr), for tests that wait for a line. */
  log = "";
  private waiters: { text: string; resolve: () => void }[] = [];

  private constructor(
    readonly addr: string,
    readonly dataDir: string,
    private readonly args: string[],
  ) {}

  /** Starts a hub on a free port with a fresh data directory. */
  static async start(opts: HubOptions = {}): Promise<Hubd> {
    const dir = tempDir();
    const args = [...(opts.args ?? [])];
    if (opts.tokens !== undefined) {
      const file = join(dir, "tokens.txt");
      writeFileSync(file, opts.tokens);
      args.push("--tokens", file);
    }
    if (opts.tokens !== undefined || args.includes("--client-ca")) {
      // With tokens or certificates, auto_accept needs the invitee's
      // consent: the tests' agents take sessions from anyone.
      const file = join(dir, "consent.txt");
      writeFileSync(file, consenting.map((n) => `${n} *\n`).join(""));
      args.push("--auto-accept-from", file);
    }
    const h = new Hubd(`127.0.0.1:${await freePort()}`, join(dir, "data"), args);
    await h.run();
    return h;
  }

  /** Starts hubd (again) on the same address and data directory, and waits until it listens. */
  async run(): Promise<void> {
    const proc = spawn(hubdBinary(), ["serve", "--listen", this.addr, "--data", this.dataDir, "--log-format", "console", ...this.args], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    this.proc = proc;
    running.add(proc);
    this.exited = new Promise((res) =>
      proc.once("exit", () => {
        running.delete(proc);
        res();
      }),
    );
    proc.stderr?.setEncoding("utf8");
    proc.stderr?.on("data", (chunk: string) => {
      this.log += chunk;
      this.waiters = this.waiters.filter((w) => {
        if (this.log.includes(w.text)) {
          w.resolve();
          return false;
        }
        return true;
      });
    });
    const started = this.waitFor("hubd listening");
    const failed = this.exited.then(() => {
      throw new Error(`hubd exited at start:\n${this.log}`);
    });
    await Promise.race([started, failed]);
  }

  /** Resolves once hubd has logged text (since it was first started). */
  waitFor(text: string): Promise<void> {
    if (this.log.includes(text)) {
      return Promise.resolve();
    }
    return new Promise((res) => this.waiters.push({ text, resolve: res }));
  }

  /** Kills hubd with SIGKILL (a crash: nothing is flushed or drained) and waits until it is gone. */
  async kill9(): Promise<void> {
    this.proc?.kill("SIGKILL");
    await this.exited;
  }

  /**
   * Stops hubd with SIGSTOP: it holds its connections but reads and answers nothing (kill9 still ends it).
   * Resolves once every thread of hubd is stopped: the kernel stops them one by one, and on a loaded machine
   * one of them can go on reading and writing for milliseconds after kill returns.
   */
  async pause(): Promise<void> {
    const pid = this.proc?.pid;
    if (pid === undefined) {
      return;
    }
    this.proc?.kill("SIGSTOP");
    const tasks = `/proc/${pid}/task`;
    if (!existsSync(tasks)) {
      return; // not Linux: no way to tell, kill returned
    }
    const stopped = (): boolean =>
      readdirSync(tasks).every((tid) => {
        try {
          // The state follows the command's closing parenthesis: T (stopped) or t (traced).
          const stat = readFileSync(join(tasks, tid, "stat"), "utf8");
          return /^[Tt]$/.test(stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3));
        } catch {
          return true; // the thread has gone
        }
      });
    for (const deadline = Date.now() + 10_000; !stopped(); ) {
      if (Date.now() > deadline) {
        throw new Error(`hubd (pid ${pid}) did not stop within 10 s of SIGSTOP`);
      }
      await new Promise((r) => setTimeout(r, 1));
    }
  }

  /** Stops hubd gracefully (SIGTERM: it drains its streams) and waits until it is gone. */
  async stop(): Promise<void> {
    if (this.proc && this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill("SIGTERM");
      this.proc.kill("SIGCONT"); // a paused hub handles it once it runs again
    }
    await this.exited;
  }

  /** Stops hubd and removes its data. */
  async close(): Promise<void> {
    await this.stop();
    rmSync(dirname(this.dataDir), { recursive: true, force: true });
  }

  /** Connects to this hub as name (development mode) with the test's defaults. */
  connect(name: string, opts: Partial<ClientOptions> = {}): Promise<Client> {
    return Client.connect(this.addr, { name, timeoutMs: 5000, ...opts });
  }
}

/** A promise with its resolve function, for tests that wait on events. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Rejects after ms with what, unless p settles first. */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, rej) => {
    timer = setTimeout(() => rej(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/**
 * An interceptor that shows each message the hub sends on calls of the
 * given methods ("/hubd.v1.Hub/AgentStream", ...) to see(method, message)
 * before the client reads it; see may change the message. Other calls
 * pass untouched.
 */
export function watchReceived<M>(methods: string[], see: (method: string, m: M) => void): grpc.Interceptor {
  return (options, nextCall) => {
    const method = options.method_definition.path;
    if (!methods.includes(method)) {
      return new grpc.InterceptingCall(nextCall(options));
    }
    return new grpc.InterceptingCall(nextCall(options), {
      start(md, _listener, next) {
        next(
          md,
          new grpc.ListenerBuilder()
            .withOnReceiveMessage((m: M, nextMessage) => {
              see(method, m);
              nextMessage(m);
            })
            .build(),
        );
      },
    });
  };
}
