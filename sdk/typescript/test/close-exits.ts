// Run by connect.test.ts as its own process: two clients on the hub at
// argv[2] take turns over the transport argv[3] (one serving), then close
// without stopping the serve. The process must then exit by itself: no
// stream, timer or socket of the SDK keeps node running.

import { autoAccepted, Client, sequence, type TransportName } from "@hubd/sdk";

const [addr, transport] = process.argv.slice(2) as [string, TransportName];
const alice = await Client.connect(addr, { name: "alice", timeoutMs: 5000, transport });
const bob = await Client.connect(addr, { name: "bob", timeoutMs: 5000, transport });
let answered!: () => void;
const turn = new Promise<void>((r) => (answered = r));
const serving = bob.serve(() => {
  answered();
  return "done";
});
const s = await alice.open({ graph: sequence("alice", "bob"), participants: autoAccepted("bob") });
await alice.sendText(s.id, "over to you");
await turn;
for await (const e of alice.follow(s.id)) {
  if (e.type === "session_closed") {
    break;
  }
}
alice.close();
bob.close();
await serving; // serve resolves once its client is closed
console.log(`served and closed over ${alice.transport}`);
