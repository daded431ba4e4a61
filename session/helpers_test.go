package session_test

import (
	"encoding/json"
	"errors"
	"flag"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hubd/hubd/session"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files under testdata/")

var (
	sessionID = session.MustParseID("01890a5d-ac96-774b-bcce-b302099a8057")
	childID   = session.MustParseID("01890a5d-ac96-774b-bcce-b302099a8058")
	envID     = uuid.MustParse("01890a5d-ac96-7000-8000-000000000001")
	causeID   = uuid.MustParse("01890a5d-ac96-7000-8000-000000000002")
	t0        = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
)

// allTypes lists every built-in event type; samples must cover each.
var allTypes = []session.EventType{
	session.EventText, session.EventPacket, session.EventContextSet,
	session.EventInvite, session.EventInviteAck, session.EventInviteReject,
	session.EventOpened, session.EventClosed, session.EventExpired, session.EventViolation,
	session.EventQuestion, session.EventAnswer, session.EventDelegationResult, session.EventTaskProgress,
}

const customType session.EventType = "app.note"

// header returns an envelope of type t with every header field set.
func header(t session.EventType, p session.Payload) *session.Envelope {
	return &session.Envelope{
		Session:     sessionID,
		Seq:         42,
		ID:          envID,
		From:        "alice",
		Audience:    session.Only("bob", "carol"),
		Type:        t,
		Payload:     p,
		Causation:   causeID,
		ClientMsgID: "msg-7",
		Call:        session.Call{ID: "call-2", Parent: "call-1", Root: "call-0", Depth: 2},
		TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		AcceptedAt:  t0,
	}
}

// samples returns one valid envelope of every event type (and a custom one),
// with every header field and every payload field set. Lists are non-empty
// and times are UTC, so both encodings give them back DeepEqual.
func samples() []*session.Envelope {
	return []*session.Envelope{
		header(session.EventText, session.Text{Text: "hello, bob"}),
		header(session.EventPacket, session.Packet{
			Body:    "over to you",
			Routing: session.Routing{Kind: session.RouteHandoff, Tool: "transfer_to_bob", Target: "bob", Reason: "billing", Summary: "refund"},
			Context: session.ContextUpdate{
				Set:    map[string]json.RawMessage{"route": session.MustJSON("billing"), "n": session.MustJSON(3), "obj": session.MustJSON(map[string]any{"b": 1, "a": []int{1, 2}})},
				Delete: []string{"old", "stale"},
			},
			Usage: session.Usage{InputTokens: 120, OutputTokens: 80, CostUSD: 0.0125},
		}),
		header(session.EventContextSet, session.ContextUpdate{
			Set:    map[string]json.RawMessage{"done": session.MustJSON(true), "none": session.Null()},
			Delete: []string{"tmp"},
		}),
		header(session.EventInvite, session.Invite{Invitees: []string{"bob", "carol"}}),
		header(session.EventInviteAck, nil),
		header(session.EventInviteReject, session.Ended{Reason: "busy"}),
		header(session.EventOpened, nil),
		header(session.EventClosed, session.Ended{Reason: session.ReasonSequenceComplete}),
		header(session.EventExpired, session.Ended{Reason: session.ReasonTTLExpired}),
		header(session.EventViolation, session.Violation{
			Expectation: session.TurnWithin, Index: 1, Action: session.ActionWarn,
			Since: t0.Add(-time.Minute), Violators: []string{"bob"}, Detail: "bob has not spoken for 120s",
		}),
		header(session.EventQuestion, session.Question{
			QuestionID: "q1", Text: "Deploy now?",
			Options: []session.Option{{ID: "yes", Label: "Yes"}, {ID: "no", Label: "Not yet"}},
		}),
		header(session.EventAnswer, session.Answer{QuestionID: "q1", OptionIDs: []string{"yes"}, Text: "go ahead"}),
		header(session.EventDelegationResult, session.DelegationResult{Child: childID, Reason: session.ReasonFinished, Summary: "all done"}),
		header(session.EventTaskProgress, session.TaskProgress{Task: "index", Percent: 42.5, Detail: "3 of 7 shards"}),
		header(customType, session.Custom{Data: []byte{0, 1, 2, 0xff}}),
	}
}

func TestSamplesCoverEveryType(t *testing.T) {
	have := map[session.EventType]bool{}
	for _, e := range samples() {
		have[e.Type] = true
		if err := e.Check(); err != nil {
			t.Errorf("sample %s does not check: %v", e.Type, err)
		}
	}
	for _, ty := range allTypes {
		if !have[ty] {
			t.Errorf("no sample of %s", ty)
		}
	}
	if !have[customType] {
		t.Error("no sample of a custom type")
	}
}

// normalize maps values that are equal in meaning to one form: empty lists,
// maps and byte strings to nil (both encodings omit or shorten them), an
// empty custom payload to no payload (the JSON form cannot tell them apart),
// times to UTC, and NaN floats to 0 (NaN != NaN defeats DeepEqual; callers
// compare the exact bits through the encoding).
func normalize(e *session.Envelope) *session.Envelope {
	c := *e
	if len(c.Audience.Names) == 0 {
		c.Audience.Names = nil
	}
	c.AcceptedAt = c.AcceptedAt.UTC()
	switch p := c.Payload.(type) {
	case session.Packet:
		p.Context = normContext(p.Context)
		p.Usage.CostUSD = noNaN(p.Usage.CostUSD)
		c.Payload = p
	case session.ContextUpdate:
		c.Payload = normContext(p)
	case session.Invite:
		p.Invitees = nilIfEmpty(p.Invitees)
		c.Payload = p
	case session.Violation:
		p.Violators = nilIfEmpty(p.Violators)
		p.Since = p.Since.UTC()
		c.Payload = p
	case session.Question:
		if len(p.Options) == 0 {
			p.Options = nil
		}
		c.Payload = p
	case session.Answer:
		p.OptionIDs = nilIfEmpty(p.OptionIDs)
		c.Payload = p
	case session.TaskProgress:
		p.Percent = noNaN(p.Percent)
		c.Payload = p
	case session.Custom:
		if len(p.Data) == 0 {
			c.Payload = nil
		}
	}
	return &c
}

func normContext(u session.ContextUpdate) session.ContextUpdate {
	u.Delete = nilIfEmpty(u.Delete)
	if len(u.Set) == 0 {
		u.Set = nil
		return u
	}
	set := make(map[string]json.RawMessage, len(u.Set))
	for k, v := range u.Set {
		if len(v) == 0 {
			v = nil
		}
		set[k] = v
	}
	u.Set = set
	return u
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func noNaN(f float64) float64 {
	if math.IsNaN(f) {
		return 0
	}
	return f
}

// sameEnvelope fails t unless a and b are DeepEqual after normalize.
func sameEnvelope(t testing.TB, what string, a, b *session.Envelope) {
	t.Helper()
	if na, nb := normalize(a), normalize(b); !reflect.DeepEqual(na, nb) {
		t.Fatalf("%s: envelopes differ:\n a: %#v\n b: %#v", what, na, nb)
	}
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
