package hub_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// TestOpenLimits opens sessions over each limit on what an open carries:
// each is refused with its reason and a message naming the limit and the
// value sent, and nothing is written.
func TestOpenLimits(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	bob := []*hubpb.Participant{{Name: "bob", AutoAccept: true}}
	many := func(n int, f func(i int) string) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("k%03d", i)] = f(i)
		}
		return m
	}
	people := func(n int) []*hubpb.Participant {
		var ps []*hubpb.Participant
		for i := range n {
			ps = append(ps, &hubpb.Participant{Name: fmt.Sprintf("p%d", i), AutoAccept: true})
		}
		return ps
	}
	expect := func(n int, within *durationpb.Duration) *hubpb.Expectations {
		var items []*hubpb.Expectation
		for range n {
			items = append(items, &hubpb.Expectation{Name: session.MaxSilence, Within: within, Action: session.ActionNotify})
		}
		return &hubpb.Expectations{Items: items}
	}
	bigList := &structpb.ListValue{}
	for range 10000 {
		bigList.Values = append(bigList.Values, structpb.NewStringValue("0123456789"))
	}
	for _, tc := range []struct {
		name   string
		req    *hubpb.OpenRequest
		reason error
		msg    string
	}{
		{"labels count", &hubpb.OpenRequest{Labels: many(65, func(int) string { return "v" })}, hub.ErrTooLarge, "65 labels, the limit is 64 (MaxLabels)"},
		{"labels size", &hubpb.OpenRequest{Labels: many(2, func(int) string { return strings.Repeat("x", 9000) })}, hub.ErrTooLarge,
			"labels are 18008 bytes (keys and values), the limit is 16384 (MaxLabelBytes)"},
		{"label with a control", &hubpb.OpenRequest{Labels: map[string]string{"team": "a\x1b[31mred"}}, session.ErrMalformed, `labels["team"] has the control character U+001B`},
		{"label not UTF-8", &hubpb.OpenRequest{Labels: map[string]string{"team": "\xff"}}, session.ErrMalformed, `labels["team"] is not valid UTF-8`},
		{"knobs size", &hubpb.OpenRequest{Knobs: map[string]*structpb.Value{"context": structpb.NewListValue(bigList)}}, hub.ErrTooLarge,
			"the knobs are 130008 bytes of JSON, the limit is 65536 (MaxKnobBytes)"},
		{"graph size", &hubpb.OpenRequest{Type: "workflow@1", Graph: &structpb.Struct{Fields: map[string]*structpb.Value{
			"x": structpb.NewListValue(bigList), "y": structpb.NewListValue(bigList), "z": structpb.NewListValue(bigList)}}}, hub.ErrTooLarge, "bytes of JSON, the limit is 262144 (MaxGraphBytes)"},
		{"participants", &hubpb.OpenRequest{Participants: people(257)}, hub.ErrTooLarge, "257 participants, the limit is 256 (MaxParticipants)"},
		{"expectations", &hubpb.OpenRequest{Expectations: expect(1000, durationpb.New(time.Minute))}, hub.ErrTooLarge, "1000 expectations, the limit is 32 (MaxExpectations)"},
		{"threshold under the minimum", &hubpb.OpenRequest{Expectations: expect(1, durationpb.New(time.Nanosecond))}, session.ErrMalformed,
			"expectation max_silence: within 1ns is shorter than the minimum 1s"},
		{"negative threshold quoted", &hubpb.OpenRequest{Expectations: expect(1, &durationpb.Duration{Seconds: -1})}, session.ErrMalformed,
			"within -1s must be positive"},
		{"ttl of 300 years", &hubpb.OpenRequest{Ttl: &durationpb.Duration{Seconds: 300 * 365 * 24 * 3600}}, session.ErrMalformed,
			"ttl 9460800000s is longer than the maximum 87600h0m0s"},
		{"ttl of 11 years", &hubpb.OpenRequest{Ttl: durationpb.New(11 * 365 * 24 * time.Hour)}, session.ErrMalformed, "ttl 96360h0m0s is longer than the maximum"},
		{"usage cost NaN in a budget", &hubpb.OpenRequest{Budget: &hubpb.Budget{MaxCost: math.NaN()}}, session.ErrMalformed, "budget.max_cost is NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			if req.Type == "" {
				req.Type = "conversation@1"
			}
			if req.Participants == nil {
				req.Participants = bob
			}
			_, err := e.hub.Open(ctx, "alice", req)
			if !errors.Is(err, tc.reason) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v; want %v with %q", err, tc.reason, tc.msg)
			}
		})
	}
	if list, _, _ := e.hub.List(context.Background(), "operator", true, feed.Filter{}); len(list) != 0 {
		n := len(list)
		t.Errorf("%d sessions after refused opens", n)
	}
}

// TestOpenLimitsConfigured: the limits are the hub's configuration, and
// opens within them pass.
func TestOpenLimitsConfigured(t *testing.T) {
	e := newEnv(t, func(c *hub.Config) { c.MaxLabels, c.MaxExpectations, c.MinExpectation = 2, 1, time.Minute })
	ctx := context.Background()
	ok := &hubpb.OpenRequest{Type: "conversation@1", Participants: []*hubpb.Participant{{Name: "bob"}}, Labels: map[string]string{"a": "1", "b": "2"},
		Expectations: &hubpb.Expectations{Items: []*hubpb.Expectation{session.Expect(session.MaxSilence, time.Minute, session.ActionWarn)}},
		Ttl:          durationpb.New(session.MaxDuration)}
	if _, err := e.hub.Open(ctx, "alice", ok); err != nil {
		t.Fatal(err)
	}
	ok.Labels["c"] = "3"
	if _, err := e.hub.Open(ctx, "alice", ok); !errors.Is(err, hub.ErrTooLarge) || !strings.Contains(err.Error(), "3 labels, the limit is 2") {
		t.Fatalf("3 labels: %v", err)
	}
	delete(ok.Labels, "c")
	ok.Expectations.Items[0].Within = durationpb.New(59 * time.Second)
	if _, err := e.hub.Open(ctx, "alice", ok); !errors.Is(err, session.ErrMalformed) || !strings.Contains(err.Error(), "59s is shorter than the minimum 1m0s") {
		t.Fatalf("59s: %v", err)
	}
}

// TestManyTimersDueAtOnce: more firings due at once than one log write
// takes are all written (in several writes), none dropped or retried for
// ever. With the default limit of 32 expectations a session cannot get
// there; the test lifts it.
func TestManyTimersDueAtOnce(t *testing.T) {
	const n = 8000
	e := newEnv(t, func(c *hub.Config) { c.MaxExpectations, c.MinExpectation = n, time.Second })
	exp := make([]*hubpb.Expectation, n)
	for i := range exp {
		exp[i] = session.Expect(session.MaxSilence, time.Second, session.ActionNotify)
	}
	id := openConversation(t, e.hub, "a", "b", exp...)
	e.clock.Advance(time.Second)
	violations := 0
	for from := uint64(1); ; {
		es, _, err := e.hub.ReadLog(context.Background(), "", true, id, from, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 0 {
			break
		}
		for _, env := range es {
			if env.GetType() == session.EventViolation {
				violations++
			}
		}
		from = es[len(es)-1].GetSeq() + 1
	}
	if violations != n {
		t.Fatalf("%d violations written, want %d", violations, n)
	}
}
