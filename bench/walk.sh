#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# walk.sh: the walk of a turn through hubd's code. It profiles
# BenchmarkTurn (sdk/go: an agent's reply sent by agentsdk's Serve,
# accepted, folded and committed by the hub, delivered to the next
# speaker's Serve, in one process) and lists, from the sampled stacks
# (the hub's start-up left out), the files and packages of this repository
# a turn passes through, and the goroutines it runs on: each a place
# where the turn is handed from one goroutine to the next.
#
# Usage: bench/walk.sh [benchtime]   (default 3s; run from the repository)
set -euo pipefail

root=$(git rev-parse --show-toplevel)
cd "$root"
benchtime=${1:-3s}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go test -run '^$' -bench '^BenchmarkTurn$' -benchtime "$benchtime" \
	-cpuprofile "$tmp/cpu.out" -o "$tmp/sdkgo.test" ./sdk/go | grep '^BenchmarkTurn'
go tool pprof -traces -lines "$tmp/sdkgo.test" "$tmp/cpu.out" 2>/dev/null >"$tmp/traces"

awk -v root="$root/" -v out="$tmp" '
function flush(   i, f, file, last) {
	if (n > 0 && !skip) {
		last = ""
		for (i = 1; i <= n; i++) {
			f = frames[i]
			if (index(f, " " root) == 0) continue
			file = substr(f, index(f, " " root) + length(root) + 1)
			sub(/:[0-9]+.*$/, "", file)
			if (file ~ /_test\.go$/) continue
			files[file]++
			last = f
		}
		# The deepest frame of the repository in a stack that starts in
		# the repository is where a goroutine of the turn begins.
		if (last != "" && frames[n] == last) {
			split(last, parts, " ")
			roots[parts[1]]++
		}
	}
	n = 0; skip = 0
}
/^-----------\+/ { flush(); next }
{
	line = $0
	sub(/^ *[0-9.]+(ms|s|us) +/, "", line)
	sub(/^ +/, "", line)
	if (line == "") next
	if (line ~ /hubtest\.Start|internal\/server\.start|\(\*Log\)\.Shutdown|\(\*Hub\)\.Close|BenchmarkTurn\.func|Client\)\.Open|Client\)\.Follow/) skip = 1
	frames[++n] = line
}
END {
	flush()
	for (f in files) {
		print f > (out "/files")
		p = f; sub(/\/[^\/]+$/, "", p); pkgs[p] = 1
	}
	for (p in pkgs) print p > (out "/pkgs")
	for (r in roots) print r > (out "/roots")
}' "$tmp/traces"

echo "files of this repository a turn passes through: $(wc -l <"$tmp/files")"
sort "$tmp/files" | sed 's/^/  /'
echo "packages: $(wc -l <"$tmp/pkgs")"
sort "$tmp/pkgs" | sed 's/^/  /'
echo "goroutines a turn runs on (where each starts): $(wc -l <"$tmp/roots")"
sort "$tmp/roots" | sed 's/^/  /'
