package adapters_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/adapters/consulting"
	"github.com/hubd/hubd/adapters/conversation"
	"github.com/hubd/hubd/adapters/discussion"
	"github.com/hubd/hubd/adapters/workflow"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// The session every scenario and recorded log runs in.
const scenarioSession = "0192f0c4-8f4e-7a2b-9c3d-4e5f60718293"

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func registry(t testing.TB) *adapters.Registry {
	t.Helper()
	r, err := adapters.NewRegistry(workflow.New(nil), conversation.Adapter{}, discussion.Adapter{}, consulting.Adapter{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestScenarios runs the scripts under testdata/scenarios
// (github.com/cockroachdb/datadriven; -rewrite regenerates the expected
// output). Envelopes and metadata are written in the one JSON form
// (hubpb.UnmarshalJSON). Commands:
//
//	open type=KIND@V participants=(A,B,...) [creator=A]
//	    input (optional): more of the session's hubpb.SessionMeta, such
//	    as {"knobs":{"graph":{...},"max_handoffs":2}}; starts a dry run of
//	    an open session (the creator defaults to the first participant)
//	try
//	    input: envelopes, one a line; prints each one's adapters.Step
//	state
//	    prints the machine (json.Marshal)
//
// After each session (at the next open and at the end of the file) and at
// every state, the accepted envelopes are replayed through their stored
// form into a fresh machine, which must marshal to the same bytes.
func TestScenarios(t *testing.T) {
	reg := registry(t)
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		s := &scenario{reg: reg}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			return s.run(t, td)
		})
		s.checkReplay(t)
	})
}

// scenario is the state of one script: the session it runs, if open.
type scenario struct {
	reg *adapters.Registry
	a   adapters.Adapter
	dr  *adapters.DryRun
}

func (s *scenario) run(t *testing.T, td *datadriven.TestData) string {
	switch td.Cmd {
	case "open":
		s.checkReplay(t)
		return s.open(t, td)
	case "try":
		if s.dr == nil {
			td.Fatalf(t, "try without an open session")
		}
		var out strings.Builder
		for _, line := range strings.Split(td.Input, "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			var e hubpb.Envelope
			if err := hubpb.UnmarshalJSON([]byte(line), &e); err != nil {
				td.Fatalf(t, "not an envelope in the JSON form: %s: %v", line, err)
			}
			b, _ := json.Marshal(s.dr.Try(&e))
			fmt.Fprintf(&out, "%s\n", b)
		}
		return out.String()
	case "state":
		if s.dr == nil {
			td.Fatalf(t, "state without an open session")
		}
		s.checkReplay(t)
		b, _ := json.Marshal(s.dr.M)
		return string(b) + "\n"
	}
	td.Fatalf(t, "unknown command %q", td.Cmd)
	return ""
}

// open starts the session of an open command, or prints why it does not
// start: "start: REASON: detail".
func (s *scenario) open(t *testing.T, td *datadriven.TestData) string {
	var spec openSpec
	for _, arg := range td.CmdArgs {
		switch arg.Key {
		case "type":
			spec.typ = arg.SingleVal(t)
		case "participants":
			spec.participants = arg.Vals
		case "creator":
			spec.creator = arg.SingleVal(t)
		default:
			td.Fatalf(t, "open: unknown argument %q", arg.Key)
		}
	}
	if strings.TrimSpace(td.Input) != "" {
		spec.more = &hubpb.SessionMeta{}
		if err := hubpb.UnmarshalJSON([]byte(td.Input), spec.more); err != nil {
			td.Fatalf(t, "open: the input is not session metadata in the JSON form: %v", err)
		}
	}
	s.a, s.dr = nil, nil
	a, meta, err := spec.build(s.reg)
	if err == nil {
		s.dr, err = adapters.NewDryRun(a, meta)
	}
	if err != nil {
		reason, _ := session.ReasonOf(err)
		return fmt.Sprintf("start: %s: %s\n", reason, session.Detail(err))
	}
	s.a = a
	return fmt.Sprintf("open; next: %s\n", strings.Join(s.dr.M.Expected(), ", "))
}

// openSpec describes a session: its type, participants and creator, and
// more of its metadata.
type openSpec struct {
	typ          string
	participants []string
	creator      string             // default: the first participant
	more         *hubpb.SessionMeta // nil: nothing more
}

// build returns the adapter of the session's type and its metadata, or an
// error naming a type that is malformed or not served.
func (o openSpec) build(reg *adapters.Registry) (adapters.Adapter, *hubpb.SessionMeta, error) {
	typ, err := session.ParseType(o.typ)
	if err != nil {
		return nil, nil, err
	}
	a, err := reg.Lookup(typ)
	if err != nil {
		return nil, nil, err
	}
	meta := &hubpb.SessionMeta{}
	if o.more != nil {
		meta = proto.Clone(o.more).(*hubpb.SessionMeta)
	}
	meta.SessionId, meta.Type, meta.Creator, meta.CreatedAt = scenarioSession, o.typ, o.creator, session.Stamp(epoch)
	if meta.Creator == "" && len(o.participants) > 0 {
		meta.Creator = o.participants[0]
	}
	for _, p := range o.participants {
		meta.Participants = append(meta.Participants, &hubpb.Participant{Name: p})
	}
	return a, meta, nil
}

// checkReplay folds the accepted envelopes, each through its stored form,
// into a fresh machine and compares it with the live one. Every envelope
// accepted, closing ones included, must be valid.
func (s *scenario) checkReplay(t *testing.T) {
	t.Helper()
	if s.dr == nil {
		return
	}
	live, _ := json.Marshal(s.dr.M)
	fresh, err := adapters.NewDryRun(s.a, s.dr.M.Meta)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range s.dr.Accepted {
		if err := session.CheckEnvelope(e); err != nil {
			t.Errorf("accepted envelope seq %d is not valid: %v", e.GetSeq(), err)
		}
		fresh.M.Fold(viaStoredForm(t, e))
	}
	replayed, _ := json.Marshal(fresh.M)
	if !bytes.Equal(replayed, live) {
		t.Errorf("replay differs from the live state:\nlive:   %s\nreplay: %s", live, replayed)
	}
	m, err := s.dr.Replay(s.a)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(m); !bytes.Equal(got, live) {
		t.Errorf("DryRun.Replay differs from the live state:\nlive:   %s\nreplay: %s", live, got)
	}
}

// viaStoredForm returns e encoded and decoded as the log stores it.
func viaStoredForm(t testing.TB, e *hubpb.Envelope) *hubpb.Envelope {
	t.Helper()
	b, err := session.MarshalEnvelope(e)
	if err != nil {
		t.Fatalf("stored form of seq %d: %v", e.GetSeq(), err)
	}
	d, err := session.UnmarshalEnvelope(b)
	if err != nil {
		t.Fatalf("decode seq %d: %v", e.GetSeq(), err)
	}
	return d
}
