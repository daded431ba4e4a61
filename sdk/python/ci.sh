#!/usr/bin/env bash
# CI of the Python SDK, run by .ci/run (as root, on a fresh Debian machine):
# installs what the tests need when it is missing, checks that the
# committed stubs are what scripts/generate.sh writes from hubpb/*.proto,
# and runs the tests with Debian's python3 against the real hubd (built
# from this repository by the tests' fixture).
set -euo pipefail
cd "$(dirname "$0")"
export PATH="/usr/local/go/bin:$PATH"
export PYTHONDONTWRITEBYTECODE=1

step() { printf -- '-- %s\n' "$*"; }

missing=()
# libprotobuf-dev holds the well-known types (google/protobuf/*.proto) that
# hub.proto imports: protobuf-compiler only recommends it.
for pkg in python3-grpcio python3-protobuf python3-pytest protobuf-compiler protobuf-compiler-grpc libprotobuf-dev openssl; do
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
/usr/bin/python3 -c 'import grpc, google.protobuf, sys; print("python", sys.version.split()[0], "grpcio", grpc.__version__, "protobuf", google.protobuf.__version__)'

step "the committed stubs are what scripts/generate.sh writes"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
scripts/generate.sh "$tmp"
if ! diff -r -x '__init__.py' -x '__pycache__' hubd/_pb "$tmp"; then
  echo "hubd/_pb is stale: run sdk/python/scripts/generate.sh and commit the result"
  exit 1
fi

if /usr/bin/python3 -m mypy --version >/dev/null 2>&1; then
  step "mypy (strict)"
  /usr/bin/python3 -m mypy --cache-dir "$tmp/mypy"
else
  step "mypy is not installed (apt-get install python3-mypy): type check skipped"
fi

step "tests against the real hubd"
/usr/bin/python3 -m pytest -q --durations=5 tests
