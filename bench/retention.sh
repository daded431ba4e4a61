#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# retention.sh: what purging costs and gives back (docs/PERFORMANCE.md,
# "Retention and purge"). It fills a data directory with N ended sessions
# (bench/retention, in process; every 10th labelled keep=yes), then:
#
#   1. starts hubd on it (start-up time before), runs hubload for
#      $LOAD seconds (the send path's p99 with nothing purged), stops it;
#   2. starts hubd with --retain-ended 1s, a policy keeping keep=yes for
#      ever, a sweep every 2s and no rate limit (--retention-rate
#      1000000: the sweep only rests as long as each batch took): it
#      archives and purges 90 % of the sessions (purge throughput, from
#      the hub's log) and has badger give the space back;
#   3. stops it, measures the log's disk (du, the archive apart), and
#      starts it once more (start-up time after).
# Part B runs hubload for $LOAD seconds alone, then for $PURGE_LOAD
# seconds beside the sweep at its default rate (or PURGE_RATE): hubload's
# p99 is the send path's while purging.
#
# Usage: bench/retention.sh [N]   (default 100000; run from the repository)
# PARTS=A or PARTS=B runs one part; LOAD and PURGE_LOAD set hubload's
# seconds (15 and 60); RATE paces hubload (--rate, sends a second in all;
# default unpaced, the hub saturated), so that part B compares the send
# path's latency below saturation, where the purge has idle CPU to use.
# Data goes under $BENCH_DATA (default: the system's temporary directory).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000}
load=${LOAD:-15}
purge_load=${PURGE_LOAD:-60}
rate=${RATE:-0}
purge_rate=${PURGE_RATE:-100}

tmp=$(mktemp -d)
hub_pid=""
cleanup() {
  if [ -n "$hub_pid" ]; then kill "$hub_pid" 2>/dev/null || true; wait "$hub_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
run() { echo "+ $*" >&2; "$@"; }
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
logdu() { du -sb --exclude=archive "$data" | cut -f1; }

run go build -o "$tmp/hubd" ./cmd/hubd
run go build -o "$tmp/hubload" ./cmd/hubload
(cd bench && run go build -o "$tmp/fill" ./retention)
data=$(mktemp -d "${BENCH_DATA:-${TMPDIR:-/tmp}}/bench-retention-XXXXXX")
run "$tmp/fill" --data "$data" --sessions "$n"
echo "policy: keep=yes forever" >&2
echo "keep=yes forever" >"$tmp/policy"

# starthub FLAGS...: starts hubd on $data and sets startup to the
# seconds until it takes writes.
starthub() {
  HUB=127.0.0.1:$(freeport)
  local t0; t0=$(now)
  echo "+ hubd serve --listen $HUB --data $data --http off $* &" >&2
  "$tmp/hubd" serve --listen "$HUB" --data "$data" --http off --log-format json "$@" 2>"$tmp/hub.log" &
  hub_pid=$!
  for _ in $(seq 600); do
    if "$tmp/hubd" health --hub "$HUB" --timeout 1s >/dev/null 2>&1; then
      startup=$(echo "$(now) - $t0" | bc)
      return
    fi
    sleep 0.05
  done
  echo "retention.sh: the hub did not start" >&2; cat "$tmp/hub.log" >&2; exit 1
}
stophub() { kill "$hub_pid"; wait "$hub_pid" || true; hub_pid=""; }

parts=${PARTS:-AB}
before="" after="" archive="" start_before="" start_after=""
: >"$tmp/purge.log"; : >"$tmp/base.txt"; : >"$tmp/purge.txt"
if [[ $parts == *A* ]]; then
# Part A: the purge alone. Disk, throughput, start-up.
before=$(logdu)
starthub
start_before=$startup
stophub
starthub --retain-ended 1s --retention-sweep 2s --retention-policy "$tmp/policy" --retention-rate 1000000
for _ in $(seq 2400); do
  grep -q 'gave the space of purged sessions back' "$tmp/hub.log" && break
  sleep 0.5
done
grep -h 'retention:' "$tmp/hub.log" >&2 || true
cp "$tmp/hub.log" "$tmp/purge.log"
stophub
after=$(logdu)
archive=$(du -sb "$data/archive" | cut -f1)
starthub
start_after=$startup
stophub
echo "+ ls -l $data" >&2
ls -l "$data" >&2
rm -rf "$data"
fi

if [[ $parts == *B* ]]; then
# Part B: the send path beside a purge, against the same path alone.
data=$(mktemp -d "${BENCH_DATA:-${TMPDIR:-/tmp}}/bench-retention-XXXXXX")
run "$tmp/fill" --data "$data" --sessions "$n" >/dev/null
starthub
run "$tmp/hubload" --hub "$HUB" --hub-pid "$hub_pid" --duration "${load}s" --agents 16 --rate "$rate" | tee "$tmp/base.txt"
stophub
starthub --retain-ended 1s --retention-sweep 2s --retention-policy "$tmp/policy" --retention-rate "$purge_rate"
run "$tmp/hubload" --hub "$HUB" --hub-pid "$hub_pid" --warmup 2s --duration "${purge_load}s" --agents 16 --rate "$rate" | tee "$tmp/purge.txt"
grep -h 'retention:' "$tmp/hub.log" >&2 || true
stophub
rm -rf "$data"
fi

# The sweep's and the reclaim's log lines: part A's, else part B's.
logs="$tmp/hub.log"
if [ -s "$tmp/purge.log" ]; then logs="$tmp/purge.log"; fi
sweepline=$(grep -h 'retention: purged' "$logs" 2>/dev/null | head -1 || true)
reclaimline=$(grep -h 'gave the space' "$logs" 2>/dev/null | head -1 || true)
sweep="" reclaim=""
if [ -n "$sweepline" ]; then
  sweep=$(python3 -c 'import json,sys; l=json.loads(sys.argv[1]); print("%d sessions in %s, %.0f sessions/s" % (l["sessions"], l["took"], l["per_second"]))' "$sweepline")
fi
if [ -n "$reclaimline" ]; then
  reclaim=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["took"])' "$reclaimline")
fi
echo
echo "sessions:            $n ended, every 10th kept"
echo "log on disk before:  $before bytes (du -sb of the data directory, the archive apart)"
echo "log on disk after:   $after bytes (purged, space reclaimed, hub stopped)"
echo "archive written:     $archive bytes"
echo "first sweep:         $sweep"
echo "reclaim (flatten):   $reclaim"
echo "start-up before:     ${start_before}s"
echo "start-up after:      ${start_after}s"
echo "send alone:          $(grep -o 'send→ack[^;]*' "$tmp/base.txt" | head -1)"
echo "send while purging:  $(grep -o 'send→ack[^;]*' "$tmp/purge.txt" | head -1)"
