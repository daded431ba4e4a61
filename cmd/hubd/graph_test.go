package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hubd/hubd/internal/exitcode"
)

// runCmd runs the program in-process and returns its exit code and output.
func runCmd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	code = exitcode.Report("hubd", err, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const pipelineGraph = "../../examples/graphs/pipeline.json"

func TestGraphValidate(t *testing.T) {
	bad := writeFile(t, "bad.json", `{"initial_speaker":"a","transitions":[{"when":{"name":"always"},"then":{"name":"agent","args":{"agent_id":"zed"}}}]}`)
	notJSON := writeFile(t, "nj.json", `{"initial_speaker":`)
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{"ok", []string{"graph", "validate", pipelineGraph}, 0, "ok: 2 transitions, initial speaker researcher", ""},
		{"participants inferred", []string{"graph", "validate", pipelineGraph}, 0, "participants researcher, writer, editor (inferred from the graph; give --participants to check it against a session's), default", ""},
		{"ok against participants", []string{"graph", "validate", "--participants", "researcher,writer,editor,extra", pipelineGraph}, 0, "participants researcher, writer, editor, extra, default", ""},
		{"flags after the file", []string{"graph", "validate", pipelineGraph, "--participants", "researcher,writer,editor"}, 0, "participants researcher, writer, editor, default", ""},
		{"participant missing", []string{"graph", "validate", "--participants", "researcher,writer", pipelineGraph}, 2, "", `transitions[1].then (agent): agent "editor" is not a participant`},
		{"agent not named anywhere else is still a participant", []string{"graph", "validate", bad}, 0, "participants a, zed", ""},
		{"against participants", []string{"graph", "validate", "--participants", "a,b", bad}, 2, "", `transitions[0].then (agent): agent "zed" is not a participant (participants: a, b)`},
		{"not JSON", []string{"graph", "validate", notJSON}, 2, "", "invalid graph"},
		{"missing file", []string{"graph", "validate", "/nonexistent.json"}, 2, "", "no such file"},
		{"no file", []string{"graph", "validate"}, 2, "", "want one FILE"},
		{"two files", []string{"graph", "validate", pipelineGraph, "--", "--participants"}, 2, "", "want one FILE, got 2"},
		{"unknown subcommand", []string{"graph", "frobnicate"}, 2, "", `graph: unknown command "frobnicate" (want validate, render, simulate; see hubd graph --help)`},
		{"unknown command", []string{"frobnicate"}, 2, "", `unknown command "frobnicate" (see hubd --help)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCmd(t, "", tc.args...)
			if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errs, tc.err) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q", code, out, errs, tc.code, tc.out, tc.err)
			}
		})
	}
}

func TestGraphRender(t *testing.T) {
	code, out, errs := runCmd(t, "", "graph", "render", pipelineGraph)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"flowchart TD", `n1["researcher"]`, "start((start)) --> n1", `n1 -->|"1. from_speaker(researcher)"| n2`,
		`n4{{"any speaker"}}`, `n5(["end: sequence_complete"])`, `n4 -->|"otherwise"| n5`, `n4 -.->|"turn 3 reached"| n6`} {
		if !strings.Contains(out, want) {
			t.Errorf("render output lacks %q:\n%s", want, out)
		}
	}
}

func TestGraphSimulate(t *testing.T) {
	stdin := strings.Join([]string{
		`{"from":"researcher","type":"text","text":{"text":"notes"}}`,
		`{"from":"editor","type":"text","text":{"text":"me first"}}`,
		``,
		`{"from":"writer","type":"packet","packet":{"body":"draft","context_updates":{"set":{"words":120}}}}`,
		`{"from":"editor","type":"context_set","context_set":{"set":{"k":"v"}}}`,
		`{"from":"editor","type":"EV_TEXT","text":{"text":"done"}}`,
		`{"from":"writer","type":"text","text":{"text":"late"}}`,
		`{"type":"text","text":{"text":"no sender"}}`,
		`{"from":"writer","type":"text","txt":"typo"}`,
		`{"from":"writer","type":"text","text":"the old flat form"}`,
	}, "\n")
	code, out, errs := runCmd(t, stdin, "graph", "simulate", "--graph", pipelineGraph, "--participants", "researcher,writer,editor", "--context", `{"lang":"en"}`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := []map[string]any{
		{"seq": 1.0, "accepted": true, "next": "writer", "turn": 1.0, "closed": false},
		{"accepted": false, "code": "OUT_OF_TURN", "error": `workflow expects "writer" to speak, got "editor"`},
		{"seq": 2.0, "accepted": true, "next": "editor", "turn": 2.0},
		{"seq": 3.0, "accepted": true, "next": "editor", "turn": 2.0},
		{"seq": 4.0, "accepted": true, "next": nil, "turn": 3.0, "closed": true, "reason": "sequence_complete", "fired": "default_target terminate(sequence_complete)"},
		{"accepted": false, "code": "SESSION_CLOSED"},
		{"accepted": false, "code": "MALFORMED", "error": `the envelope needs a "from"`},
		{"accepted": false, "code": "MALFORMED"},
		{"accepted": false, "code": "MALFORMED"},
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, line := range lines {
		var got map[string]any
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		for k, v := range want[i] {
			if got[k] != v {
				t.Errorf("line %d: %s = %v, want %v (%s)", i+1, k, got[k], v, line)
			}
		}
	}
	if !strings.Contains(lines[8], `want e.g. {\"from\":\"a\",\"type\":\"text\",\"text\":{\"text\":\"hi\"}}`) {
		t.Errorf("a line in the old form does not say the form wanted: %s", lines[8])
	}
	var last map[string]any
	_ = json.Unmarshal([]byte(lines[4]), &last)
	if ctx, _ := json.Marshal(last["context"]); string(ctx) != `{"k":"v","lang":"en","words":120}` {
		t.Errorf("context = %s", ctx)
	}
}

func TestGraphSimulateErrors(t *testing.T) {
	for _, tc := range []struct {
		name, stdin string
		args        []string
		err         string
	}{
		{"line not JSON", "{\"from\":\"researcher\",\"type\":\"text\",\"text\":\"x\"}\nnot json\n",
			[]string{"--graph", pipelineGraph, "--participants", "researcher,writer,editor"}, "stdin line 2 is not JSON"},
		{"missing graph", "", []string{"--participants", "a,b"}, "--graph and --participants are required"},
		{"bad flag", "", []string{"--nope"}, "flag provided but not defined"},
		{"bad context", "", []string{"--graph", pipelineGraph, "--participants", "researcher,writer,editor", "--context", "{"}, "--context is not JSON"},
		{"graph against participants", "", []string{"--graph", pipelineGraph, "--participants", "researcher,writer"}, `agent "editor" is not a participant`},
		{"bad max handoffs", "", []string{"--graph", pipelineGraph, "--participants", "researcher,writer,editor", "--max-handoffs", "-1"}, "max_handoffs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runCmd(t, tc.stdin, append([]string{"graph", "simulate"}, tc.args...)...)
			if code != 2 || !strings.Contains(errs, tc.err) {
				t.Errorf("exit %d, stderr %q; want exit 2 with %q", code, errs, tc.err)
			}
		})
	}
}

// TestExampleGraphs checks every shipped graph validates and every shipped
// simulation input (examples/graphs/NAME.jsonl, against NAME.json) runs
// with exactly the rejections it shows on purpose, and ends its session.
func TestExampleGraphs(t *testing.T) {
	graphs, _ := filepath.Glob("../../examples/graphs/*.json")
	if len(graphs) == 0 {
		t.Fatal("no example graphs")
	}
	for _, g := range graphs {
		if code, _, errs := runCmd(t, "", "graph", "validate", g); code != 0 {
			t.Errorf("%s: exit %d: %s", g, code, errs)
		}
	}
	for name, tc := range map[string]struct{ participants, codes string }{
		"pipeline": {"researcher,writer,editor", "ok OUT_OF_TURN ok ok SESSION_CLOSED"},
		"triage":   {"router,billing,tech", "ok OUT_OF_TURN ok ok"},
	} {
		input, err := os.ReadFile("../../examples/graphs/" + name + ".jsonl")
		if err != nil {
			t.Fatal(err)
		}
		code, out, errs := runCmd(t, string(input), "graph", "simulate", "--graph", "../../examples/graphs/"+name+".json", "--participants", tc.participants)
		var codes []string
		closed := false
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var step struct {
				Accepted, Closed bool
				Code             string
			}
			json.Unmarshal([]byte(line), &step)
			closed = closed || step.Closed
			if step.Accepted {
				step.Code = "ok"
			}
			codes = append(codes, step.Code)
		}
		if got := strings.Join(codes, " "); code != 0 || got != tc.codes || !closed {
			t.Errorf("%s.jsonl: exit %d, results %q (closed %v), want %q and a close\n%s%s", name, code, got, closed, tc.codes, out, errs)
		}
	}
	if jsonl, _ := filepath.Glob("../../examples/graphs/*.jsonl"); len(jsonl) != 2 {
		t.Errorf("simulation inputs %v: add the new ones to this test", jsonl)
	}
}

func TestExitCode(t *testing.T) {
	var b bytes.Buffer
	if exitcode.Report("hubd", nil, &b) != 0 || exitcode.Report("hubd", errors.New("x"), &b) != 1 || exitcode.Report("hubd", exitcode.Usage("y"), &b) != 2 {
		t.Error("exit codes")
	}
}
