package logv1_test

import (
	"bufio"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/logv1"
	"github.com/hubd/hubd/session"
)

// The values the version-1 code used for the golden samples.
const (
	sessionID = "01890a5d-ac96-774b-bcce-b302099a8057"
	childID   = "01890a5d-ac96-774b-bcce-b302099a8058"
	envID     = "01890a5d-ac96-7000-8000-000000000001"
	causeID   = "01890a5d-ac96-7000-8000-000000000002"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

// value is structpb.NewValue for literals known to convert.
func value(v any) *structpb.Value {
	x, err := structpb.NewValue(v)
	if err != nil {
		panic(err)
	}
	return x
}

// sample is what the golden envelope of type t decodes to: every header
// field set, with the payload p (nil: none).
func sample(t string, p func(e *hubpb.Envelope)) *hubpb.Envelope {
	e := &hubpb.Envelope{
		SessionId:   sessionID,
		Seq:         42,
		Id:          envID,
		From:        "alice",
		Audience:    &hubpb.Audience{Names: []string{"bob", "carol"}},
		Type:        t,
		CausationId: causeID,
		ClientMsgId: "msg-7",
		Call:        &hubpb.Call{Id: "call-2", Parent: "call-1", Root: "call-0", Depth: 2},
		Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		AcceptedAt:  timestamppb.New(t0),
	}
	if p != nil {
		p(e)
	}
	return e
}

// goldenEnvelopes are the messages the lines of testdata/envelopes_v1.txt
// decode to, by event type: the samples of the version-1 tests
// (session/helpers_test.go while the log was of format version 1), as
// version 1 put them on the wire.
func goldenEnvelopes() map[string]*hubpb.Envelope {
	ended := func(reason string) func(e *hubpb.Envelope) {
		return func(e *hubpb.Envelope) { e.Payload = &hubpb.Envelope_Ended{Ended: &hubpb.Ended{Reason: reason}} }
	}
	list := []*hubpb.Envelope{
		sample("text", func(e *hubpb.Envelope) {
			e.Payload = &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "hello, bob"}}
		}),
		sample("packet", func(e *hubpb.Envelope) {
			e.Payload = &hubpb.Envelope_Packet{Packet: &hubpb.Packet{
				Body:    "over to you",
				Routing: &hubpb.Routing{Kind: "handoff", Tool: "transfer_to_bob", Target: "bob", Reason: "billing", Summary: "refund"},
				ContextUpdates: &hubpb.ContextUpdate{
					Set: map[string]*structpb.Value{"route": value("billing"), "n": value(3),
						"obj": value(map[string]any{"b": 1, "a": []any{1, 2}})},
					Delete: []string{"old", "stale"},
				},
				Usage: &hubpb.Usage{InputTokens: 120, OutputTokens: 80, CostUsd: 0.0125},
			}}
		}),
		sample("context_set", func(e *hubpb.Envelope) {
			e.Payload = &hubpb.Envelope_ContextSet{ContextSet: &hubpb.ContextUpdate{
				Set:    map[string]*structpb.Value{"done": value(true), "none": value(nil)},
				Delete: []string{"tmp"},
			}}
		}),
		sample("session_invite", func(e *hubpb.Envelope) {
			e.Payload = &hubpb.Envelope_Invite{Invite: &hubpb.Invite{Invitees: []string{"bob", "carol"}}}
		}),
		sample("session_invite_ack", nil),
		sample("session_invite_reject", ended("busy")),
		sample("session_opened", nil),
		sample("session_closed", ended("sequence_complete")),
		sample("session_expired", ended("ttl_expired")),
		sample("expectation_violated", func(e *hubpb.Envelope) {
			e.Payload = &hubpb.Envelope_Violation{Violation: &hubpb.Violation{
				Expectation: "turn_within", Index: 1, Action: "warn", Since: timestamppb.New(t0.Add(-time.Minute)),
				Violators: []string{"bob"}, Detail: "bob has not spoken for 120s",
			}}
		}),
		sample("question", func(e *hubpb.Envelope) {
			e.Payload = &hubpb.Envelope_Question{Question: &hubpb.Question{QuestionId: "q1", Text: "Deploy now?",
				Options: []*hubpb.Option{{Id: "yes", Label: "Yes"}, {Id: "no", Label: "Not yet"}}}}
		}),
		sample("answer", func(e *hubpb.Envelope) {
			e.Payload = &hubpb.Envelope_Answer{Answer: &hubpb.Answer{QuestionId: "q1", OptionIds: []string{"yes"}, Text: "go ahead"}}
		}),
		sample("delegation_result", func(e *hubpb.Envelope) {
			e.Payload = &hubpb.Envelope_DelegationResult{DelegationResult: &hubpb.DelegationResult{
				ChildSessionId: childID, Reason: "finished", Summary: "all done"}}
		}),
		sample("task_progress", func(e *hubpb.Envelope) {
			e.Payload = &hubpb.Envelope_TaskProgress{TaskProgress: &hubpb.TaskProgress{Task: "index", Percent: 42.5, Detail: "3 of 7 shards"}}
		}),
		sample("app.note", func(e *hubpb.Envelope) {
			e.Payload = &hubpb.Envelope_Custom{Custom: []byte{0, 1, 2, 0xff}}
		}),
	}
	out := map[string]*hubpb.Envelope{}
	for _, e := range list {
		out[e.GetType()] = e
	}
	return out
}

// golden reads a golden file of "name data" lines, skipping comments.
func golden(t testing.TB, file string) [][2]string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines [][2]string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, data, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("%s: line %q has no data", file, line)
		}
		lines = append(lines, [2]string{name, data})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// goldenBytes returns the stored envelopes of the golden file by type.
