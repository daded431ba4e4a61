package session

import (
	"fmt"
	"math"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hubd/hubd/hubpb"
)

// Only is a restricted audience of exactly the given names (none: log only).
func Only(names ...string) *hubpb.Audience {
	return &hubpb.Audience{Names: slices.Clone(names)}
}

// Addressed reports whether e is delivered to name: with no audience, to
// every participant but the sender; with one, to exactly its names.
func Addressed(e *hubpb.Envelope, name string) bool {
	if a := e.GetAudience(); a != nil {
		return slices.Contains(a.GetNames(), name)
	}
	return name != e.GetFrom()
}

// Visible reports whether name may read e: its own envelopes and those
// addressed to it.
func Visible(e *hubpb.Envelope, name string) bool {
	return e.GetFrom() == name || Addressed(e, name)
}

// TextOf returns what an envelope says in words: the text of a text
// envelope, the body of a packet, and "" for anything else. Mentions are
// read from it.
func TextOf(e *hubpb.Envelope) string {
	switch p := e.GetPayload().(type) {
	case *hubpb.Envelope_Text:
		return p.Text.GetText()
	case *hubpb.Envelope_Packet:
		return p.Packet.GetBody()
	}
	return ""
}

// ToolOf returns the routing tool of a packet, or "".
func ToolOf(e *hubpb.Envelope) string {
	return e.GetPacket().GetRouting().GetTool()
}

// Routing kinds of a packet (hubpb.Routing.Kind).
const (
	// RouteText: a plain turn; the graph decides who is next ("" too).
	RouteText = "text"
	// RouteHandoff: with a target, go there directly; without, the graph
	// decides, and tool_called conditions see the tool.
	RouteHandoff = "handoff"
	// RouteFinish: terminate the session with the reason (default
	// "finished").
	RouteFinish = "finish"
	// RouteEscalate: the sender asks the session's supervisor for help.
	RouteEscalate = "escalate"
	// RoutePassCaller: hand the turn to the target, which takes over the
	// duty to answer the session's caller.
	RoutePassCaller = "pass_caller"
)

// Ended returns an envelope of type t ending a session, or rejecting an
// invite, with reason.
func Ended(t, reason string) *hubpb.Envelope {
	return &hubpb.Envelope{Type: t, Payload: &hubpb.Envelope_Ended{Ended: &hubpb.Ended{Reason: reason}}}
}

// AddUsage returns the sum of a and b (either may be nil). Token and tool
// call counts saturate at the largest int64 rather than wrap, and the cost
// at the largest float64 rather than become infinite.
func AddUsage(a, b *hubpb.Usage) *hubpb.Usage {
	return &hubpb.Usage{
		InputTokens:  addSat(a.GetInputTokens(), b.GetInputTokens()),
		OutputTokens: addSat(a.GetOutputTokens(), b.GetOutputTokens()),
		CostUsd:      min(a.GetCostUsd()+b.GetCostUsd(), math.MaxFloat64),
		ToolCalls:    addSat(a.GetToolCalls(), b.GetToolCalls()),
	}
}

// AddCounts adds two non-negative counts, saturating at math.MaxInt64.
func AddCounts(a, b int64) int64 { return addSat(a, b) }

// addSat adds two non-negative counts, saturating at math.MaxInt64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Time returns a stored time, or the zero time for none (a nil
// Timestamp's AsTime would be the Unix epoch).
func Time(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.AsTime()
}

// Stamp returns the stored form of t, or nil for the zero time.
func Stamp(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// Duration returns a stored duration, 0 for none.
func Duration(d *durationpb.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.AsDuration()
}

// MarshalEnvelope returns the stored form of e: deterministic protobuf
// (fields in number order, map entries sorted by key), so the same envelope
// always gives the same bytes. Strings are written as they are:
// [CheckEnvelope] refuses those that are not UTF-8 first.
func MarshalEnvelope(e *hubpb.Envelope) ([]byte, error) {
	return AppendEnvelope(nil, e)
}

// AppendEnvelope appends the stored form of e to b.
func AppendEnvelope(b []byte, e *hubpb.Envelope) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.MarshalAppend(b, e)
}

// UnmarshalEnvelope parses the stored form of an envelope. Input that does
// not parse is an ErrCorrupt error; fields added by later versions are kept
// as unknown fields and written back unchanged. Strings are not checked for
// UTF-8 here: what is stored was checked when it was written.
func UnmarshalEnvelope(b []byte) (*hubpb.Envelope, error) {
	e := &hubpb.Envelope{}
	if err := e.UnmarshalVT(b); err != nil {
		return nil, fmt.Errorf("envelope: %v: %w", err, ErrCorrupt)
	}
	return e, nil
}

// MarshalMeta returns the stored form of a session's metadata
// (deterministic protobuf, as [MarshalEnvelope]).
func MarshalMeta(m *hubpb.SessionMeta) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}

// UnmarshalMeta parses the stored form of a session's metadata. Input that
// does not parse is ErrCorrupt.
func UnmarshalMeta(b []byte) (*hubpb.SessionMeta, error) {
	m := &hubpb.SessionMeta{}
	if err := m.UnmarshalVT(b); err != nil {
		return nil, fmt.Errorf("session metadata: %v: %w", err, ErrCorrupt)
	}
	return m, nil
}
