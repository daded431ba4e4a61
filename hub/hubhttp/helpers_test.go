package hubhttp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/internal/server"
)

// testToken is the token of the agent "alice" in token-mode tests; bob's
// is testToken with "b" for "a", the operator's "op-"+testToken.
const testToken = "alice-token-0123456789"

// start runs a real hubd (in-memory log) with its HTTP side on a free
// loopback port, in development mode unless tokens is set.
func start(t *testing.T, tokens bool, mod ...func(*server.Config)) *server.Server {
	t.Helper()
	cfg := server.Config{Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0", InMemory: true, Logger: zerolog.Nop()}
	if tokens {
		tk, err := hubgrpc.ParseTokens(strings.NewReader(
			"alice " + testToken + "\nbob " + strings.Replace(testToken, "a", "b", 1) + "\nops op-" + testToken + " operator\n"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Tokens = tk
	}
	for _, f := range mod {
		f(&cfg)
	}
	srv, err := server.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return srv
}

// dial connects an agent over gRPC in development mode.
func dial(t *testing.T, srv *server.Server, name string) *agentsdk.Client {
	t.Helper()
	c, err := agentsdk.Dial(context.Background(), srv.Addr(), agentsdk.Options{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// call is one HTTP request, as curl would make it.
type call struct {
	method, path, body string
	header             map[string]string
}

// reply is an HTTP answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the answer's body.
func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("answer %d %q is not JSON: %v", r.status, r.body, err)
	}
	return m
}

// reason is the hubd reason of an error answer.
func (r reply) reason(t *testing.T) string {
	t.Helper()
	details, _ := r.json(t)["details"].([]any)
	for _, d := range details {
		if m, ok := d.(map[string]any); ok && m["domain"] == "hubd" {
			return fmt.Sprint(m["reason"])
		}
	}
	return ""
}

// do makes the request on the server's HTTP side.
func do(t *testing.T, srv *server.Server, c call) reply {
	t.Helper()
	return doWith(t, http.DefaultClient, srv, c)
}

func doWith(t *testing.T, client *http.Client, srv *server.Server, c call) reply {
	t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, c.method, "http://"+srv.HTTPAddr()+c.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// as names the agent in development mode.
func as(agent string) map[string]string { return map[string]string{hubgrpc.AgentHeader: agent} }

// event is one server-sent event.
type event struct {
	id, name, data string
	comment        bool
}

// sse reads an event stream.
type sse struct {
	resp *http.Response
	sc   *bufio.Scanner
	stop context.CancelFunc
}

// openEvents starts an event stream; lastID, when set, is sent as
// Last-Event-ID.
func openEvents(t *testing.T, srv *server.Server, path, lastID string, header map[string]string) *sse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+srv.HTTPAddr()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &sse{resp: resp, sc: bufio.NewScanner(resp.Body), stop: cancel}
	t.Cleanup(s.close)
	return s
}

func (s *sse) close() {
	s.stop()
	s.resp.Body.Close()
}

// next reads the next event or comment; io.EOF at the end of the stream.
func (s *sse) next() (event, error) {
	var e event
	seen := false
	for s.sc.Scan() {
		line := s.sc.Text()
		if line == "" {
			if seen {
				return e, nil
			}
			continue
		}
		seen = true
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimPrefix(v, " ")
		switch k {
		case "":
			e.comment, e.data = true, v
		case "id":
			e.id = v
		case "event":
			e.name = v
		case "data":
			e.data = v
		}
	}
	if err := s.sc.Err(); err != nil {
		return e, err
	}
	return e, io.EOF
}

// nextEvent skips comments and the retry hint.
func (s *sse) nextEvent(t *testing.T) event {
	t.Helper()
	for {
		e, err := s.next()
		if err != nil {
			t.Fatalf("event stream: %v", err)
		}
		if !e.comment && (e.name != "" || e.data != "") {
			return e
		}
	}
}
