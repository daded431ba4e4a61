package transition_test

import (
	"encoding/json"
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files under testdata/")

var abc = []string{"alice", "bob", "carol"}

// turn returns the Input of a text turn by speaker in a session of alice,
// bob and carol opened by alice, with the mention read from text.
func turn(speaker, text string) *transition.Input {
	return &transition.Input{
		Participants:   abc,
		Initiator:      "alice",
		Supervisor:     "alice",
		InitialSpeaker: "alice",
		Speaker:        speaker,
		Event:          session.EventText,
		Text:           text,
		Mention:        transition.Mention(text, abc),
		Turn:           1,
	}
}

// packet returns the Input of a packet turn calling tool.
func packet(speaker, tool string) *transition.Input {
	in := turn(speaker, "")
	in.Event = session.EventPacket
	in.Tool = tool
	return in
}

func withContext(in *transition.Input, kv ...string) *transition.Input {
	in.Context = map[string]json.RawMessage{}
	for i := 0; i+1 < len(kv); i += 2 {
		in.Context[kv[i]] = json.RawMessage(kv[i+1])
	}
	return in
}

func decode(t testing.TB, r *transition.Registry, s string) *transition.Graph {
	t.Helper()
	g, err := r.Decode([]byte(s))
	if err != nil {
		t.Fatalf("Decode: %v\n%s", err, s)
	}
	return g
}

func marshal(t testing.TB, g *transition.Graph) []byte {
	t.Helper()
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	return b
}

// wantInvalid checks err wraps ErrInvalid, so that its stable reason is
// INVALID_GRAPH, and its message contains every fragment (the first is
// normally the offending node's path).
func wantInvalid(t testing.TB, err error, frags ...string) {
	t.Helper()
	if !errors.Is(err, transition.ErrInvalid) {
		t.Fatalf("error %v does not wrap ErrInvalid", err)
	}
	if r, ok := session.ReasonOf(err); !ok || r != hubpb.Reason_INVALID_GRAPH {
		t.Errorf("error %v has reason %v, want INVALID_GRAPH", err, r)
	}
	for _, f := range frags {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not contain %q", err, f)
		}
	}
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func sorted(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}
