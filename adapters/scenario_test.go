package adapters_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/adapters/consulting"
	"github.com/hubd/hubd/adapters/conversation"
	"github.com/hubd/hubd/adapters/discussion"
	"github.com/hubd/hubd/adapters/workflow"
	"github.com/hubd/hubd/session"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the want sections of testdata/scenarios")

func registry(t testing.TB) *adapters.Registry {
	t.Helper()
	r, err := adapters.NewRegistry(workflow.New(nil), conversation.Adapter{}, discussion.Adapter{}, consulting.Adapter{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestScenarios runs every script under testdata/scenarios: each case opens
// a session, tries its input envelopes one by one and compares the results
// (and the final state) with the want section; then it replays the accepted
// envelopes, through their stored encoding, into a new machine and checks it
// equals the live one.
func TestScenarios(t *testing.T) {
	files, _ := filepath.Glob("testdata/scenarios/*.txt")
	if len(files) == 0 {
		t.Fatal("no scenarios")
	}
	reg := registry(t)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			cases, err := parseScript(string(data))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cases {
				got := runCase(t, reg, c)
				if *rewrite {
					c.want = got
					continue
				}
				if got != c.want {
					t.Errorf("%s: case %q:\n--- got ---\n%s--- want ---\n%s", file, c.name, got, c.want)
				}
			}
			if *rewrite {
				if err := os.WriteFile(file, []byte(formatScript(cases)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// sessionSpec is the -- session -- section.
type sessionSpec struct {
	Type         string                     `json:"type"`
	Participants []string                   `json:"participants"`
	Creator      string                     `json:"creator"`
	Knobs        map[string]json.RawMessage `json:"knobs"`
}

func runCase(t *testing.T, reg *adapters.Registry, c *scriptCase) string {
	var out strings.Builder
	meta, a, err := c.meta(reg)
	var dr *adapters.DryRun
	if err == nil {
		dr, err = adapters.NewDryRun(a, meta)
	}
	if err != nil {
		code, _ := adapters.Reason(err)
		return fmt.Sprintf("start: %s: %s\n", code, adapters.Detail(err))
	}
	for _, line := range c.input {
		var env session.Envelope
		var step adapters.Step
		if err := json.Unmarshal([]byte(line), &env); err != nil {
			step = adapters.Step{Code: adapters.ReasonMalformed, Err: err}
		} else {
			step = dr.Try(&env)
		}
		b, _ := json.Marshal(step)
		out.Write(append(b, '\n'))
	}
	live, _ := json.Marshal(dr.M)
	fmt.Fprintf(&out, "state: %s\n", live)
	checkReplay(t, a, dr, live)
	return out.String()
}

// checkReplay re-folds the accepted envelopes, each through its stored
// (binary) encoding, and compares with the live machine.
func checkReplay(t *testing.T, a adapters.Adapter, dr *adapters.DryRun, live []byte) {
	t.Helper()
	fresh, err := adapters.NewDryRun(a, dr.M.Meta)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range dr.Accepted {
		b, _ := e.MarshalBinary()
		d, err := session.DecodeEnvelope(b)
		if err != nil {
			t.Fatalf("decode seq %d: %v", e.Seq, err)
		}
		fresh.M.Fold(d)
	}
	replayed, _ := json.Marshal(fresh.M)
	if !bytes.Equal(replayed, live) {
		t.Errorf("replay differs from live state:\nlive:   %s\nreplay: %s", live, replayed)
	}
}

func (c *scriptCase) meta(reg *adapters.Registry) (*session.Meta, adapters.Adapter, error) {
	var spec sessionSpec
	if err := json.Unmarshal([]byte(c.session), &spec); err != nil {
		return nil, nil, fmt.Errorf("session section: %v", err)
	}
	typ, err := session.ParseType(spec.Type)
	if err != nil {
		return nil, nil, err
	}
	a, err := reg.Lookup(typ)
	if err != nil {
		return nil, nil, err
	}
	if spec.Creator == "" && len(spec.Participants) > 0 {
		spec.Creator = spec.Participants[0]
	}
	meta := &session.Meta{ID: session.MustParseID("0192f0c4-8f4e-7a2b-9c3d-4e5f60718293"), Type: typ, Creator: spec.Creator,
		Knobs: spec.Knobs, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	for _, p := range spec.Participants {
		meta.Participants = append(meta.Participants, session.Participant{Name: p})
	}
	if c.graph != "" {
		if meta.Knobs == nil {
			meta.Knobs = map[string]json.RawMessage{}
		}
		meta.Knobs[workflow.KnobGraph] = json.RawMessage(c.graph)
	}
	return meta, a, nil
}
