#!/usr/bin/env bash
# CI of the TypeScript SDK, run by .ci/run on a fresh machine: installs what
# is missing (Node 20 is expected on the machine; protoc and openssl come
# from Debian), checks that the committed generated code is what
# `npm run generate` writes, then `npm ci` and `npm test` (which builds
# hubd from the repository and tests against it).
set -euo pipefail
cd "$(dirname "$0")"
export PATH="/usr/local/go/bin:$PATH"

apt_install() {
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@"
}

if ! command -v node >/dev/null; then
  echo "sdk/typescript: node is missing: install Node.js 20 or later" >&2
  exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "sdk/typescript: Node.js $(node --version) is too old: 20 or later" >&2
  exit 1
fi
missing=()
command -v protoc >/dev/null || missing+=(protobuf-compiler)
# The well-known types hub.proto imports (google/protobuf/*.proto).
[ -f /usr/include/google/protobuf/timestamp.proto ] || missing+=(libprotobuf-dev)
command -v openssl >/dev/null || missing+=(openssl)
if [ ${#missing[@]} -gt 0 ]; then
  apt_install "${missing[@]}"
fi
echo "node $(node --version), npm $(npm --version), $(protoc --version)"

npm ci --no-audit --no-fund

# The committed generated code is what the generator writes.
saved=$(mktemp -d)
trap 'rm -rf "$saved"' EXIT
cp -R src/gen "$saved/gen"
npm run --silent generate
if ! diff -ru "$saved/gen" src/gen; then
  echo "sdk/typescript: src/gen is not what 'npm run generate' writes from hubpb/*.proto: run it and commit the result" >&2
  exit 1
fi

npm test
