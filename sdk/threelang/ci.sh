#!/usr/bin/env bash
# One session, three languages, run by .ci/run (its loop over sdk/*/ci.sh)
# on a fresh machine: installs what the Python and TypeScript agents need
# when it is missing (Debian's python3-grpcio and python3-protobuf; npm ci
# in sdk/typescript, whose own ci.sh runs after this one), then runs
# cmd/hubd's TestE2EThreeLanguages, which must not skip here: the triage
# session of examples/triage with a Python router, a Go and a TypeScript
# specialist against one hubd binary, compared with the all-Go run.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/usr/local/go/bin:$PATH"
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"

step() { printf -- '-- %s\n' "$*"; }

missing=()
for pkg in python3-grpcio python3-protobuf; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  step "apt-get install ${missing[*]}"
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if ! command -v node >/dev/null; then
  echo "sdk/threelang: node is missing: install Node.js 20 or later" >&2
  exit 1
fi
if [ ! -x sdk/typescript/node_modules/.bin/tsc ]; then
  step "npm ci (sdk/typescript)"
  (cd sdk/typescript && npm ci --no-audit --no-fund)
fi

step "go test ./cmd/hubd -run TestE2EThreeLanguages (Python router, Go and TypeScript specialists; run.sh stops all three)"
HUBD_THREELANG=require go test ./cmd/hubd -run '^TestE2EThreeLanguages(Stop)?$' -count=1 -v
