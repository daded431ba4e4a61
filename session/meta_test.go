package session_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

func TestParseType(t *testing.T) {
	tests := []struct {
		in   string
		want session.Type
		str  string
		err  bool
	}{
		{in: "workflow@1", want: session.Type{Kind: "workflow", Version: 1}, str: "workflow@1"},
		{in: "workflow@12", want: session.Type{Kind: "workflow", Version: 12}, str: "workflow@12"},
		{in: "conversation", want: session.Type{Kind: "conversation", Version: 1}, str: "conversation@1"},
		{in: "", err: true},
		{in: "@1", err: true},
		{in: "workflow@", err: true},
		{in: "workflow@0", err: true},
		{in: "workflow@-1", err: true},
		{in: "workflow@x", err: true},
		{in: "workflow@1@2", err: true},
		{in: "work flow@1", err: true},
		{in: "work\tflow", err: true},
	}
	for _, tt := range tests {
		got, err := session.ParseType(tt.in)
		if tt.err {
			wantErr(t, err, session.ErrMalformed)
			continue
		}
		if err != nil || got != tt.want || got.String() != tt.str {
			t.Errorf("ParseType(%q) = %+v (%q), %v; want %+v (%q)", tt.in, got, got.String(), err, tt.want, tt.str)
		}
		b, _ := got.MarshalText()
		var back session.Type
		if err := back.UnmarshalText(b); err != nil || back != got {
			t.Errorf("UnmarshalText(%s) = %+v, %v", b, back, err)
		}
	}
	var ty session.Type
	wantErr(t, ty.UnmarshalText([]byte("@")), session.ErrMalformed)
}

func validMeta() *hubpb.SessionMeta {
	return &hubpb.SessionMeta{
		SessionId: sessionID,
		Type:      "workflow@1",
		Creator:   "alice",
		Participants: []*hubpb.Participant{
			{Name: "alice", Role: "creator"},
			{Name: "svc", AutoAccept: true},
			{Name: "bob"},
			{Name: "carol", Role: "human"},
		},
		Knobs: map[string]*structpb.Value{
			"graph":        session.MustValue(map[string]any{"initial_speaker": "alice"}),
			"max_handoffs": structpb.NewNumberValue(3),
		},
		Labels:          map[string]string{"team": "core"},
		Ttl:             durationpb.New(time.Hour),
		InviteTimeout:   durationpb.New(time.Minute),
		Expectations:    []*hubpb.Expectation{session.Expect(session.TurnWithin, 2*time.Minute, session.ActionWarn)},
		ParentSessionId: childID,
		RootSessionId:   childID,
		Depth:           1,
		CreatedAt:       timestamppb.New(t0),
		OpenKey:         "open-1",
	}
}

func TestCheckMeta(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(m *hubpb.SessionMeta)
		frags  []string // nil: valid
	}{
		{"valid", func(*hubpb.SessionMeta) {}, nil},
		{"bare kind", func(m *hubpb.SessionMeta) { m.Type = "workflow" }, nil},
		{"only the creator", func(m *hubpb.SessionMeta) { m.Participants = m.Participants[:1] }, nil},
		{"no durations, knobs or expectations", func(m *hubpb.SessionMeta) {
			m.Ttl, m.InviteTimeout, m.Knobs, m.Expectations = nil, nil, nil, nil
		}, nil},
		{"no session id", func(m *hubpb.SessionMeta) { m.SessionId = "" }, []string{"session_id"}},
		{"bad session id", func(m *hubpb.SessionMeta) { m.SessionId = "nope" }, []string{"session_id", `"nope"`}},
		{"no type", func(m *hubpb.SessionMeta) { m.Type = "" }, []string{"session type"}},
		{"bad type", func(m *hubpb.SessionMeta) { m.Type = "workflow@0" }, []string{`"workflow@0"`}},
		{"no participants", func(m *hubpb.SessionMeta) { m.Participants = nil }, []string{"needs participants"}},
		{"empty name", func(m *hubpb.SessionMeta) { m.Participants[2].Name = "" }, []string{"participants[2]"}},
		{"name with space", func(m *hubpb.SessionMeta) { m.Participants[1].Name = "s v" }, []string{"participants[1]", `"s v"`}},
		{"name with @", func(m *hubpb.SessionMeta) { m.Participants[3].Name = "@carol" }, []string{"participants[3]"}},
		{"duplicate", func(m *hubpb.SessionMeta) { m.Participants[3].Name = "bob" }, []string{`"bob" is listed twice`}},
		{"creator not a participant", func(m *hubpb.SessionMeta) { m.Creator = "zed" }, []string{`"zed"`, "alice, svc, bob, carol"}},
		{"no creator", func(m *hubpb.SessionMeta) { m.Creator = "" }, []string{`creator ""`}},
		{"NaN knob", func(m *hubpb.SessionMeta) { m.Knobs["x"] = structpb.NewNumberValue(math.NaN()) }, []string{`knobs["x"]`, "not finite"}},
		{"knob without kind", func(m *hubpb.SessionMeta) { m.Knobs["x"] = &structpb.Value{} }, []string{`knobs["x"]`, "no kind"}},
		{"negative ttl", func(m *hubpb.SessionMeta) { m.Ttl = durationpb.New(-time.Second) }, []string{"ttl"}},
		{"negative invite timeout", func(m *hubpb.SessionMeta) { m.InviteTimeout = durationpb.New(-1) }, []string{"invite_timeout"}},
		{"negative depth", func(m *hubpb.SessionMeta) { m.Depth = -1 }, []string{"depth"}},
		{"unknown expectation", func(m *hubpb.SessionMeta) {
			m.Expectations = append(m.Expectations, session.Expect("nap", time.Second, session.ActionWarn))
		}, []string{"expectations[1]", `"nap"`}},
		{"unknown action", func(m *hubpb.SessionMeta) { m.Expectations[0].Action = "shout" }, []string{"expectations[0]", `"shout"`}},
		{"zero threshold", func(m *hubpb.SessionMeta) { m.Expectations[0].Within = durationpb.New(0) }, []string{"expectations[0]", "positive"}},
		{"no threshold", func(m *hubpb.SessionMeta) { m.Expectations[0].Within = nil }, []string{"expectations[0]", "within"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validMeta()
			tt.mutate(m)
			err := session.CheckMeta(m)
			if tt.frags == nil {
				if err != nil {
					t.Fatalf("CheckMeta = %v", err)
				}
				return
			}
			wantErr(t, err, session.ErrMalformed, tt.frags...)
		})
	}
}

