#!/usr/bin/env bash
# Builds hubd's release artifacts into dist/VERSION/:
#
#   hubd_VERSION_OS_ARCH.tar.gz (.zip for windows)  hubd and hubload, static
#       (CGO_ENABLED=0), -trimpath, the version and commit stamped (hubd
#       version prints them), with LICENSE, THIRD_PARTY_LICENSES (the
#       licenses and notices of the Go modules linked in) and a README
#   hubd-VERSION.tar.gz, hubd-VERSION-py3-none-any.whl  the Python SDK
#   hubd-sdk-VERSION.tgz                                the TypeScript SDK
#   SHA256SUMS                                          sha256sum -c checks them
#
# usage: scripts/release.sh [--platforms LIST] [--no-sdks] VERSION
#   VERSION    X.Y.Z (or vX.Y.Z); the SDKs' manifests (sdk/python/pyproject.toml,
#              sdk/typescript/package.json) must already say X.Y.Z
#   --platforms  comma-separated GOOS/GOARCH (default $HUBD_RELEASE_PLATFORMS,
#              else linux/amd64,linux/arm64,darwin/arm64,windows/amd64); "host"
#              is the machine's own
#   --no-sdks  the binaries only
#
# Needs Go, git, and for the SDKs python3 with setuptools, wheel and build
# (Debian: python3-setuptools python3-wheel python3-build; $PYTHON picks the
# interpreter) and Node.js 20 with npm (npm ci runs when
# sdk/typescript/node_modules is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

die() { echo "release: $*" >&2; exit 2; }
step() { printf -- '-- %s\n' "$*"; }

platforms="${HUBD_RELEASE_PLATFORMS:-linux/amd64,linux/arm64,darwin/arm64,windows/amd64}"
sdks=1
version=""
while [ $# -gt 0 ]; do
  case "$1" in
    --platforms) [ $# -ge 2 ] || die "--platforms wants a list"; platforms="$2"; shift 2 ;;
    --platforms=*) platforms="${1#*=}"; shift ;;
    --no-sdks) sdks=0; shift ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown flag $1 (see scripts/release.sh --help)" ;;
    *) [ -z "$version" ] || die "one VERSION, not also $1"; version="$1"; shift ;;
  esac
done
[ -n "$version" ] || die "want a VERSION (see scripts/release.sh --help)"
version="${version#v}"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "VERSION $version is not X.Y.Z or X.Y.Z-PRERELEASE"
[ "$platforms" = host ] && platforms="$(go env GOOS)/$(go env GOARCH)"

# The SDKs carry their version in their manifests: a release agrees with them.
if [ "$sdks" = 1 ]; then
  py=$(sed -n 's/^version = "\(.*\)"$/\1/p' sdk/python/pyproject.toml)
  js=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' sdk/typescript/package.json)
  [ "$py" = "$version" ] || die "sdk/python/pyproject.toml says version $py, not $version: change it (or give --no-sdks)"
  [ "$js" = "$version" ] || die "sdk/typescript/package.json says version $js, not $version: change it (or give --no-sdks)"
fi

commit=$(git rev-parse HEAD) || die "not a git checkout: the commit cannot be stamped"
if [ -n "$(git status --porcelain)" ]; then
  commit="$commit-dirty"
  echo "release: the tree has uncommitted changes: the commit is stamped $commit" >&2
fi
# Archives hold their files with the commit's time, so a rebuild of the
# same commit gives the same bytes.
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}"

out="$root/dist/$version"
rm -rf "$out"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

ldflags="-s -w -X github.com/hubd/hubd/internal/buildinfo.version=v$version -X github.com/hubd/hubd/internal/buildinfo.commit=$commit"

# pack_readme writes the README of an archive.
pack_readme() {
  cat <<EOF
hubd $version ($1), commit $commit

  hubd      the session hub and its command-line client (hubd --help)
  hubload   its load generator and durability checker (hubload --help)

Start a hub in development mode (loopback only, no tokens):

  ./hubd                         # gRPC on 127.0.0.1:7420, the web view on http://127.0.0.1:7421/
  ./hubd version                 # this version and commit

Running it for real (systemd, a container, tokens, TLS, backups):
https://github.com/hubd/hubd/blob/v$version/docs/OPERATIONS.md
Installing the SDKs: https://github.com/hubd/hubd/blob/v$version/docs/INSTALL.md

hubd is licensed under the Apache License 2.0 (LICENSE); THIRD_PARTY_LICENSES
holds the licenses of the Go modules built into the binaries.
EOF
}

for platform in ${platforms//,/ }; do
  goos=${platform%/*} goarch=${platform#*/}
  [ "$goos" != "$platform" ] && [ -n "$goarch" ] || die "platform $platform is not GOOS/GOARCH"
  name="hubd_${version}_${goos}_${goarch}"
  exe=""; [ "$goos" = windows ] && exe=".exe"
  step "$name"
  dir="$work/$name"
  mkdir -p "$dir"
  for cmd in hubd hubload; do
    CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$dir/$cmd$exe" "./cmd/$cmd"
  done
  cp LICENSE "$dir/LICENSE"
  GOOS=$goos GOARCH=$goarch scripts/third_party_licenses.sh > "$dir/THIRD_PARTY_LICENSES"
  pack_readme "$goos/$goarch" > "$dir/README"
  find "$dir" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  if [ "$goos" = windows ]; then
    (cd "$work" && find "$name" | LC_ALL=C sort | TZ=UTC zip -q -X -@ "$out/$name.zip")
  else
    tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" -cf - "$name" | gzip -n > "$out/$name.tar.gz"
  fi
done

if [ "$sdks" = 1 ]; then
  step "the Python SDK: sdist and wheel"
  python=${PYTHON:-python3}
  # A python3 first on PATH (pyenv, a venv) may lack the build tools that
  # the system's has: take the system's then, unless $PYTHON chose one.
  if [ -z "${PYTHON:-}" ] && ! "$python" -c 'import build, setuptools, wheel' 2>/dev/null &&
    /usr/bin/python3 -c 'import build, setuptools, wheel' 2>/dev/null; then
    python=/usr/bin/python3
  fi
  "$python" -c 'import build, setuptools, wheel' 2>/dev/null ||
    die "$python lacks build, setuptools or wheel (Debian: apt-get install python3-build python3-setuptools python3-wheel; or set PYTHON)"
  # Built from a copy: setuptools writes build/ and *.egg-info beside the sources.
  mkdir "$work/python"
  git ls-files sdk/python | tar -cf - -T - | tar -C "$work/python" -xf -
  "$python" -m build --no-isolation --outdir "$out" "$work/python/sdk/python" > "$work/python.log" 2>&1 ||
    { cat "$work/python.log" >&2; die "building the Python SDK failed"; }

  step "the TypeScript SDK: npm pack"
  (
    cd sdk/typescript
    [ -d node_modules ] || npm ci --no-audit --no-fund --silent
    npm pack --silent --pack-destination "$out" > /dev/null   # its prepare script builds dist/
  )
fi

step "SHA256SUMS"
(cd "$out" && sha256sum -- * > "$work/SHA256SUMS" && mv "$work/SHA256SUMS" SHA256SUMS && cat SHA256SUMS)
echo "release: dist/$version"
