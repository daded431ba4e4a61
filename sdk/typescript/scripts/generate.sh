#!/bin/sh
# Regenerates src/gen from hubpb/hub.proto, hubpb/hub_service.proto and the
# minimal google.rpc messages in proto/, with protoc (Debian's
# protobuf-compiler) and ts-proto's plugin (a devDependency). The output is
# committed; ci.sh checks it is what this script writes.
set -eu
cd "$(dirname "$0")/.."
plugin=node_modules/.bin/protoc-gen-ts_proto
if [ ! -x "$plugin" ]; then
  echo "generate: $plugin is missing: run npm ci first" >&2
  exit 1
fi
command -v protoc >/dev/null || { echo "generate: protoc is missing: apt-get install -y protobuf-compiler libprotobuf-dev" >&2; exit 1; }
out=src/gen
rm -rf "$out"
mkdir -p "$out"
protoc \
  --plugin=protoc-gen-ts_proto="$plugin" \
  --ts_proto_out="$out" \
  --ts_proto_opt=outputServices=grpc-js \
  --ts_proto_opt=esModuleInterop=true \
  --ts_proto_opt=importSuffix=.js \
  --ts_proto_opt=env=node \
  --ts_proto_opt=snakeToCamel=keys \
  --ts_proto_opt=protoJsonFormat=false \
  --ts_proto_opt=annotateFilesWithVersion=false \
  -I ../../hubpb -I proto \
  hub.proto hub_service.proto google/rpc/status.proto

# The RPC Close would be the generated client's close(), shadowing
# grpc.Client's own close() (which closes the channel): it is renamed
# closeSession in the service definition and the client and server
# interfaces. Its path on the wire stays /hubd.v1.Hub/Close.
svc="$out/hub_service.ts"
sed -e 's/^  close: /  closeSession: /' -e 's/^  close(/  closeSession(/' "$svc" > "$svc.tmp"
mv "$svc.tmp" "$svc"
if grep -q '^  close[:(]' "$svc" || ! grep -q '^  closeSession: {' "$svc"; then
  echo "generate: renaming the Close RPC in $svc failed" >&2
  exit 1
fi
