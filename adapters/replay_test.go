package adapters_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

var recordReplay = flag.Bool("record-replay", false, "record the logs of testdata/replay that do not exist yet (a new session type or version) from recordings below; never overwrites one")

// The replay corpus: recorded logs, one per session type and version, that
// must keep replaying to their recorded final state after any change. A
// log is JSON lines: the session's hubpb.SessionMeta, its hubpb.Envelopes
// (both in the one JSON form), and last {"final_state": ...}, the machine's
// json.Marshal when it was recorded. Each envelope is folded through its
// stored form, as hydrating a session from the log does.
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
			typ, err := session.ParseType(meta.GetType())
			if err != nil {
				t.Fatal(err)
			}
			a, err := reg.Lookup(typ)
			if err != nil {
				t.Fatal(err)
			}
			m, err := adapters.NewMachine(a, meta)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range envs {
				m.Fold(viaStoredForm(t, e))
			}
			got, _ := json.Marshal(m)
			if !bytes.Equal(got, want) {
				t.Fatalf("replay of %s no longer gives its recorded state:\n got %s\nwant %s", file, got, want)
			}
		})
	}
}

func readCorpus(t *testing.T, file string) (*hubpb.SessionMeta, []*hubpb.Envelope, []byte) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var meta *hubpb.SessionMeta
	var envs []*hubpb.Envelope
	var final []byte
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		switch {
		case meta == nil:
			meta = &hubpb.SessionMeta{}
			if err := hubpb.UnmarshalJSON(line, meta); err != nil {
				t.Fatalf("%s:%d: %v", file, n, err)
			}
		case bytes.HasPrefix(line, []byte(`{"final_state":`)):
			var x struct {
				Final json.RawMessage `json:"final_state"`
			}
			if err := json.Unmarshal(line, &x); err != nil {
				t.Fatalf("%s:%d: %v", file, n, err)
			}
			final = x.Final
		default:
			e := &hubpb.Envelope{}
			if err := hubpb.UnmarshalJSON(line, e); err != nil {
				t.Fatalf("%s:%d: %v", file, n, err)
			}
			envs = append(envs, e)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if final == nil {
		t.Fatalf("%s has no final_state line", file)
	}
	return meta, envs, final
}

// recording is a scripted session recorded as a log of the corpus.
type recording struct {
	file  string
	spec  openSpec
	input string // envelopes in the JSON form, one a line
}

func recordings(t *testing.T) []recording {
	meta := func(s string) *hubpb.SessionMeta {
		m := &hubpb.SessionMeta{}
		if err := hubpb.UnmarshalJSON([]byte(s), m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	return []recording{
		{"workflow@1.jsonl", openSpec{typ: "workflow@1", participants: []string{"user", "router", "billing"}, creator: "user",
			more: meta(`{"knobs":{"max_handoffs":4,"context":{"tier":"gold"},"graph":{"initial_speaker":"user","transitions":[{"when":{"name":"tool_called","args":{"tool_name":"transfer_to_billing"}},"then":{"name":"agent","args":{"agent_id":"billing"}}},{"when":{"name":"from_speaker","args":{"agent_id":"user"}},"then":{"name":"active_agent","args":{"fallback":"router"}}}],"default_target":{"name":"agent","args":{"agent_id":"user"}},"max_turns":7}}}`)},
			`{"from":"user","type":"text","text":{"text":"invoice?"}}
{"from":"router","type":"packet","packet":{"body":"to billing","routing":{"kind":"handoff","tool":"transfer_to_billing"},"usage":{"input_tokens":12,"output_tokens":3,"cost_usd":0.002}}}
{"from":"billing","type":"context_set","context_set":{"set":{"ticket":"T-1"}}}
{"from":"billing","type":"text","text":{"text":"which one?"}}
{"from":"user","type":"text","text":{"text":"May"}}
{"from":"billing","type":"packet","packet":{"body":"fixed","routing":{"kind":"finish","reason":"resolved","summary":"refund"}}}`},
		{"conversation@1.jsonl", openSpec{typ: "conversation@1", participants: []string{"ann", "bob"}},
			`{"from":"ann","type":"text","text":{"text":"hi"}}
{"from":"bob","type":"question","question":{"question_id":"q1","text":"lunch?","options":[{"id":"y","label":"yes"},{"id":"n","label":"no"}]}}
{"from":"ann","type":"answer","answer":{"question_id":"q1","option_ids":["y"]}}
{"from":"bob","type":"app.note","custom":"bm90ZQ=="}
{"from":"bob","type":"text","text":{"text":"see you"}}`},
		{"discussion@1.jsonl", openSpec{typ: "discussion@1", participants: []string{"a", "b", "c"}, creator: "b", more: meta(`{"knobs":{"max_turns":4}}`)},
			`{"from":"b","type":"text","text":{"text":"1"}}
{"from":"c","type":"text","text":{"text":"2"}}
{"from":"a","type":"packet","packet":{"body":"3","context_updates":{"set":{"x":1}}}}
{"from":"b","type":"text","text":{"text":"4"}}`},
		{"consulting@1.jsonl", openSpec{typ: "consulting@1", participants: []string{"asker", "expert"}},
			`{"from":"asker","type":"text","text":{"text":"6*7?"}}
{"from":"expert","type":"text","text":{"text":"42"}}`},
	}
}

// recordCorpus writes the log of each recording that has none yet, by
// running it through a machine with a full lifecycle. A log once recorded
// is never rewritten: it is what the next versions must replay.
func recordCorpus(t *testing.T) {
	for _, r := range recordings(t) {
		path := filepath.Join("testdata/replay", r.file)
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Logf("%s exists: not recorded again", path)
			continue
		}
		if err := os.WriteFile(path, record(t, r), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %s", path)
	}
}

// record runs a recording and returns its log.
func record(t *testing.T, r recording) []byte {
	a, meta, err := r.spec.build(registry(t))
	if err != nil {
		t.Fatal(err)
	}
	m, err := adapters.NewMachine(a, meta)
	if err != nil {
		t.Fatal(err)
	}
	var log []*hubpb.Envelope
	apply := func(e *hubpb.Envelope) {
		e.SessionId, e.Seq, e.AcceptedAt = meta.GetSessionId(), m.Seq+1, session.Stamp(epoch.Add(time.Duration(m.Seq+1)*time.Second))
		if err := m.Admit(e); err != nil {
			t.Fatalf("%s: seq %d %s rejected: %v", r.file, e.GetSeq(), e.GetType(), err)
		}
		all, _ := m.Apply(e)
		log = append(log, all...)
	}
	invitees := session.Invitees(meta)
	apply(&hubpb.Envelope{Type: session.EventInvite, Audience: session.Only(invitees...),
		Payload: &hubpb.Envelope_Invite{Invite: &hubpb.Invite{Invitees: invitees}}})
	for _, n := range invitees {
		apply(&hubpb.Envelope{From: n, Type: session.EventInviteAck})
	}
	for _, line := range strings.Split(r.input, "\n") {
		e := &hubpb.Envelope{}
		if err := hubpb.UnmarshalJSON([]byte(line), e); err != nil {
			t.Fatal(err)
		}
		apply(e)
	}
	var b bytes.Buffer
	writeLine := func(raw []byte, err error) {
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(raw, '\n'))
	}
	writeLine(hubpb.MarshalJSON(meta))
	for _, e := range log {
		writeLine(hubpb.MarshalJSON(e))
	}
	final, err := json.Marshal(m)
	writeLine([]byte(fmt.Sprintf(`{"final_state":%s}`, final)), err)
	return b.Bytes()
}
