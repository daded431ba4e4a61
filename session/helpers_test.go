package session_test

import (
	"errors"
	"flag"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

var (
	goldenAppend = flag.Bool("golden-append", false, "append the stored form of the samples missing from testdata/envelopes_v2.txt; never changes a line already there")
	// rewrite is here so that `go test ./... -rewrite` runs in this package
	// too; it rewrites nothing: stored-form golden files are append-only.
	rewrite = flag.Bool("rewrite", false, "has no effect in package session: stored-form golden files are append-only (see -golden-append)")
)

const (
	sessionID = "01890a5d-ac96-774b-bcce-b302099a8057"
	childID   = "01890a5d-ac96-774b-bcce-b302099a8058"
	envID     = "01890a5d-ac96-7000-8000-000000000001"
	causeID   = "01890a5d-ac96-7000-8000-000000000002"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

// allTypes lists every built-in event type; samples must cover each.
var allTypes = []string{
	session.EventText, session.EventPacket, session.EventContextSet,
	session.EventInvite, session.EventInviteAck, session.EventInviteReject,
	session.EventOpened, session.EventClosed, session.EventExpired, session.EventViolation,
	session.EventQuestion, session.EventAnswer, session.EventDelegationResult, session.EventTaskProgress,
	session.EventQuestionClosed, session.EventDelegation, session.EventToolCall, session.EventToolResult, session.EventMessage,
}

const customType = "app.note"

// header returns an envelope of type t with every header field set.
func header(t string) *hubpb.Envelope {
	return &hubpb.Envelope{
		SessionId:   sessionID,
		Seq:         42,
		Id:          envID,
		From:        "alice",
		Audience:    session.Only("bob", "carol"),
		Type:        t,
		CausationId: causeID,
		ClientMsgId: "msg-7",
		Call:        &hubpb.Call{Id: "call-2", Parent: "call-1", Root: "call-0", Depth: 2},
		Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		AcceptedAt:  timestamppb.New(t0),
		Rule:        "transitions[0] from_speaker(alice) → agent(bob)",
	}
}

// with returns e with payload p.
func with(e *hubpb.Envelope, p any) *hubpb.Envelope {
	switch p := p.(type) {
	case nil:
	case *hubpb.Text:
		e.Payload = &hubpb.Envelope_Text{Text: p}
	case *hubpb.Packet:
		e.Payload = &hubpb.Envelope_Packet{Packet: p}
	case *hubpb.ContextUpdate:
		e.Payload = &hubpb.Envelope_ContextSet{ContextSet: p}
	case *hubpb.Invite:
		e.Payload = &hubpb.Envelope_Invite{Invite: p}
	case *hubpb.Ended:
		e.Payload = &hubpb.Envelope_Ended{Ended: p}
	case *hubpb.Violation:
		e.Payload = &hubpb.Envelope_Violation{Violation: p}
	case *hubpb.Question:
		e.Payload = &hubpb.Envelope_Question{Question: p}
	case *hubpb.Answer:
		e.Payload = &hubpb.Envelope_Answer{Answer: p}
	case *hubpb.DelegationResult:
		e.Payload = &hubpb.Envelope_DelegationResult{DelegationResult: p}
	case *hubpb.TaskProgress:
		e.Payload = &hubpb.Envelope_TaskProgress{TaskProgress: p}
	case []byte:
		e.Payload = &hubpb.Envelope_Custom{Custom: p}
	case *hubpb.QuestionClosed:
		e.Payload = &hubpb.Envelope_QuestionClosed{QuestionClosed: p}
	case *hubpb.Delegation:
		e.Payload = &hubpb.Envelope_Delegation{Delegation: p}
	case *hubpb.ToolCall:
		e.Payload = &hubpb.Envelope_ToolCall{ToolCall: p}
	case *hubpb.ToolResult:
		e.Payload = &hubpb.Envelope_ToolResult{ToolResult: p}
	case message:
		e.Payload = &hubpb.Envelope_Message{Message: &hubpb.Text{Text: string(p)}}
	default:
		panic("with: not a payload")
	}
	return e
}

// message is the text of a sample "message" envelope.
type message string

// sample is one envelope of samples(), named for the golden files.
type sample struct {
	name string
	e    *hubpb.Envelope
}

// samples returns valid envelopes of every event type and a custom one:
// every header field and, over the samples of a type, every payload field
// set (TestSamplesSetEveryField checks it, so a field added to hub.proto
// must be added here, which makes TestStoredGolden ask for its stored
// form). A sample's name is its type, or its type and a variant where one
// envelope cannot set every field validly; samples only ever grow (see
// TestStoredGolden).
func samples() []sample {
	usage := &hubpb.Usage{InputTokens: 120, OutputTokens: 80, CostUsd: 0.0125, ToolCalls: 3}
	out := []sample{}
	add := func(name string, e *hubpb.Envelope) { out = append(out, sample{name: name, e: e}) }
	for _, e := range []*hubpb.Envelope{
		with(header(session.EventText), &hubpb.Text{Text: "hello, bob"}),
		with(header(session.EventPacket), &hubpb.Packet{
			Body:    "over to you",
			Routing: &hubpb.Routing{Kind: session.RouteHandoff, Tool: "transfer_to_bob", Target: "bob", Reason: "billing", Summary: "refund"},
			ContextUpdates: &hubpb.ContextUpdate{
				Set: map[string]*structpb.Value{
					"route": session.MustValue("billing"),
					"n":     session.MustValue(3),
					"obj":   session.MustValue(map[string]any{"b": 1.5, "a": []any{1, "x", nil, true}}),
				},
				Delete: []string{"old", "stale"},
			},
			Usage: usage,
		}),
		with(header(session.EventContextSet), &hubpb.ContextUpdate{
			Set:    map[string]*structpb.Value{"done": session.MustValue(true), "none": structpb.NewNullValue()},
			Delete: []string{"tmp"},
		}),
		with(header(session.EventInvite), &hubpb.Invite{Invitees: []string{"bob", "carol"}}),
		header(session.EventInviteAck),
		with(header(session.EventInviteReject), &hubpb.Ended{Reason: "busy", Detail: "in a meeting"}),
		header(session.EventOpened),
		with(header(session.EventClosed), &hubpb.Ended{Reason: session.ReasonSequenceComplete, Detail: "after 3 turns"}),
		with(header(session.EventExpired), &hubpb.Ended{Reason: session.ReasonTTLExpired, Detail: "ttl 1h"}),
		with(header(session.EventViolation), &hubpb.Violation{
			Expectation: session.TurnWithin, Index: 1, Action: session.ActionWarn,
			Since: timestamppb.New(t0.Add(-time.Minute)), Violators: []string{"bob"}, Detail: "bob has not spoken for 120s",
			QuestionId: "q1",
		}),
		with(header(session.EventQuestion), &hubpb.Question{
			QuestionId: "q1", Text: "Deploy now?", Answerer: "carol", Multiple: true,
			Options: []*hubpb.Option{{Id: "yes", Label: "Yes"}, {Id: "no", Label: "Not yet"}},
			Within:  durationpb.New(5*time.Minute + 500*time.Millisecond), OnDeadline: "default", DefaultOption: "no",
		}),
		with(header(session.EventAnswer), &hubpb.Answer{QuestionId: "q1", OptionIds: []string{"yes"}, Text: "go ahead",
			Defaulted: true, By: "ops"}),
		with(header(session.EventDelegationResult), &hubpb.DelegationResult{ChildSessionId: childID, Reason: session.ReasonFinished,
			Summary: "all done", State: "CLOSED", Usage: usage, Responder: "carol", DelegationId: causeID}),
		with(header(session.EventTaskProgress), &hubpb.TaskProgress{Task: "index", Percent: 42.5, Detail: "3 of 7 shards"}),
		with(header(customType), []byte{0, 1, 2, 0xff}),
		with(header(session.EventQuestionClosed), &hubpb.QuestionClosed{QuestionId: "q1", Reason: "session_ended"}),
		with(header(session.EventDelegation), &hubpb.Delegation{ChildSessionIds: []string{childID}, Delegator: "alice",
			Mode: session.ModeBackground, Notify: session.NotifyTurn}),
		with(header(session.EventToolCall), &hubpb.ToolCall{CallId: "t1", Name: "web_search",
			Arguments: session.MustValue(map[string]any{"q": "hubd"}).GetStructValue()}),
		with(header(session.EventToolResult), &hubpb.ToolResult{CallId: "t1", Name: "web_search",
			Result: session.MustValue([]any{"a", "b"}), Error: "partial"}),
		with(header(session.EventMessage), message("one more thing")),
	} {
		add(e.GetType(), e)
	}
	add("question/schema", with(header(session.EventQuestion), &hubpb.Question{QuestionId: "q2", Text: "How many?", Answerer: "carol",
		Schema:     session.MustValue(map[string]any{"type": "integer", "minimum": 1}).GetStructValue(),
		Within:     durationpb.New(time.Minute),
		OnDeadline: session.ActionNotify}))
	add("delegation/blocking", with(header(session.EventDelegation), &hubpb.Delegation{ChildSessionIds: []string{childID, sessionID},
		Delegator: "alice", Mode: session.ModeBlocking, Await: session.AwaitAny}))
	return out
}

// typeOf returns the event type a sample name stands for.
func typeOf(name string) string {
	t, _, _ := strings.Cut(name, "/")
	return t
}

func TestSamplesCoverEveryType(t *testing.T) {
	have := map[string]bool{}
	for _, s := range samples() {
		if have[s.name] {
			t.Errorf("two samples named %s", s.name)
		}
		have[s.name] = true
		if err := session.CheckEnvelope(s.e); err != nil {
			t.Errorf("sample %s does not check: %v", s.name, err)
		}
	}
	for _, ty := range append(allTypes, customType) {
		if !have[ty] {
			t.Errorf("no sample of %s", ty)
		}
	}
}

// TestSamplesSetEveryField: every field of every sample is set, down to the
// payload's nested messages; of the payload oneof, exactly the member its
// type needs (none for the types without data).
func TestSamplesSetEveryField(t *testing.T) {
	left := map[string]map[string]int{} // type → unset path → samples leaving it
	count := map[string]int{}
	for _, s := range samples() {
		ty := typeOf(s.name)
		count[ty]++
		if left[ty] == nil {
			left[ty] = map[string]int{}
		}
		for _, path := range unset(s.e.ProtoReflect(), "") {
			if path == "payload" && session.PayloadField(ty) == "" {
				continue
			}
			left[ty][path]++
		}
	}
	for _, ty := range slices.Sorted(maps.Keys(left)) {
		for _, path := range slices.Sorted(maps.Keys(left[ty])) {
			if left[ty][path] == count[ty] {
				t.Errorf("no sample of %s sets %s", ty, path)
			}
		}
	}
}

// unset returns the paths of the fields of m that are not set. Of a oneof,
// only the member that is set is looked into ("payload" when none is).
func unset(m protoreflect.Message, prefix string) []string {
	var out []string
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		path := prefix + string(fd.Name())
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			switch set := m.WhichOneof(od); {
			case set == nil && od.Fields().Get(0) == fd:
				out = append(out, prefix+string(od.Name()))
				continue
			case set != fd:
				continue
			}
		}
		if !m.Has(fd) {
			out = append(out, path)
			continue
		}
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := m.Get(fd).List()
			for j := range l.Len() {
				out = append(out, unset(l.Get(j).Message(), path+"[].")...)
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			// map values are JSON values here: any kind is a value
		case fd.Message() != nil && !fd.IsMap():
			if fd.Message().FullName() != "google.protobuf.Value" {
				out = append(out, unset(m.Get(fd).Message(), path+".")...)
			}
		}
	}
	return out
}

// wantErr checks err against a sentinel (nil: no error) and, when want is
// not nil, that the message contains every fragment.
func wantErr(t testing.TB, err, want error, fragments ...string) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not contain %q", err, f)
		}
	}
}
