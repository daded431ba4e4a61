#!/usr/bin/env bash
# The release, installed as a user would install it: builds linux/amd64's
# artifacts with scripts/release.sh, checks SHA256SUMS, and installs each
# into a fresh place outside the repository:
#   - the archive: its hubd prints the version and a real commit, serves a
#     hub (development mode, a free loopback port) and probes it (hubd
#     health); its hubload prints the same version;
#   - the wheel: into a new virtual environment that sees Debian's
#     python3-grpcio and python3-protobuf (--system-site-packages, no
#     package index), where a Python agent takes a turn against that hub;
#   - the npm tarball: into a new npm project (its dependencies from the
#     npm registry), where a script takes a turn against that hub.
# .ci/run runs it after the SDKs' own CI (which leaves sdk/typescript's
# node_modules for the TypeScript build to reuse). Every step is bounded.
#
# usage: scripts/release_test.sh   ($PYTHON: the interpreter, default
#                                   /usr/bin/python3, Debian's)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
export PYTHON="${PYTHON:-/usr/bin/python3}"
export PYTHONDONTWRITEBYTECODE=1

step() { printf -- '-- %s\n' "$*"; }
fail() { echo "release_test: $*" >&2; exit 1; }

version=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' sdk/typescript/package.json)
[ -n "$version" ] || fail "no version in sdk/typescript/package.json"
step "scripts/release.sh --platforms linux/amd64 $version"
timeout 600 scripts/release.sh --platforms linux/amd64 "$version"
dist="$PWD/dist/$version"

tmp=$(mktemp -d)
hub_pid=""
cleanup() {
  if [ -n "$hub_pid" ]; then kill "$hub_pid" 2>/dev/null || true; wait "$hub_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

step "SHA256SUMS"
(cd "$dist" && sha256sum --quiet -c SHA256SUMS)

step "the archive: hubd version, hubload --version"
mkdir "$tmp/bin"
tar -C "$tmp/bin" -xzf "$dist/hubd_${version}_linux_amd64.tar.gz"
bin="$tmp/bin/hubd_${version}_linux_amd64"
for f in hubd hubload LICENSE README THIRD_PARTY_LICENSES; do
  [ -f "$bin/$f" ] || fail "the archive lacks $f"
done
for cmd in "hubd version" "hubload --version"; do
  out=$("$bin"/$cmd)
  echo "$out" | sed 's/^/   /'
  grep -qx "module:  github.com/hubd/hubd v$version" <<<"$out" || fail "$cmd does not print v$version"
  grep -Eqx 'commit:  [0-9a-f]{40}( \(modified\))?' <<<"$out" || fail "$cmd does not print a commit"
done

step "the archive: hubd serves, hubd health says SERVING"
(cd "$tmp" && exec "$bin/hubd" serve --listen 127.0.0.1:0 --http off --data "$tmp/data" --log-format json 2>"$tmp/hub.log") &
hub_pid=$!
addr=""
for _ in $(seq 100); do
  addr=$(sed -n 's/.*"message":"hubd listening".*"listen":"\([^"]*\)".*/\1/p; s/.*"listen":"\([^"]*\)".*"message":"hubd listening".*/\1/p' "$tmp/hub.log" | head -1)
  [ -n "$addr" ] && break
  kill -0 "$hub_pid" 2>/dev/null || { cat "$tmp/hub.log" >&2; fail "hubd exited"; }
  sleep 0.2
done
[ -n "$addr" ] || { cat "$tmp/hub.log" >&2; fail "hubd did not say where it listens within 20 s"; }
"$bin/hubd" health --hub "$addr"

step "the wheel: a new virtual environment (--system-site-packages), an agent takes a turn"
"$PYTHON" -m venv --system-site-packages "$tmp/venv"
timeout 120 "$tmp/venv/bin/python" -m pip install -q --no-index "$dist/hubd-$version-py3-none-any.whl"
cat > "$tmp/turn.py" <<'EOF'
"""Two agents in one process: py-me opens a two-step workflow with
py-echo, says hello, and py-echo, served, answers."""
import sys
import threading

import hubd

addr, venv = sys.argv[1], sys.argv[2]
if not hubd.__file__.startswith(venv):
    sys.exit(f"hubd imported from {hubd.__file__}, not from the virtual environment {venv}")
stop = threading.Event()
said = []
with hubd.Client(addr, name="py-echo") as echo, hubd.Client(addr, name="py-me") as me:
    serving = threading.Thread(target=echo.serve, args=(lambda turn: "echo: " + turn.text,),
                               kwargs={"stop": stop, "handle_signals": False})
    serving.start()
    try:
        s = me.open_workflow(hubd.sequence("py-me", "py-echo"), "py-echo")
        for e in me.follow(s.id, timeout=30):
            if hubd.is_turn(e):
                said.append(f"{hubd.sender(e)}: {hubd.text_of(e)}")
            elif e.type == hubd.EVENT_OPENED:
                me.send_text(s.id, "hello")
        reason = hubd.close_reason(e)
    finally:
        stop.set()
        serving.join()
print("\n".join(said))
print("closed:", reason)
if said != ["py-me: hello", "py-echo: echo: hello"] or reason != "sequence_complete":
    sys.exit("not the turn expected")
EOF
(cd "$tmp" && timeout 60 "$tmp/venv/bin/python" turn.py "$addr" "$tmp/venv") | sed 's/^/   /'

step "the npm tarball: a new npm project, a script takes a turn"
mkdir "$tmp/project"
(
  cd "$tmp/project"
  npm init -y > /dev/null
  timeout 180 npm install --no-audit --no-fund --silent "$dist/hubd-sdk-$version.tgz"
  cat > turn.mjs <<'EOF'
// Two agents: js-me opens a two-step workflow with js-echo, says hello,
// and js-echo, served, answers.
import { Client, sequence, isTurn, ends, textOf, closeReason } from "@hubd/sdk";

const addr = process.argv[2];
const me = await Client.connect(addr, { name: "js-me" });
const echo = await Client.connect(addr, { name: "js-echo" });
const stop = new AbortController();
const serving = [
  me.serve(() => "hello", { signal: stop.signal }),
  echo.serve((turn) => `echo: ${turn.text()}`, { signal: stop.signal }),
];
const said = [];
let reason = "";
const s = await me.openWorkflow(sequence("js-me", "js-echo"), ["js-echo"]);
for await (const e of me.follow(s.id, 1, { timeoutMs: 30000 })) {
  if (isTurn(e)) said.push(`${e.from}: ${textOf(e)}`);
  if (ends(e)) reason = closeReason(e);
}
stop.abort();
await Promise.all(serving);
me.close();
echo.close();
console.log(said.join("\n"));
console.log("closed:", reason);
if (said.join("|") !== "js-me: hello|js-echo: echo: hello" || reason !== "sequence_complete") {
  console.error("not the turn expected");
  process.exit(1);
}
EOF
  timeout 60 node turn.mjs "$addr"
) | sed 's/^/   /'

step "the hub stops on SIGTERM"
kill -TERM "$hub_pid"
wait "$hub_pid" || { cat "$tmp/hub.log" >&2; fail "hubd exited $? on SIGTERM"; }
hub_pid=""
echo "release_test: ok"
