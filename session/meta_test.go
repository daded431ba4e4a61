package session_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/session"
)

func TestCheckName(t *testing.T) {
	ok := []string{"a", "alice", "Bob_2", "agent.billing", "ünï", "a@b", "x-y:z", strings.Repeat("n", session.MaxNameLen)}
	for _, s := range ok {
		if err := session.CheckName(s); err != nil {
			t.Errorf("CheckName(%q) = %v", s, err)
		}
	}
	bad := []string{"", strings.Repeat("n", session.MaxNameLen+1), "@bob", "a b", " a", "a\t", "a\nb", "a,b", "a\x00", "a\x7f"}
	for _, s := range bad {
		wantErr(t, session.CheckName(s), session.ErrMalformed)
	}
}

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
		// Text form round trip.
		b, _ := got.MarshalText()
		var back session.Type
		if err := back.UnmarshalText(b); err != nil || back != got {
			t.Errorf("UnmarshalText(%s) = %+v, %v", b, back, err)
		}
	}
	var ty session.Type
	wantErr(t, ty.UnmarshalText([]byte("@")), session.ErrMalformed)
}

func validMeta() *session.Meta {
	return &session.Meta{
		ID:      sessionID,
		Type:    session.Type{Kind: "workflow", Version: 1},
		Creator: "alice",
		Participants: []session.Participant{
			{Name: "alice", Role: "creator"},
			{Name: "svc", AutoAccept: true},
			{Name: "bob"},
			{Name: "carol", Role: "human"},
		},
		Knobs:         map[string]json.RawMessage{"graph": json.RawMessage(`{"initial_speaker":"alice"}`), "max_handoffs": json.RawMessage(`3`)},
		Labels:        map[string]string{"team": "core"},
		TTL:           time.Hour,
		InviteTimeout: time.Minute,
		Expectations:  []session.Expectation{{Name: session.TurnWithin, Within: 2 * time.Minute, Action: session.ActionWarn}},
		Parent:        childID,
		Root:          childID,
		Depth:         1,
		CreatedAt:     t0,
		OpenKey:       "open-1",
	}
}

func TestMetaCheck(t *testing.T) {
	if err := validMeta().Check(); err != nil {
		t.Fatalf("valid meta: %v", err)
	}
	tests := []struct {
		name   string
		mutate func(m *session.Meta)
		frags  []string
	}{
		{"no type", func(m *session.Meta) { m.Type = session.Type{} }, []string{"type"}},
		{"no participants", func(m *session.Meta) { m.Participants = nil }, []string{"participants"}},
		{"empty name", func(m *session.Meta) { m.Participants[2].Name = "" }, []string{"participants[2]"}},
		{"name with space", func(m *session.Meta) { m.Participants[1].Name = "s v" }, []string{"participants[1]", `"s v"`}},
		{"name with @", func(m *session.Meta) { m.Participants[3].Name = "@carol" }, []string{"participants[3]"}},
		{"duplicate", func(m *session.Meta) { m.Participants[3].Name = "bob" }, []string{`"bob"`, "twice"}},
		{"creator not a participant", func(m *session.Meta) { m.Creator = "zed" }, []string{`"zed"`, "alice, svc, bob, carol"}},
		{"no creator", func(m *session.Meta) { m.Creator = "" }, []string{"creator"}},
		{"negative ttl", func(m *session.Meta) { m.TTL = -time.Second }, []string{"ttl"}},
		{"negative invite timeout", func(m *session.Meta) { m.InviteTimeout = -1 }, []string{"invite timeout"}},
		{"negative depth", func(m *session.Meta) { m.Depth = -1 }, []string{"depth"}},
		{"unknown expectation", func(m *session.Meta) {
			m.Expectations = append(m.Expectations, session.Expectation{Name: "nap", Within: time.Second, Action: session.ActionWarn})
		}, []string{"expectations[1]", `"nap"`}},
		{"unknown action", func(m *session.Meta) { m.Expectations[0].Action = "shout" }, []string{"expectations[0]", `"shout"`}},
		{"zero threshold", func(m *session.Meta) { m.Expectations[0].Within = 0 }, []string{"expectations[0]", "positive"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validMeta()
			tt.mutate(m)
			wantErr(t, m.Check(), session.ErrMalformed, tt.frags...)
		})
	}
}

func TestMetaNamesInvitees(t *testing.T) {
	m := validMeta()
	if got, want := m.Names(), []string{"alice", "svc", "bob", "carol"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	// Not the creator, not the auto-accepting ones; session order.
	if got, want := m.Invitees(), []string{"bob", "carol"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Invitees() = %v, want %v", got, want)
	}
	m.Participants = []session.Participant{{Name: "alice"}, {Name: "svc", AutoAccept: true}}
	if got := m.Invitees(); got != nil {
		t.Errorf("Invitees() of a creator and an auto-accepting agent = %v, want none", got)
	}
	// A creator marked AutoAccept is still not invited, once.
	m.Participants = []session.Participant{{Name: "bob"}, {Name: "alice", AutoAccept: true}}
	if got, want := m.Invitees(), []string{"bob"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Invitees() = %v, want %v", got, want)
	}
	if !m.IsParticipant("alice") || m.IsParticipant("carol") || m.IsParticipant("") {
		t.Error("IsParticipant is wrong")
	}
}

func TestMetaKnob(t *testing.T) {
	m := validMeta()
	var n int
	if ok, err := m.Knob("max_handoffs", &n); !ok || err != nil || n != 3 {
		t.Errorf("Knob(max_handoffs) = %v, %v, %d", ok, err, n)
	}
	if ok, err := m.Knob("absent", &n); ok || err != nil {
		t.Errorf("Knob(absent) = %v, %v", ok, err)
	}
	var s string
	ok, err := m.Knob("max_handoffs", &s)
	if !ok {
		t.Error("Knob of a present key with the wrong type reported absent")
	}
	wantErr(t, err, session.ErrMalformed, `"max_handoffs"`)
}

func TestMetaStoredForm(t *testing.T) {
	m := validMeta()
	b, err := session.EncodeMeta(m)
	if err != nil {
		t.Fatal(err)
	}
	back, err := session.DecodeMeta(b)
	if err != nil {
		t.Fatalf("DecodeMeta(%s): %v", b, err)
	}
	if !reflect.DeepEqual(back, m) {
		t.Errorf("meta round trip:\n got %+v\nwant %+v", back, m)
	}
	for _, bad := range []string{
		``,
		`[]`,
		`{"id":"","type":"workflow@1","creator":"a","participants":[],"created_at":"2026-01-01T00:00:00Z","color":"red"}`,
		`{"type":"workflow@0"}`,
		`{"id":"nope"}`,
		`{"type":"workflow@1"} {}`,
		`{"type":"workflow@1"}}`,
	} {
		_, err := session.DecodeMeta([]byte(bad))
		wantErr(t, err, session.ErrCorrupt)
	}
}

func TestID(t *testing.T) {
	const s = "01890a5d-ac96-774b-bcce-b302099a8057"
	id, err := session.ParseID(s)
	if err != nil || id.String() != s || id.IsZero() {
		t.Fatalf("ParseID(%q) = %v, %v", s, id, err)
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
