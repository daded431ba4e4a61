package session_test

import (
	"math"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

func TestAddressedVisible(t *testing.T) {
	tests := []struct {
		a                  *hubpb.Audience
		name, from         string
		addressed, visible bool
	}{
		{nil, "bob", "alice", true, true},
		{nil, "alice", "alice", false, true}, // not delivered back to the sender, but hers to read
		{nil, "alice", "", true, true},       // the hub's envelopes reach everyone
		{session.Only("bob"), "bob", "alice", true, true},
		{session.Only("bob"), "carol", "alice", false, false},
		{session.Only("bob"), "alice", "alice", false, true},
		{session.Only("bob", "alice"), "alice", "alice", true, true}, // named explicitly
		{session.Only(), "bob", "alice", false, false},               // log only
		{session.Only(), "alice", "alice", false, true},
		{&hubpb.Audience{}, "bob", "", false, false},
		{session.Only("Bob"), "bob", "alice", false, false}, // exact names
	}
	for _, tt := range tests {
		e := &hubpb.Envelope{From: tt.from, Audience: tt.a, Type: session.EventText}
		if got := session.Addressed(e, tt.name); got != tt.addressed {
			t.Errorf("Addressed(from %q to %v, %q) = %v, want %v", tt.from, tt.a.GetNames(), tt.name, got, tt.addressed)
		}
		if got := session.Visible(e, tt.name); got != tt.visible {
			t.Errorf("Visible(from %q to %v, %q) = %v, want %v", tt.from, tt.a.GetNames(), tt.name, got, tt.visible)
		}
	}
	names := []string{"bob"}
	a := session.Only(names...)
	names[0] = "mallory"
	if !session.Addressed(&hubpb.Envelope{Audience: a}, "bob") {
		t.Error("Only aliases its argument")
	}
	if a := session.Only(); a == nil || len(a.GetNames()) != 0 {
		t.Errorf("Only() = %v, want an empty audience", a)
	}
}

func TestTextOfToolOf(t *testing.T) {
	tests := []struct {
		e          *hubpb.Envelope
		text, tool string
	}{
		{with(&hubpb.Envelope{}, &hubpb.Text{Text: "hi"}), "hi", ""},
		{with(&hubpb.Envelope{}, &hubpb.Packet{Body: "body", Routing: &hubpb.Routing{Kind: session.RouteHandoff, Tool: "transfer_to_bob"}}), "body", "transfer_to_bob"},
		{with(&hubpb.Envelope{}, &hubpb.Packet{Body: "no routing"}), "no routing", ""},
		{with(&hubpb.Envelope{}, &hubpb.Question{QuestionId: "q", Text: "not a turn"}), "", ""},
		{with(&hubpb.Envelope{}, &hubpb.Answer{QuestionId: "q", Text: "not a turn"}), "", ""},
		{with(&hubpb.Envelope{}, []byte("bytes")), "", ""},
		{&hubpb.Envelope{}, "", ""},
		{nil, "", ""},
	}
	for _, tt := range tests {
		if got := session.TextOf(tt.e); got != tt.text {
			t.Errorf("TextOf(%v) = %q, want %q", tt.e, got, tt.text)
		}
		if got := session.ToolOf(tt.e); got != tt.tool {
			t.Errorf("ToolOf(%v) = %q, want %q", tt.e, got, tt.tool)
		}
	}
}

func TestEnded(t *testing.T) {
	e := session.Ended(session.EventClosed, session.ReasonMaxTurns)
	want := with(&hubpb.Envelope{Type: session.EventClosed}, &hubpb.Ended{Reason: session.ReasonMaxTurns})
	if !proto.Equal(e, want) {
		t.Errorf("Ended = %v, want %v", e, want)
	}
	if err := session.CheckEnvelope(e); err != nil {
		t.Errorf("Ended does not check: %v", err)
	}
}

func TestAddUsage(t *testing.T) {
	a := &hubpb.Usage{InputTokens: 1, OutputTokens: 2, CostUsd: 0.5}
	b := &hubpb.Usage{InputTokens: 10, OutputTokens: 20, CostUsd: 0.25}
	if got := session.AddUsage(a, b); !proto.Equal(got, &hubpb.Usage{InputTokens: 11, OutputTokens: 22, CostUsd: 0.75}) {
		t.Errorf("AddUsage = %v", got)
	}
	if got := session.AddUsage(nil, b); !proto.Equal(got, b) || got == b {
		t.Errorf("AddUsage(nil, b) = %v, want a copy of b", got)
	}
	if got := session.AddUsage(nil, nil); got == nil || !proto.Equal(got, &hubpb.Usage{}) {
		t.Errorf("AddUsage(nil, nil) = %v, want zero usage", got)
	}
	if !proto.Equal(a, &hubpb.Usage{InputTokens: 1, OutputTokens: 2, CostUsd: 0.5}) {
		t.Error("AddUsage changed its argument")
	}
	huge := &hubpb.Usage{InputTokens: math.MaxInt64, OutputTokens: math.MaxInt64 - 1, CostUsd: math.MaxFloat64, ToolCalls: math.MaxInt64}
	got := session.AddUsage(huge, huge)
	if !proto.Equal(got, &hubpb.Usage{InputTokens: math.MaxInt64, OutputTokens: math.MaxInt64, CostUsd: math.MaxFloat64, ToolCalls: math.MaxInt64}) {
		t.Errorf("AddUsage(huge, huge) = %v, want every sum saturated", got)
	}
	if got := session.AddCounts(math.MaxInt64, 1); got != math.MaxInt64 {
		t.Errorf("AddCounts(MaxInt64, 1) = %d", got)
	}
}

func TestTimeStampDuration(t *testing.T) {
	if got := session.Time(nil); !got.IsZero() {
		t.Errorf("Time(nil) = %v, want the zero time", got)
	}
	if got := session.Time(timestamppb.New(t0)); !got.Equal(t0) || got.Location() != time.UTC {
		t.Errorf("Time = %v", got)
	}
	if got := session.Stamp(time.Time{}); got != nil {
		t.Errorf("Stamp(zero) = %v, want nil", got)
	}
	paris := time.FixedZone("CET", 3600)
	if got := session.Time(session.Stamp(t0.In(paris))); got != t0 {
		t.Errorf("Time(Stamp(t)) = %v, want %v in UTC", got, t0)
	}
	// The Unix epoch is a time, not "none".
	if got := session.Stamp(time.Unix(0, 0)); got == nil || session.Time(got).Unix() != 0 {
		t.Errorf("Stamp(epoch) = %v", got)
	}
	if got := session.Duration(nil); got != 0 {
		t.Errorf("Duration(nil) = %v", got)
	}
	if got := session.Duration(durationpb.New(1500 * time.Millisecond)); got != 1500*time.Millisecond {
		t.Errorf("Duration = %v", got)
	}
}
