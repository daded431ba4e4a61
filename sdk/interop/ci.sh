#!/usr/bin/env bash
# Interoperability, run by .ci/run on a fresh machine: hubd against the
# official SDKs of the protocols it speaks, written by others (the MCP
# TypeScript SDK's client, the A2A JavaScript SDK's client). Node 20 is expected on the machine; npm ci
# installs the pinned SDKs; hubd is built from the repository.
set -euo pipefail
cd "$(dirname "$0")"
export PATH="/usr/local/go/bin:$PATH"
if ! command -v node >/dev/null; then
  echo "sdk/interop: node is missing: install Node.js 20 or later" >&2
  exit 1
fi
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd ../.. && go build -o "$bin/hubd" ./cmd/hubd)
npm ci --no-audit --no-fund --loglevel=error
HUBD="$bin/hubd" timeout 300 npm test
