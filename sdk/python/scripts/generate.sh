#!/usr/bin/env bash
# Regenerates the committed protobuf and gRPC stubs of the hubd Python SDK
# (hubd/_pb/*_pb2*.py[i]) from the hub's schema, hubpb/hub.proto and
# hubpb/hub_service.proto, and from the SDK's minimal google.rpc protos
# (proto/google/rpc), with Debian's protoc (protobuf-compiler) and
# grpc_python_plugin (protobuf-compiler-grpc). The generated imports are
# made relative so that the stubs work inside the package.
#
#   sdk/python/scripts/generate.sh          # rewrite hubd/_pb
#   sdk/python/scripts/generate.sh OUT_DIR  # write elsewhere (ci.sh diffs it)
set -euo pipefail
sdk="$(cd "$(dirname "$0")/.." && pwd)"
root="$(cd "$sdk/../.." && pwd)"
out="${1:-$sdk/hubd/_pb}"
plugin="${GRPC_PYTHON_PLUGIN:-$(command -v grpc_python_plugin || true)}"
if ! command -v protoc >/dev/null || [ -z "$plugin" ]; then
  echo "generate.sh: needs protoc and grpc_python_plugin (apt-get install -y protobuf-compiler protobuf-compiler-grpc libprotobuf-dev)" >&2
  exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
protoc -I "$root/hubpb" --python_out="$tmp" --pyi_out="$tmp" hub.proto hub_service.proto
protoc -I "$root/hubpb" --grpc_out="$tmp" --plugin=protoc-gen-grpc="$plugin" hub_service.proto
protoc -I "$sdk/proto" --python_out="$tmp" --pyi_out="$tmp" google/rpc/status.proto google/rpc/error_details.proto
mv "$tmp"/google/rpc/*_pb2.py "$tmp"/google/rpc/*_pb2.pyi "$tmp"/
rm -r "$tmp/google"

# protoc writes top-level imports ("import hub_pb2"); inside the package
# they are relative.
sed -i -e 's/^import hub_pb2 as \(.*\)$/from . import hub_pb2 as \1/' \
  "$tmp/hub_service_pb2.py" "$tmp/hub_service_pb2.pyi" "$tmp/hub_service_pb2_grpc.py"
if grep -n '^import [a-z_]*_pb2' "$tmp"/*.py "$tmp"/*.pyi; then
  echo "generate.sh: an absolute import of a generated module is left" >&2
  exit 1
fi

mkdir -p "$out"
rm -f "$out"/*_pb2.py "$out"/*_pb2.pyi "$out"/*_pb2_grpc.py
cp "$tmp"/*.py "$tmp"/*.pyi "$out"/
