#!/usr/bin/env bash
# Prints the license and notice files of every Go module that hubd and
# hubload link, and Go's own, for $GOOS/$GOARCH (default: this machine's):
# the THIRD_PARTY_LICENSES of the release archives and the container
# image, where that code is redistributed in binary form.
#
# usage: scripts/third_party_licenses.sh > THIRD_PARTY_LICENSES
set -euo pipefail
cd "$(dirname "$0")/.."
rule=$(printf '=%.0s' {1..78})
echo "hubd and hubload link the following Go modules; their licenses and notices follow."
{
  echo "$(go env GOVERSION) $(go env GOROOT)"
  go list -deps -f '{{with .Module}}{{if not .Main}}{{.Path}}@{{.Version}} {{.Dir}}{{end}}{{end}}' ./cmd/hubd ./cmd/hubload
} | sort -u | while read -r mod dir; do
  for f in "$dir"/LICENSE* "$dir"/LICENCE* "$dir"/COPYING* "$dir"/NOTICE* "$dir"/PATENTS*; do
    [ -f "$f" ] || continue
    printf '\n%s\n== %s: %s\n\n' "$rule" "$mod" "$(basename "$f")"
    cat "$f"
  done
done
