// The TypeScript specialist of the three-language triage session: it serves
// the agent "tech", answering each of its turns with its fix as a packet
// that records it in the session's context; the graph then hands the turn
// back to the router (Python), as examples/triage's tech does in Go.
//
// Built and run from sdk/typescript (after npm ci):
//
//     npx tsc -p tsconfig.json && npx tsc -p tsconfig.example.json
//     node build/examples/threelang/tech.js --hub 127.0.0.1:7420 [--run threelang]
//
// It serves the sessions labelled example=RUN (the router's --run) until
// interrupted (SIGINT or SIGTERM); examples/threelang/run.sh starts it with
// the router and the Go specialist and stops all three.

import { Client, newPacket } from "@hubd/sdk";

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const hub = flag("hub", "127.0.0.1:7420");
const name = flag("name", "tech");
const run = flag("run", "threelang");
const answer = "Password reset link sent; the login works again.";

const stop = new AbortController();
process.once("SIGINT", () => stop.abort());
process.once("SIGTERM", () => stop.abort());

const client = await Client.connect(hub, { name, timeoutMs: 10_000, signal: stop.signal }).catch((err: unknown) => {
  if (stop.signal.aborted) {
    process.exit(0); // interrupted while connecting: a clean stop
  }
  throw err;
});
console.error(`${name}: serving on ${hub}`);
try {
  await client.serve(() => newPacket(answer).set(`fixed_by_${name}`, true), {
    // An agent serves every session its name is invited to, whoever opened
    // it: this one serves only the run's, by their label.
    sessionFilter: (s) => s.meta?.labels.example === run,
    signal: stop.signal,
  });
} finally {
  client.close();
}
