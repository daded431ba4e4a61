// Authentication against the real hub: tokens (a right one and a wrong
// one), TLS with a token, and mutual TLS naming the agent by its
// certificate.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { status } from "@grpc/grpc-js";
import {
  autoAccepted,
  Client,
  isTurn,
  OutOfTurnError,
  PermissionDeniedError,
  sequence,
  textOf,
  UnauthenticatedError,
  type ClientOptions,
} from "@hubd/sdk";

import { Hubd, tempDir, within } from "./hub.js";

const tokens = `
alice alice-token-0123456789
bob   bob-token-0123456789
`;

function isUnauthenticated(err: unknown): true {
  assert.ok(err instanceof UnauthenticatedError, `got ${String(err)}`);
  assert.equal(err.code, status.UNAUTHENTICATED);
  return true;
}

describe("tokens", { timeout: 30_000 }, () => {
  let hub: Hubd;
  before(async () => {
    hub = await Hubd.start({ tokens });
  });
  after(() => hub.close());

  test("a token is its agent on every call, and serves", async () => {
    const alice = await Client.connect(hub.addr, { token: "alice-token-0123456789" });
    const bob = await Client.connect(hub.addr, { name: "bob", token: "bob-token-0123456789" });
    // Bob serves by token alone: he answers every invite and turn he is given.
    const bobByToken = await Client.connect(hub.addr, { token: "bob-token-0123456789" });
    const stop = new AbortController();
    const serving = bobByToken.serve((t) => `bob read: ${t.text()}`, { signal: stop.signal, view: null });
    try {
      assert.equal(alice.name, "");
      const s = await alice.open({ graph: sequence("alice", "bob"), participants: autoAccepted("bob") });
      assert.equal(s.meta?.creator, "alice");
      await assert.rejects(bob.sendText(s.id, "me first"), (err) => {
        assert.ok(err instanceof OutOfTurnError);
        assert.match(err.detail, /got "bob"/);
        return true;
      });
      await assert.rejects(bob.closeSession(s.id), PermissionDeniedError);
      await alice.closeSession(s.id);

      const served = await alice.openWorkflow(sequence("alice", "bob"), ["bob"]);
      for await (const e of alice.follow(served.id)) {
        if (e.type === "session_opened") {
          await alice.sendText(served.id, "the brief");
        }
        if (isTurn(e) && e.from === "bob") {
          assert.equal(textOf(e), "bob read: the brief");
        }
      }
      assert.equal((await alice.getSession(served.id)).closeReason, "sequence_complete");
    } finally {
      stop.abort();
      await serving;
      [alice, bob, bobByToken].forEach((c) => c.close());
    }
  });

  test("a wrong token, or a name alone, is UNAUTHENTICATED: calls, streams and serve", async () => {
    const alice = await Client.connect(hub.addr, { token: "alice-token-0123456789" });
    const s = await alice.open({ graph: sequence("alice", "bob"), participants: autoAccepted("bob") });
    const cases: [string, ClientOptions][] = [
      ["wrong token", { token: "mallory-token-0123456789" }],
      ["dev name", { name: "alice" }],
    ];
    try {
      for (const [name, opts] of cases) {
        const c = await Client.connect(hub.addr, { timeoutMs: 5000, ...opts });
        try {
          // The stream fails while nobody reads it; its reader still gets the error.
          const sub = c.subscribe();
          await assert.rejects(c.getSession(s.id), isUnauthenticated, name);
          await assert.rejects(c.pendingTurns(), isUnauthenticated, name);
          await assert.rejects(sub.recv(), isUnauthenticated, `${name}: subscribe`);
          // serve gives up at once: reconnecting does not cure it.
          await assert.rejects(within(c.serve(() => assert.fail("called")), 10_000, "serve to give up"), isUnauthenticated, `${name}: serve`);
        } finally {
          c.close();
        }
      }
    } finally {
      alice.close();
    }
  });
});

/** A throwaway CA with a server certificate for 127.0.0.1 and client certificates, made with openssl. */
class PKI {
  readonly dir = tempDir("hubd-ts-pki-");
  constructor() {
    this.openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=test ca", "-days", "1"]);
    this.issue("server", "hubd", "serverAuth");
  }

  /** The path of a file of the PKI. */
  path(name: string): string {
    return join(this.dir, name);
  }

  /** The content of a file of the PKI. */
  read(name: string): Buffer {
    return readFileSync(this.path(name));
  }

  /** Issues name.pem and name.key for common name cn, signed by the CA. */
  issue(name: string, cn: string, usage: "serverAuth" | "clientAuth"): void {
    writeFileSync(this.path(`${name}.ext`), `subjectAltName=IP:127.0.0.1\nextendedKeyUsage=${usage}\nkeyUsage=digitalSignature\n`);
    this.openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${cn}`]);
    this.openssl(["x509", "-req", "-in", `${name}.csr`, "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", `${name}.pem`, "-days", "1", "-extfile", `${name}.ext`]);
  }

  private openssl(args: string[]): void {
    execFileSync("openssl", args, { cwd: this.dir, stdio: "ignore" });
  }
}

describe("TLS", { timeout: 30_000 }, () => {
  let pki: PKI;
  before(() => {
    pki = new PKI();
    pki.issue("alice", "alice", "clientAuth");
  });

  test("a token over TLS", async () => {
    const hub = await Hubd.start({ tokens, args: ["--tls-cert", pki.path("server.pem"), "--tls-key", pki.path("server.key")] });
    try {
      const alice = await Client.connect(hub.addr, { token: "alice-token-0123456789", tls: { ca: pki.read("ca.pem") }, timeoutMs: 5000 });
      const s = await alice.open({ graph: sequence("alice", "bob"), participants: autoAccepted("bob") });
      assert.equal(s.meta?.creator, "alice");
      alice.close();
      // Plaintext to a TLS hub never gets ready.
      await assert.rejects(Client.connect(hub.addr, { token: "alice-token-0123456789", timeoutMs: 300 }), /not ready/);
    } finally {
      await hub.close();
    }
  });

  test("mutual TLS: the client certificate names the agent; without one the handshake fails", async () => {
    const hub = await Hubd.start({
      args: ["--tls-cert", pki.path("server.pem"), "--tls-key", pki.path("server.key"), "--client-ca", pki.path("ca.pem")],
    });
    try {
      const alice = await Client.connect(hub.addr, {
        tls: { ca: pki.read("ca.pem"), cert: pki.read("alice.pem"), key: pki.read("alice.key") },
        timeoutMs: 5000,
      });
      assert.equal(alice.name, "");
      const s = await alice.open({ graph: sequence("alice", "bob"), participants: autoAccepted("bob") });
      assert.equal(s.meta?.creator, "alice");
      alice.close();
      await assert.rejects(Client.connect(hub.addr, { name: "mallory", tls: { ca: pki.read("ca.pem") }, timeoutMs: 300 }), /not ready/);
    } finally {
      await hub.close();
    }
  });
});
