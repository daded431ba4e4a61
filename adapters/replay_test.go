package adapters_test

import (
	"bufio"
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
	"github.com/hubd/hubd/session"
)

var recordReplay = flag.Bool("record-replay", false, "record testdata/replay anew from the cases below (only for a deliberate format change)")

// The replay corpus: recorded logs, one per session type and version, that
// must keep replaying to their recorded final state after any change. A
// log is JSON lines: the session's metadata, its envelopes, and last
// {"final_state": ...}.
func TestReplayCorpus(t *testing.T) {
	if *recordReplay {
		recordCorpus(t)
	}
	files, _ := filepath.Glob("testdata/replay/*.jsonl")
	if len(files) < 4 {
		t.Fatalf("replay corpus has %d logs, want one per session type", len(files))
	}
	reg := registry(t)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			meta, envs, want := readCorpus(t, file)
			a, err := reg.Lookup(meta.Type)
			if err != nil {
				t.Fatal(err)
			}
			m, err := adapters.NewMachine(a, meta)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range envs {
				b, _ := e.MarshalBinary()
				d, err := session.DecodeEnvelope(b)
				if err != nil {
					t.Fatal(err)
				}
				m.Fold(d)
			}
			got, _ := json.Marshal(m)
			if !bytes.Equal(got, want) {
				t.Fatalf("replay of %s no longer gives its recorded state:\n got %s\nwant %s", file, got, want)
			}
		})
	}
}

func readCorpus(t *testing.T, file string) (*session.Meta, []*session.Envelope, []byte) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var meta *session.Meta
	var envs []*session.Envelope
	var final []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case meta == nil:
			if meta, err = session.DecodeMeta(line); err != nil {
				t.Fatal(err)
			}
		case bytes.HasPrefix(line, []byte(`{"final_state":`)):
			var x struct {
				Final json.RawMessage `json:"final_state"`
			}
			_ = json.Unmarshal(line, &x)
			final = x.Final
		default:
			e := &session.Envelope{}
			if err := json.Unmarshal(line, e); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			envs = append(envs, e)
		}
	}
	return meta, envs, final
}

// recordCorpus writes one log per session type by running a scripted
// session through a dry run with a full lifecycle.
func recordCorpus(t *testing.T) {
	for _, c := range []struct{ file, session, graph, input string }{
		{"workflow@1.jsonl", `{"type":"workflow@1","participants":["user","router","billing"],"creator":"user","knobs":{"max_handoffs":4,"context":{"tier":"gold"}}}`,
			`{"initial_speaker":"user","transitions":[{"when":{"name":"tool_called","args":{"tool_name":"transfer_to_billing"}},"then":{"name":"agent","args":{"agent_id":"billing"}}},{"when":{"name":"from_speaker","args":{"agent_id":"user"}},"then":{"name":"active_agent","args":{"fallback":"router"}}}],"default_target":{"name":"agent","args":{"agent_id":"user"}},"max_turns":7}`,
			`{"from":"user","type":"text","text":"invoice?"}
{"from":"router","type":"packet","body":"to billing","routing":{"kind":"handoff","tool":"transfer_to_billing"},"usage":{"input_tokens":12,"output_tokens":3,"cost_usd":0.002}}
{"from":"billing","type":"context_set","set":{"ticket":"T-1"}}
{"from":"billing","type":"text","text":"which one?"}
{"from":"user","type":"text","text":"May"}
{"from":"billing","type":"packet","body":"fixed","routing":{"kind":"finish","reason":"resolved","summary":"refund"}}`},
		{"conversation@1.jsonl", `{"type":"conversation@1","participants":["ann","bob"]}`, "",
			`{"from":"ann","type":"text","text":"hi"}
{"from":"bob","type":"question","question_id":"q1","text":"lunch?","options":[{"id":"y","label":"yes"},{"id":"n","label":"no"}]}
{"from":"ann","type":"answer","question_id":"q1","option_ids":["y"]}
{"from":"bob","type":"app.note","data":"bm90ZQ=="}
{"from":"bob","type":"text","text":"see you"}`},
		{"discussion@1.jsonl", `{"type":"discussion@1","participants":["a","b","c"],"creator":"b","knobs":{"max_turns":4}}`, "",
			`{"from":"b","type":"text","text":"1"}
{"from":"c","type":"text","text":"2"}
{"from":"a","type":"packet","body":"3","context_updates":{"set":{"x":1}}}
{"from":"b","type":"text","text":"4"}`},
		{"consulting@1.jsonl", `{"type":"consulting@1","participants":["asker","expert"]}`, "",
			`{"from":"asker","type":"text","text":"6*7?"}
{"from":"expert","type":"text","text":"42"}`},
	} {
		sc := &scriptCase{session: c.session, graph: c.graph}
		meta, a, err := sc.meta(registry(t))
		if err != nil {
			t.Fatal(err)
		}
		m, err := adapters.NewMachine(a, meta)
		if err != nil {
			t.Fatal(err)
		}
		var log []*session.Envelope
		apply := func(e *session.Envelope) {
			e.Session, e.Seq, e.AcceptedAt = meta.ID, m.Seq+1, meta.CreatedAt.Add(time.Duration(m.Seq+1)*time.Second)
			if err := m.Admit(e); err != nil {
				t.Fatalf("%s: seq %d %s rejected: %v", c.file, e.Seq, e.Type, err)
			}
			all, _ := m.Apply(e)
			log = append(log, all...)
		}
		apply(&session.Envelope{Type: session.EventInvite, Payload: session.Invite{Invitees: meta.Invitees()}, Audience: session.Only(meta.Invitees()...)})
		for _, n := range meta.Invitees() {
			apply(&session.Envelope{From: n, Type: session.EventInviteAck})
		}
		for _, line := range strings.Split(c.input, "\n") {
			var e session.Envelope
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatal(err)
			}
			apply(&e)
		}
		var b bytes.Buffer
		mb, _ := session.EncodeMeta(meta)
		b.Write(append(mb, '\n'))
		for _, e := range log {
			eb, _ := json.Marshal(e)
			b.Write(append(eb, '\n'))
		}
		final, _ := json.Marshal(m)
		fmt.Fprintf(&b, "{\"final_state\":%s}\n", final)
		if err := os.WriteFile(filepath.Join("testdata/replay", c.file), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
