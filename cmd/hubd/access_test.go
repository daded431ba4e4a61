package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/internal/wiretest"
)

// TestE2EAccessChecks runs the access checks on the real binary, over
// gRPC and HTTP: context variables for an audience, refusals to outsiders,
// every id field, the sign-in cookie, JSON bodies only, and a tree
// stream's cursors.
func TestE2EAccessChecks(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "", "--http", "127.0.0.1:0")
	agent := func(name string) hubsvc.HubClient { return devClient(t, d.addr, name) }
	t.Run("gRPC access", func(t *testing.T) { wiretest.Access(t, agent) })
	t.Run("gRPC ids", func(t *testing.T) { wiretest.BadIDs(t, agent) })
	base := "http://" + httpOf(t, d)
	id := wiretest.Pipeline(t, agent("alice"))
	hidden := &hubpb.Envelope{Type: "context_set", Audience: &hubpb.Audience{Names: []string{"alice"}},
		Payload: &hubpb.Envelope_ContextSet{ContextSet: &hubpb.ContextUpdate{Set: map[string]*structpb.Value{"hidden": structpb.NewStringValue("s3cr3t")}}}}
	if _, err := agent("alice").Send(context.Background(), &hubpb.SendRequest{SessionId: id, Envelope: hidden}); err != nil {
		t.Fatal(err)
	}
	t.Run("HTTP context", func(t *testing.T) {
		for who, want := range map[string]bool{"alice": true, "bob": false, "operator": true} {
			code, body := httpDo(t, "GET", base+"/v1/sessions/"+id, map[string]string{"X-Hubd-Agent": who}, "")
			if code != 200 || strings.Contains(body, "s3cr3t") != want {
				t.Errorf("%s: %d, reads the hidden context %v, want %v", who, code, !want, want)
			}
		}
	})
	t.Run("HTTP bodies are JSON", func(t *testing.T) {
		code, body := httpDo(t, "POST", base+"/v1/sessions", map[string]string{"X-Hubd-Agent": "alice", "Content-Type": "text/plain"},
			`{"type":"conversation@1","participants":[{"name":"bob","auto_accept":true}]}`)
		if code != http.StatusUnsupportedMediaType || !strings.Contains(body, `"reason":"MALFORMED"`) {
			t.Errorf("a text/plain open: %d %s", code, body)
		}
	})
	t.Run("HTTP tree cursors", func(t *testing.T) {
		var made []string
		for range 1400 {
			made = append(made, uuid.NewString()+":9")
		}
		h := map[string]string{"X-Hubd-Agent": "alice", "Last-Event-ID": "1," + strings.Join(made, ",")}
		if code, body := httpDo(t, "GET", base+"/v1/sessions/"+id+"/events?tree=true", h, ""); code != 400 || !strings.Contains(body, "at most 1024") {
			t.Errorf("1,400 made-up cursors: %d %.300s", code, body)
		}
	})
	t.Run("HTTP sign-out revokes the cookie", func(t *testing.T) {
		req, _ := http.NewRequest("POST", base+"/v1/auth/signin", strings.NewReader(`{"agent":"alice"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var jar []string
		for _, c := range resp.Cookies() {
			if c.Value != "" {
				jar = append(jar, c.Name+"="+c.Value)
			}
		}
		cookie := map[string]string{"Cookie": strings.Join(jar, "; ")}
		if code, body := httpDo(t, "GET", base+"/v1/auth/whoami", cookie, ""); code != 200 || !strings.Contains(body, `"signed_in":true`) {
			t.Fatalf("signed in: %d %s", code, body)
		}
		if code, _ := httpDo(t, "POST", base+"/v1/auth/signout", cookie, ""); code != http.StatusNoContent {
			t.Fatalf("sign-out: %d", code)
		}
		if code, body := httpDo(t, "GET", base+"/v1/auth/whoami", cookie, ""); !strings.Contains(body, `"signed_in":false`) {
			t.Errorf("the signed-out cookie still signs in: %d %s", code, body)
		}
	})
}

// httpOf returns the HTTP address of d's "hubd listening" line.
func httpOf(t *testing.T, d *daemon) string {
	t.Helper()
	for _, line := range strings.Split(d.log(), "\n") {
		var l struct{ Message, HTTP string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Message == "hubd listening" && l.HTTP != "" {
			return l.HTTP
		}
	}
	t.Fatalf("hubd names no HTTP address:\n%s", d.log())
	return ""
}

// httpDo makes an HTTP request and returns its status and body (not an
// event stream's).
func httpDo(t *testing.T, method, url string, header map[string]string, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		return resp.StatusCode, "(an event stream)" // it would not end
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