func goldenBytes(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, l := range golden(t, "testdata/envelopes_v1.txt") {
		b, err := hex.DecodeString(l[1])
		if err != nil {
			t.Fatalf("%s: %v", l[0], err)
		}
		if _, dup := out[l[0]]; dup {
			t.Fatalf("two golden envelopes of type %s", l[0])
		}
		out[l[0]] = b
	}
	return out
}

// sameMessage fails t unless got equals want.
func sameMessage(t testing.TB, what string, got, want proto.Message) {
	t.Helper()
	if !proto.Equal(got, want) {
		g, _ := hubpb.MarshalJSON(got)
		w, _ := hubpb.MarshalJSON(want)
		t.Errorf("%s decodes to\n%s\nwant\n%s", what, g, w)
	}
}

// TestGoldenEnvelopes decodes every stored envelope written by version 1:
// each must give its expected message, pass the envelope checks of today,
// and survive the stored form of version 2.
func TestGoldenEnvelopes(t *testing.T) {
	want := goldenEnvelopes()
	stored := goldenBytes(t)
	if len(stored) != len(want) {
		t.Errorf("golden file has %d envelopes, want %d", len(stored), len(want))
	}
	for ty, b := range stored {
		w, ok := want[ty]
		if !ok {
			t.Errorf("golden envelope of type %s has no expected message", ty)
			continue
		}
		got, err := logv1.DecodeEnvelope(b)
		if err != nil {
			t.Errorf("%s: a version-1 record no longer decodes: %v", ty, err)
			continue
		}
		sameMessage(t, ty, got, w)
		if err := session.CheckEnvelope(got); err != nil {
			t.Errorf("%s: %v", ty, err)
		}
		v2, err := session.MarshalEnvelope(got)
		if err != nil {
			t.Fatalf("%s: MarshalEnvelope: %v", ty, err)
		}
		back, err := session.UnmarshalEnvelope(v2)
		if err != nil || !proto.Equal(back, w) {
			t.Errorf("%s: version-2 round trip: %v, %v", ty, back, err)
		}
	}
}

// goldenMetas are the messages the lines of testdata/meta_v1.txt decode to.
func goldenMetas() map[string]*hubpb.SessionMeta {
	return map[string]*hubpb.SessionMeta{
		"full": {
			SessionId: sessionID, Type: "workflow@2", Creator: "alice",
			Participants: []*hubpb.Participant{{Name: "alice", Role: "creator"}, {Name: "bob", Role: "member", AutoAccept: true}, {Name: "carol"}},
			Knobs: map[string]*structpb.Value{
				"graph":        value(map[string]any{"start": "alice", "nodes": []any{"alice", "bob"}}),
				"max_handoffs": value(3), "supervisor": value("carol"), "ratio": value(0.25), "off": value(false), "none": value(nil),
			},
			Labels:        map[string]string{"team": "billing", "env": "prod"},
			Ttl:           durationpb.New(90 * time.Minute),
			InviteTimeout: durationpb.New(5 * time.Minute),
			Expectations: []*hubpb.Expectation{
				{Name: "turn_within", Within: durationpb.New(2 * time.Minute), Action: "warn"},
				{Name: "max_silence", Within: durationpb.New(1500 * time.Millisecond), Action: "notify"},
				{Name: "reply_within", Within: durationpb.New(1001 * time.Millisecond), Action: "auto_close"},
			},
			ParentSessionId: childID, RootSessionId: sessionID, Depth: 2,
			CreatedAt: timestamppb.New(t0),
			OpenKey:   "open-1",
		},
		"minimal": {
			SessionId: childID, Type: "conversation@1", Creator: "alice",
			Participants: []*hubpb.Participant{{Name: "alice"}},
			CreatedAt:    timestamppb.New(t0),
		},
	}
}

func TestGoldenMetas(t *testing.T) {
	want := goldenMetas()
	lines := golden(t, "testdata/meta_v1.txt")
	if len(lines) != len(want) {
		t.Errorf("golden file has %d metadata, want %d", len(lines), len(want))
	}
	for _, l := range lines {
		got, err := logv1.DecodeMeta([]byte(l[1]))
		if err != nil {
			t.Errorf("%s: version-1 metadata no longer decodes: %v", l[0], err)
			continue
		}
		sameMessage(t, l[0], got, want[l[0]])
		if err := session.CheckMeta(got); err != nil {
			t.Errorf("%s: %v", l[0], err)
		}
		v2, err := session.MarshalMeta(got)
		if err != nil {
			t.Fatalf("%s: MarshalMeta: %v", l[0], err)
		}
		back, err := session.UnmarshalMeta(v2)
		if err != nil || !proto.Equal(back, want[l[0]]) {
			t.Errorf("%s: version-2 round trip: %v, %v", l[0], back, err)
		}
	}
}

// wantCorrupt fails t unless err wraps session.ErrCorrupt.
func wantCorrupt(t testing.TB, what string, err error) {
	t.Helper()
	if !errors.Is(err, session.ErrCorrupt) {
		t.Errorf("%s: error %v, want session.ErrCorrupt", what, err)
	}
}

// TestTruncatedEnvelopes cuts every golden envelope at every length: no
// prefix decodes, and neither does a record with a byte appended.
func TestTruncatedEnvelopes(t *testing.T) {
	for ty, b := range goldenBytes(t) {
		for n := range len(b) {
			_, err := logv1.DecodeEnvelope(b[:n])
			wantCorrupt(t, ty+" cut to "+hex.EncodeToString(b[:min(n, 4)]), err)
		}
		_, err := logv1.DecodeEnvelope(append(b[:len(b):len(b)], 0))
		wantCorrupt(t, ty+" with a trailing byte", err)
	}
}
