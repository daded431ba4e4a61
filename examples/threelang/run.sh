#!/usr/bin/env bash
# Runs the three-language triage session against a running hub: the Go
# specialist (billing) and the TypeScript one (tech) in the background, then
# the Python router, which opens the session and prints it. When the router
# is done, or on Ctrl-C or SIGTERM, it stops all three.
#
#   examples/threelang/run.sh [--hub host:port] [--run NAME]
#
# --hub defaults to 127.0.0.1:7420. The session is labelled example=NAME
# (default: threelang-<random>), and the three agents serve only the
# sessions with that label. $PYTHON is the Python with grpcio and protobuf
# (default python3; Debian's: /usr/bin/python3). It builds the Go
# specialist and the TypeScript one first (npm ci in sdk/typescript when
# its node_modules is missing).
set -euo pipefail
cd "$(dirname "$0")/../.." # the repository root

hub=127.0.0.1:7420
run="threelang-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
while [ $# -gt 0 ]; do
  case "$1" in
    --hub) hub="${2:?--hub needs host:port}"; shift 2 ;;
    --run) run="${2:?--run needs a name}"; shift 2 ;;
    *) echo "usage: $0 [--hub host:port] [--run NAME]" >&2; exit 2 ;;
  esac
done

tmp="$(mktemp -d)"
pids=()
# stop ends every agent still running (SIGTERM: each stops cleanly) and
# waits for them. The agents are started as programs, not through `go run`
# or `npm run`, whose own process would die and leave the agent running.
stop() {
  trap - EXIT INT TERM
  if [ ${#pids[@]} -gt 0 ]; then
    kill -TERM "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap stop EXIT
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM

go build -o "$tmp/billing" ./examples/threelang/billing
if [ ! -x sdk/typescript/node_modules/.bin/tsc ]; then
  (cd sdk/typescript && npm ci --no-audit --no-fund >&2)
fi
(cd sdk/typescript && node_modules/.bin/tsc -p tsconfig.json && node_modules/.bin/tsc -p tsconfig.example.json)

"$tmp/billing" --hub "$hub" --run "$run" &
pids+=($!)
node sdk/typescript/build/examples/threelang/tech.js --hub "$hub" --run "$run" &
pids+=($!)
# The router runs in the background too, so that a signal is handled at
# once, not once it returns.
"${PYTHON:-python3}" examples/threelang/router.py --hub "$hub" --run "$run" &
router=$!
pids+=("$router")
status=0
wait "$router" || status=$?
exit "$status"
