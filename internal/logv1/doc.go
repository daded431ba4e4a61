// Package logv1 decodes the stored forms of hubd's write-ahead log format
// version 1 into the messages of hub.proto: [DecodeEnvelope] reads the
// hand-written binary envelope codec (its first byte is 1) and [DecodeMeta]
// the strict JSON of session metadata. `hubd log migrate` uses them to
// rewrite a version-1 data directory as version 2 (deterministic protobuf);
// nothing else should.
//
// This package is frozen. It must never change what it decodes, or how:
// logs written by version 1 must decode forever, to the same messages.
// Everything it relies on is kept here, the table of version-1 event types
// included, so that later changes to package session (a new event type, a
// new rule for names) cannot change how an old record reads. Its golden
// file testdata/envelopes_v1.txt holds stored forms written by the
// version-1 code; it is append-only and no -rewrite flag touches it. A fix
// here is a bug fix of this decoder, with a test showing the version-1 code
// agreed.
//
// The mapping is the one version 1 used on the wire (its convert.go): ids
// of 16 raw bytes become UUID strings, the zero id ""; times in Unix
// nanoseconds become Timestamps, 0 none; an audience flag becomes an
// Audience; a call, a packet's routing, context updates and usage are set
// only when not zero; context values and knobs, canonical JSON in version
// 1, become google.protobuf.Value (through session.JSONValue); durations in
// nanoseconds become Durations, 0 none; an expectation's seconds become its
// within; a custom payload's bytes stay bytes.
//
// Every error wraps session.ErrCorrupt. Like the hub, the package is pure:
// no clock, no I/O, no map iteration whose order matters.
package logv1
