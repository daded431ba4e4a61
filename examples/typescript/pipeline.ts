// The pipeline of examples/pipeline, in TypeScript on @hubd/sdk: a
// researcher, a writer and an editor, each serving its turns with its own
// connection, in a workflow session following sequence(researcher, writer,
// editor). The researcher opens the session; the program prints one line per
// turn and the close reason, as the Go example does:
//
//	[5] researcher: Findings: group commit batches the fsyncs of concurrent sends.
//	[6] writer: Draft: durable writes stay fast because group commit batches the fsyncs of concurrent sends.
//	[7] editor: Approved after reading 2 turns.
//	closed: sequence_complete
//
// It needs a running hub (go run ./cmd/hubd serve). From sdk/typescript:
//
//	npm ci
//	npm run example -- --hub 127.0.0.1:7420
//
// Flags: --hub host:port (default 127.0.0.1:7420), --token-file FILE (one
// "name token" a line; the hub's own tokens file works), --timeout 30s, -v
// (the SDK's diagnostics on stderr).

import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

import { Client, closeReason, ends, invited, isTurn, RoutingKind, sequence, textOf, type Envelope, type Handler, type Session } from "@hubd/sdk";

/** researcher opens the work with its findings. */
const researcher: Handler = () => "Findings: group commit batches the fsyncs of concurrent sends.";

/** writer drafts from what the researcher found (the trigger of its turn). */
const writer: Handler = (turn) => {
  const found = turn.text().replace(/^Findings: /, "").replace(/\.$/, "");
  return `Draft: durable writes stay fast because ${found}.`;
};

/** editor signs off, counting the turns in its view of the session. */
const editor: Handler = (turn) => `Approved after reading ${turn.view?.items.length ?? 0} turns.`;

const agents: [string, Handler][] = [
  ["researcher", researcher],
  ["writer", writer],
  ["editor", editor],
];

/** A turn as "[seq] speaker: text", with a packet's routing and context updates in brackets. */
function line(e: Envelope): string {
  let s = `[${e.seq}] ${e.from}: ${textOf(e)}`;
  const p = e.packet;
  if (!p) {
    return s;
  }
  const notes: string[] = [];
  const r = p.routing;
  switch (r?.kind) {
    case RoutingKind.Handoff:
      notes.push(`handoff ${r.tool} ${r.target}`.trim());
      break;
    case RoutingKind.Finish:
      notes.push(`finish ${r.reason}`);
      break;
    case RoutingKind.Escalate:
      notes.push("escalate");
      break;
  }
  const set = p.contextUpdates?.set ?? {};
  for (const k of Object.keys(set).sort()) {
    notes.push(`set ${k}=${JSON.stringify(set[k])}`);
  }
  for (const k of p.contextUpdates?.delete ?? []) {
    notes.push(`delete ${k}`);
  }
  if (notes.length > 0) {
    s += ` [${notes.join("; ")}]`;
  }
  return s;
}

/** "30s", "2m", "1500ms" or a number of seconds, in milliseconds. */
function duration(s: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(s);
  if (!m) {
    throw new Error(`--timeout ${s}: want a duration like 30s`);
  }
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000 }[m[2] ?? "s"]!;
}

/** Reads "name token" lines (the hub's tokens file works too). */
function readTokens(path: string): Map<string, string> {
  const tokens = new Map<string, string>();
  for (const raw of readFileSync(path, "utf8").split("\n")) {
    const fields = raw.trim().split(/\s+/);
    if (fields[0] && !fields[0].startsWith("#") && fields.length >= 2) {
      tokens.set(fields[0], fields[1]);
    }
  }
  return tokens;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      hub: { type: "string", default: "127.0.0.1:7420" },
      "token-file": { type: "string" },
      timeout: { type: "string", default: "30s" },
      v: { type: "boolean", default: false },
    },
    strict: true,
  });
  const timeout = AbortSignal.timeout(duration(values.timeout!));
  const tokens = values["token-file"] ? readTokens(values["token-file"]) : undefined;
  const log = values.v ? (l: string) => console.error(l) : undefined;

  // An agent serves every session its name is invited to, whoever opened
  // it: this run's agents serve only the session it opens, by its label.
  const labels = { example: `pipeline-${randomBytes(4).toString("hex")}` };
  const ours = (s: Session) => s.meta?.labels.example === labels.example;

  const clients: Client[] = [];
  // stop ends the serving and the following: at the timeout, or when an
  // agent's serve fails.
  const stop = new AbortController();
  const onTimeout = () => stop.abort();
  timeout.addEventListener("abort", onTimeout, { once: true });
  let failure: Error | undefined;
  try {
    for (const [name] of agents) {
      const token = tokens?.get(name);
      if (tokens && !token) {
        throw new Error(`the token file has no token for "${name}"`);
      }
      clients.push(await Client.connect(values.hub!, { name, token, log, signal: timeout }));
    }
    const runs = clients.map((c, i) =>
      c.serve(agents[i][1], { sessionFilter: ours, signal: stop.signal }).catch((err: unknown) => {
        failure ??= new Error(`${agents[i][0]}: ${err instanceof Error ? err.message : String(err)}`);
        stop.abort();
      }),
    );
    let reason: string | undefined;
    let broke: unknown;
    try {
      const opener = clients[0];
      const s = await opener.open({ graph: sequence("researcher", "writer", "editor"), participants: invited("writer", "editor"), labels, signal: stop.signal });
      for await (const e of opener.follow(s.id, 1, { signal: stop.signal })) {
        if (isTurn(e)) {
          console.log(line(e));
        }
        if (ends(e)) {
          reason = closeReason(e);
        }
      }
    } catch (err) {
      broke = err;
    } finally {
      stop.abort();
      await Promise.all(runs);
    }
    // An agent that could not serve says why better than the cancelled
    // call it left behind.
    if (failure || broke) {
      throw failure ?? broke;
    }
    if (reason === undefined) {
      throw new Error(`the session did not end within ${values.timeout}`);
    }
    console.log(`closed: ${reason}`);
  } finally {
    timeout.removeEventListener("abort", onTimeout);
    clients.forEach((c) => c.close());
  }
}

main().catch((err: unknown) => {
  console.error(`error: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
