#!/usr/bin/env bash
# bench/figures.sh FIGURE [FLAGS...]: the one command behind each figure
# docs/PERFORMANCE.md publishes. Run it from anywhere in the repository;
# it prints each command it runs (lines starting with "+") before its
# output.
#
#   table [TABLE FLAGS]       the targets: bench/table against a fresh hubd
#                             (--duration 4s unless given; --floor-apart
#                             serves the floors from a process of their own)
#   idle [HUBLOAD FLAGS]      10,000 idle agents on 100 shared connections
#                             against a fresh hubd (--conns 0: a connection each)
#   delegation [HUBLOAD FLAGS] a delegation round trip beside a turn, against a
#                             fresh hubd (--sessions 1 unless given)
#   accept                    the hub in process: envelopes a second and CPU
#                             per envelope, no gRPC (go test ./hub)
#   hydrate                   a start on 1M envelopes in 10k sessions (go test ./hub)
#   fsync                     the log alone: synced group commits, 1, 16 and
#                             128 appenders (go test ./wal)
#   ended                     memory after 50,000 sessions ended, and a start
#                             beside 20,000 ended (go test ./hub)
#   idle-sessions             an idle session's and an idle call tree's memory,
#                             and a tree watch (go test ./hub)
#   shape                     the code's shape: references between hub's files,
#                             Hub's fields, lines per package (go run ./bench/shape)
#   walk [BENCHTIME]          the files, packages and goroutines a turn passes
#                             through, from a profile (bench/walk.sh)
#
# A fresh hubd is the repository's, built into a temporary directory, in
# development mode on free loopback ports, with its data directory (fsync
# on) under $BENCH_DATA (default: the system's temporary directory; put it
# on the disk you measure), and stopped after the figure. The floors' logs
# are made there too.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 1 ] || usage
figure=$1
shift

tmp=$(mktemp -d)
hub_pid=""
cleanup() {
  if [ -n "$hub_pid" ]; then
    kill "$hub_pid" 2>/dev/null || true
    wait "$hub_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

run() { echo "+ $*" >&2; "$@"; }

# freeport prints a loopback port no one listens on.
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# freshhub builds hubd and hubload, starts a hub on a new data directory
# and waits until it takes writes; it sets HUB, HUB_HTTP, hub_pid, data.
freshhub() {
  run go build -o "$tmp/hubd" ./cmd/hubd
  run go build -o "$tmp/hubload" ./cmd/hubload
  data=$(mktemp -d "${BENCH_DATA:-${TMPDIR:-/tmp}}/bench-hubd-XXXXXX")
  HUB=127.0.0.1:$(freeport)
  HUB_HTTP=127.0.0.1:$(freeport)
  echo "+ hubd serve --listen $HUB --http $HUB_HTTP --data $data --log-level warn &" >&2
  "$tmp/hubd" serve --listen "$HUB" --http "$HUB_HTTP" --data "$data" --log-level warn &
  hub_pid=$!
  for _ in $(seq 100); do
    if "$tmp/hubd" health --hub "$HUB" --timeout 1s >/dev/null 2>&1 && curl -sf "http://$HUB_HTTP/metrics" >/dev/null; then
      return
    fi
    sleep 0.1
  done
  echo "figures.sh: the hub at $HUB did not start" >&2
  exit 1
}

# stophub stops the hub and removes its data directory.
stophub() {
  kill "$hub_pid"
  wait "$hub_pid" || true
  hub_pid=""
  rm -rf "$data"
}

case "$figure" in
table)
  run go build -o "$tmp/table" ./bench/table
  freshhub
  run "$tmp/table" --hub "$HUB" --hub-pid "$hub_pid" --hub-http "$HUB_HTTP" \
    --floor-dir "${BENCH_DATA:-${TMPDIR:-/tmp}}" --duration 4s "$@"
  stophub
  ;;
walk)
  run bench/walk.sh "$@"
  ;;
idle)
  freshhub
  run "$tmp/hubload" --hub "$HUB" --hub-pid "$hub_pid" --hub-http "$HUB_HTTP" --idle 10000 --conns 100 --duration 1s "$@"
  stophub
  ;;
delegation)
  freshhub
  run "$tmp/hubload" --hub "$HUB" --workload delegation --sessions 1 --duration 4s "$@"
  stophub
  ;;
accept)
  run go test -run '^$' -bench BenchmarkAccept -benchtime 20000x ./hub
  ;;
hydrate)
  run go test -run '^$' -bench 'BenchmarkHydrate$' -benchtime 1x ./hub
  ;;
fsync)
  run go test -run '^$' -bench 'BenchmarkAppend/sync=on' -benchtime 20000x ./wal
  ;;
ended)
  run go test -run '^$' -bench 'BenchmarkEndedMemory|BenchmarkStartupEnded' -benchtime 1x ./hub
  ;;
idle-sessions)
  run go test -run '^$' -bench 'BenchmarkIdleSessions|BenchmarkIdleTrees|BenchmarkTreeWatch' -benchtime 1x ./hub
  ;;
shape)
  run go run ./bench/shape "$@"
  ;;
*)
  usage
  ;;
esac