func TestNamesInvitees(t *testing.T) {
	m := validMeta()
	if got, want := session.Names(m), []string{"alice", "svc", "bob", "carol"}; !slices.Equal(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
	// Not the creator, not the auto-accepting ones; session order.
	if got, want := session.Invitees(m), []string{"bob", "carol"}; !slices.Equal(got, want) {
		t.Errorf("Invitees = %v, want %v", got, want)
	}
	m.Participants = []*hubpb.Participant{{Name: "alice"}, {Name: "svc", AutoAccept: true}}
	if got := session.Invitees(m); got != nil {
		t.Errorf("Invitees of a creator and an auto-accepting agent = %v, want none", got)
	}
	// A creator marked auto_accept is still not invited, once.
	m.Participants = []*hubpb.Participant{{Name: "bob"}, {Name: "alice", AutoAccept: true}}
	if got, want := session.Invitees(m), []string{"bob"}; !slices.Equal(got, want) {
		t.Errorf("Invitees = %v, want %v", got, want)
	}
	if !session.IsParticipant(m, "alice") || session.IsParticipant(m, "carol") || session.IsParticipant(m, "") {
		t.Error("IsParticipant is wrong")
	}
	if got := session.Names(nil); len(got) != 0 {
		t.Errorf("Names(nil) = %v", got)
	}
}

func TestKnob(t *testing.T) {
	m := validMeta()
	var n int
	if ok, err := session.Knob(m, "max_handoffs", &n); !ok || err != nil || n != 3 {
		t.Errorf("Knob(max_handoffs) = %v, %v, %d", ok, err, n)
	}
	if ok, err := session.Knob(m, "absent", &n); ok || err != nil {
		t.Errorf("Knob(absent) = %v, %v", ok, err)
	}
	var g struct {
		Initial string `json:"initial_speaker"`
	}
	if ok, err := session.Knob(m, "graph", &g); !ok || err != nil || g.Initial != "alice" {
		t.Errorf("Knob(graph) = %v, %v, %+v", ok, err, g)
	}
	var s string
	ok, err := session.Knob(m, "max_handoffs", &s)
	if !ok {
		t.Error("Knob of a present key with the wrong type reported absent")
	}
	wantErr(t, err, session.ErrMalformed, `knob "max_handoffs"`)

	raw, ok, err := session.KnobJSON(m, "graph")
	if !ok || err != nil || string(raw) != `{"initial_speaker":"alice"}` {
		t.Errorf("KnobJSON(graph) = %s, %v, %v", raw, ok, err)
	}
	if raw, ok, err := session.KnobJSON(m, "absent"); raw != nil || ok || err != nil {
		t.Errorf("KnobJSON(absent) = %s, %v, %v", raw, ok, err)
	}
	m.Knobs["bad"] = structpb.NewNumberValue(math.NaN())
	_, ok, err = session.KnobJSON(m, "bad")
	if !ok {
		t.Error("KnobJSON of a present bad knob reported absent")
	}
	wantErr(t, err, session.ErrMalformed, `knob "bad"`)
	_, err = session.Knob(m, "bad", &n)
	wantErr(t, err, session.ErrMalformed, `knob "bad"`)
}

func TestID(t *testing.T) {
	id, err := session.ParseID(sessionID)
	if err != nil || id.String() != sessionID || id.IsZero() {
		t.Fatalf("ParseID(%q) = %v, %v", sessionID, id, err)
	}
	if _, err := session.ParseID("nope"); err == nil {
		t.Error("ParseID(nope) succeeded")
	}
	var zero session.ID
	if zero.String() != "" || !zero.IsZero() {
		t.Errorf("zero ID = %q", zero.String())
	}
	b, _ := id.MarshalText()
	var back session.ID
	if err := back.UnmarshalText(b); err != nil || back != id {
		t.Errorf("UnmarshalText(%s) = %v, %v", b, back, err)
	}
	if err := back.UnmarshalText(nil); err != nil || !back.IsZero() {
		t.Errorf("UnmarshalText(empty) = %v, %v; want the zero ID", back, err)
	}
	if err := back.UnmarshalText([]byte("zz")); err == nil {
		t.Error("UnmarshalText(zz) succeeded")
	}
	defer func() {
		if recover() == nil {
			t.Error("MustParseID(bad) did not panic")
		}
	}()
	session.MustParseID("bad")
}
