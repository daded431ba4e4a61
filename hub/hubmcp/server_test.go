package hubmcp_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubmcp"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
)

// relayGraph passes the turn from alice to bob to carol, then ends.
const relayGraph = `{"version":1,"initial_speaker":"alice","transitions":[
 {"when":{"name":"from_speaker","args":{"agent_id":"alice"}},"then":{"name":"agent","args":{"agent_id":"bob"}}},
 {"when":{"name":"from_speaker","args":{"agent_id":"bob"}},"then":{"name":"agent","args":{"agent_id":"carol"}}}],
 "default_target":{"name":"terminate","args":{"reason":"done"}},"max_turns":3}`

// fixture is a real hub on loopback, an agent's MCP session over it (bob),
// and Go clients for the others.
type fixture struct {
	srv          *server.Server
	alice, carol *agentsdk.Client
	bob          *mcp.ClientSession
}

func start(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	srv, err := server.Start(ctx, server.Config{Listen: "127.0.0.1:0", InMemory: true, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	f := &fixture{srv: srv, alice: dial(t, srv, "alice"), carol: dial(t, srv, "carol")}
	g := &structpb.Struct{}
	if err := g.UnmarshalJSON([]byte(relayGraph)); err != nil {
		t.Fatal(err)
	}
	s := hubmcp.New(dial(t, srv, "bob").Raw(), hubmcp.Options{Version: "test", Workflows: map[string]*structpb.Struct{"relay": g}})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	f.bob, err = mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.bob.Close() })
	return f
}

func dial(t *testing.T, srv *server.Server, name string) *agentsdk.Client {
	t.Helper()
	c, err := agentsdk.Dial(context.Background(), srv.Addr(), agentsdk.Options{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// call calls a tool with JSON arguments and returns its result.
func call(t *testing.T, s *mcp.ClientSession, name, args string) *mcp.CallToolResult {
	t.Helper()
	r, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	return r
}

// ok is a tool's structured answer, which must not be an error.
func ok(t *testing.T, r *mcp.CallToolResult) map[string]any {
	t.Helper()
	if r.IsError {
		t.Fatalf("refused: %s", text(r))
	}
	b, err := json.Marshal(r.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestTools lists the tools: each is an RPC of the hub with the schemas
// of its messages, and open_session offers the hub's named workflows.
func TestTools(t *testing.T) {
	f := start(t)
	res, err := f.bob.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		byName[tl.Name] = tl
	}
	for _, n := range []string{"pending_turns", "list_sessions", "get_session", "get_view", "read_log", "send", "accept_invite",
		"list_questions", "answer_question", "delegate", "get_tree", "close_session", "open_session"} {
		if byName[n] == nil {
			t.Errorf("no tool %s among %d", n, len(res.Tools))
		}
	}
	props := func(n string) map[string]any {
		in, _ := byName[n].InputSchema.(map[string]any)
		p, _ := in["properties"].(map[string]any)
		return p
	}
	if p := props("send"); p["session_id"] == nil || p["envelope"] == nil {
		t.Errorf("send's input properties: %v", p)
	}
	defs, _ := byName["send"].InputSchema.(map[string]any)["$defs"].(map[string]any)
	env, _ := defs["hubd.v1.Envelope"].(map[string]any)
	if p, _ := env["properties"].(map[string]any); p["client_msg_id"] == nil || p["text"] == nil || p["question"] == nil {
		t.Errorf("the envelope's schema: %v", env)
	}
	wf, _ := props("open_session")["workflow"].(map[string]any)
	if e, _ := wf["enum"].([]any); !slices.Equal(e, []any{"relay"}) {
		t.Errorf("open_session's workflow: %v", wf)
	}
	if out, _ := byName["get_session"].OutputSchema.(map[string]any); out["properties"].(map[string]any)["meta"] == nil {
		t.Errorf("get_session's output schema: %v", out)
	}
}

// TestTakesATurn has an MCP host's model (bob) open a named workflow,
// find its turn, read the view, be refused out of turn, reply, answer a
// question and read the transcript.
func TestTakesATurn(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	opened := ok(t, call(t, f.bob, "open_session", `{"workflow":"relay","participants":[{"name":"alice","auto_accept":true},{"name":"carol","auto_accept":true}]}`))
	id := opened["session"].(map[string]any)["meta"].(map[string]any)["session_id"].(string)

	early := call(t, f.bob, "send", `{"session_id":"`+id+`","envelope":{"type":"text","text":{"text":"too soon"}}}`)
	if !early.IsError || !strings.HasPrefix(text(early), "OUT_OF_TURN: ") {
		t.Errorf("bob before his turn: error %v, %s", early.IsError, text(early))
	}
	if _, err := f.alice.SendText(ctx, id, "the facts"); err != nil {
		t.Fatal(err)
	}
	turns := ok(t, call(t, f.bob, "pending_turns", `{}`))
	if !strings.Contains(mustJSON(t, turns), id) {
		t.Errorf("pending_turns does not name %s: %v", id, turns)
	}
	if v := mustJSON(t, ok(t, call(t, f.bob, "get_view", `{"session_id":"`+id+`"}`))); !strings.Contains(v, "the facts") {
		t.Errorf("the view lacks alice's text: %s", v)
	}
	bad := call(t, f.bob, "send", `{"session_id":"`+id+`","bogus":1}`)
	if !bad.IsError || !strings.HasPrefix(text(bad), "MALFORMED: ") {
		t.Errorf("an unknown argument: error %v, %s", bad.IsError, text(bad))
	}
	sent := ok(t, call(t, f.bob, "send", `{"session_id":"`+id+`","envelope":{"type":"text","text":{"text":"the draft"}}}`))
	if sent["seq"] == nil {
		t.Errorf("send's answer: %v", sent)
	}
	q := &hubpb.Envelope{Type: agentsdk.EventQuestion, Payload: &hubpb.Envelope_Question{Question: &hubpb.Question{
		QuestionId: "q1", Text: "ship it?", Answerer: "bob", Options: []*hubpb.Option{{Id: "yes"}, {Id: "no"}}}}}
	if _, err := f.carol.Send(ctx, id, q); err != nil {
		t.Fatal(err)
	}
	if qs := mustJSON(t, ok(t, call(t, f.bob, "list_questions", `{}`))); !strings.Contains(qs, "ship it?") {
		t.Errorf("list_questions: %s", qs)
	}
	ok(t, call(t, f.bob, "answer_question", `{"session_id":"`+id+`","answer":{"question_id":"q1","option_ids":["yes"]}}`))
	res, err := f.bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: "hubd://sessions/" + id + "/transcript"})
	if err != nil {
		t.Fatal(err)
	}
	tr := res.Contents[0].Text
	for _, want := range []string{"the facts", "the draft", "ship it?", `"option_ids":["yes"]`} {
		if !strings.Contains(tr, want) {
			t.Errorf("the transcript lacks %q:\n%s", want, tr)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
