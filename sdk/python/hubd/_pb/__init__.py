"""Generated code: the hub's messages and service (from hubpb/hub.proto and
hubpb/hub_service.proto) and minimal google.rpc messages, written by
scripts/generate.sh. Do not edit."""
