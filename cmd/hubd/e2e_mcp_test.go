package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hubd/hubd/hubpb"
)

// relayJSON passes the turn from alice to bob to carol, then ends.
const relayJSON = `{"version":1,"initial_speaker":"alice","transitions":[
 {"when":{"name":"from_speaker","args":{"agent_id":"alice"}},"then":{"name":"agent","args":{"agent_id":"bob"}}},
 {"when":{"name":"from_speaker","args":{"agent_id":"bob"}},"then":{"name":"agent","args":{"agent_id":"carol"}}}],
 "default_target":{"name":"terminate","args":{"reason":"done"}},"max_turns":3}`

// headerTransport adds headers to every request.
type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mcpCall calls a tool and returns its result's text, failing on an error
// result unless refused is set.
func mcpCall(t *testing.T, s *mcp.ClientSession, name, args string) (string, bool) {
	t.Helper()
	r, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), r.IsError
}

// TestE2EMCP has two MCP hosts take part in a named workflow on the real
// binary with the MCP Go SDK's client: bob's through `hubd mcp` over
// stdio, carol's through the hub's /mcp endpoint. Bob opens the session
// by the workflow's name and replies on his turn, after a refusal out of
// turn; carol asks him a question that he answers as a tool; carol's
// reply ends the session. /mcp refuses a request that names nobody.
func TestE2EMCP(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "relay.json"), []byte(relayJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, t.TempDir(), "", "--http", "127.0.0.1:0", "--workflows", dir)
	ctx := context.Background()
	alice := devClient(t, d.addr, "alice")
	host := func(tr mcp.Transport) *mcp.ClientSession {
		s, err := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, nil).Connect(ctx, tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	bob := host(&mcp.CommandTransport{Command: exec.Command(hubdBinary(t), "mcp", "--hub", d.addr, "--as", "bob", "--workflows", dir)})
	endpoint := "http://" + d.httpAddr(t) + "/mcp"
	carol := host(&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: headerTransport{"X-Hubd-Agent": "carol"}}})

	out, refused := mcpCall(t, bob, "open_session", `{"workflow":"relay","participants":[{"name":"alice","auto_accept":true},{"name":"carol","auto_accept":true}]}`)
	if refused {
		t.Fatalf("open_session: %s", out)
	}
	var opened hubpb.OpenResponse
	if err := hubpb.UnmarshalJSON([]byte(out), &opened); err != nil {
		t.Fatal(err)
	}
	id := opened.GetSession().GetMeta().GetSessionId()
	reply := `{"session_id":"` + id + `","envelope":{"type":"text","text":{"text":"TEXT"}}}`
	if out, refused := mcpCall(t, bob, "send", strings.Replace(reply, "TEXT", "too soon", 1)); !refused || !strings.HasPrefix(out, "OUT_OF_TURN: ") {
		t.Errorf("bob out of turn: %v %s", refused, out)
	}
	if _, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: "text", Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "the facts"}}}}); err != nil {
		t.Fatal(err)
	}
	if out, _ := mcpCall(t, bob, "pending_turns", `{}`); !strings.Contains(out, id) || !strings.Contains(out, "the facts") {
		t.Errorf("bob's pending turns: %s", out)
	}
	if out, refused := mcpCall(t, bob, "send", strings.Replace(reply, "TEXT", "the draft", 1)); refused {
		t.Fatalf("bob's reply: %s", out)
	}
	ask := `{"session_id":"` + id + `","envelope":{"type":"question","question":{"question_id":"q1","text":"ship it?","answerer":"bob","options":[{"id":"yes"},{"id":"no"}]}}}`
	if out, refused := mcpCall(t, carol, "send", ask); refused {
		t.Fatalf("carol's question: %s", out)
	}
	if out, _ := mcpCall(t, bob, "list_questions", `{}`); !strings.Contains(out, "ship it?") {
		t.Errorf("bob's questions: %s", out)
	}
	if out, refused := mcpCall(t, bob, "answer_question", `{"session_id":"`+id+`","answer":{"question_id":"q1","option_ids":["yes"]}}`); refused {
		t.Fatalf("bob's answer: %s", out)
	}
	if out, refused := mcpCall(t, carol, "send", strings.Replace(reply, "TEXT", "shipped", 1)); refused {
		t.Fatalf("carol's reply: %s", out)
	}
	if out, _ := mcpCall(t, carol, "get_session", `{"session_id":"`+id+`"}`); !strings.Contains(out, `"state":"CLOSED"`) {
		t.Errorf("the session after carol's reply: %s", out)
	}
	res, err := bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: "hubd://sessions/" + id + "/transcript"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the facts", "the draft", "ship it?", "shipped"} {
		if !strings.Contains(res.Contents[0].Text, want) {
			t.Errorf("the transcript lacks %q", want)
		}
	}
	code, body := httpDo(t, "POST", endpoint, map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if code != http.StatusUnauthorized || !strings.Contains(body, "UNAUTHENTICATED") {
		t.Errorf("/mcp naming nobody: %d %s", code, body)
	}
}

// TestE2EMCPTokens: with --tokens, an MCP host is the agent its token
// names, over stdio (hubd mcp --token) and /mcp (a bearer token), and may
// do only what that agent may: bob accepts alice's invitation and
// replies, and is refused the close of alice's session; a wrong token is
// refused.
func TestE2EMCPTokens(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("alice alice-mcp-token-000001\nbob bob-mcp-token-0000002\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, t.TempDir(), "", "--tokens", tokens, "--http", "127.0.0.1:0")
	ctx := context.Background()
	host := func(tr mcp.Transport) *mcp.ClientSession {
		s, err := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, nil).Connect(ctx, tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	endpoint := "http://" + d.httpAddr(t) + "/mcp"
	alice := host(&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: headerTransport{"Authorization": "Bearer alice-mcp-token-000001"}}})
	bob := host(&mcp.CommandTransport{Command: exec.Command(hubdBinary(t), "mcp", "--hub", d.addr, "--token", "bob-mcp-token-0000002")})
	out, refused := mcpCall(t, alice, "open_session", `{"type":"conversation@1","participants":[{"name":"bob"}]}`)
	if refused {
		t.Fatalf("alice's open: %s", out)
	}
	var opened hubpb.OpenResponse
	if err := hubpb.UnmarshalJSON([]byte(out), &opened); err != nil {
		t.Fatal(err)
	}
	id := opened.GetSession().GetMeta().GetSessionId()
	if out, refused := mcpCall(t, bob, "accept_invite", `{"session_id":"`+id+`"}`); refused {
		t.Fatalf("bob's accept: %s", out)
	}
	say := func(s *mcp.ClientSession, text string) (string, bool) {
		return mcpCall(t, s, "send", `{"session_id":"`+id+`","envelope":{"type":"text","text":{"text":"`+text+`"}}}`)
	}
	if out, refused := say(alice, "hello bob"); refused {
		t.Fatalf("alice's turn: %s", out)
	}
	if out, refused := say(bob, "hello alice"); refused {
		t.Errorf("bob's turn: %s", out)
	}
	if out, refused := mcpCall(t, bob, "close_session", `{"session_id":"`+id+`","reason":"mine now"}`); !refused || !strings.HasPrefix(out, "PERMISSION_DENIED: ") {
		t.Errorf("bob closing alice's session: %v %s", refused, out)
	}
	code, body := httpDo(t, "POST", endpoint, map[string]string{"Authorization": "Bearer bob-mcp-token-000000X",
		"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if code != http.StatusUnauthorized || !strings.Contains(body, "UNAUTHENTICATED") {
		t.Errorf("/mcp with a wrong token: %d %s", code, body)
	}
}
