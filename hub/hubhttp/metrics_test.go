package hubhttp_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/internal/server"
)

// TestMetricsOffLoopback: on an HTTP address that is not loopback,
// /metrics answers operators only, as /debug/pprof does; on loopback it
// needs no credentials (TestPprofOperatorsOnly).
func TestMetricsOffLoopback(t *testing.T) {
	srv := start(t, true, func(c *server.Config) { c.HTTP = "0.0.0.0:0" })
	if r := do(t, srv, call{method: "GET", path: "/metrics"}); r.status != http.StatusUnauthorized || r.reason(t) != "UNAUTHENTICATED" {
		t.Errorf("anonymous /metrics on 0.0.0.0: %d %.200s", r.status, r.body)
	}
	if r := do(t, srv, call{method: "GET", path: "/metrics", header: map[string]string{"Authorization": "Bearer " + testToken}}); r.status != http.StatusForbidden || r.reason(t) != "PERMISSION_DENIED" {
		t.Errorf("alice's /metrics on 0.0.0.0: %d %.200s", r.status, r.body)
	}
	r := do(t, srv, call{method: "GET", path: "/metrics", header: map[string]string{"Authorization": "Bearer op-" + testToken}})
	if r.status != 200 || !strings.Contains(string(r.body), "hubd_sessions_quarantined 0") {
		t.Errorf("the operator's /metrics on 0.0.0.0: %d %.200s", r.status, r.body)
	}
	if r := do(t, srv, call{method: "GET", path: "/debug/pprof/cmdline"}); r.status != http.StatusUnauthorized {
		t.Errorf("anonymous pprof on 0.0.0.0: %d", r.status)
	}
}

// TestMetricsListen: Config.MetricsListen serves /metrics alone, with no
// credentials, on an address of its own.
func TestMetricsListen(t *testing.T) {
	srv := start(t, true, func(c *server.Config) { c.HTTP, c.MetricsListen = "0.0.0.0:0", "127.0.0.1:0" })
	get := func(path string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+srv.MetricsAddr()+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "hubd_sessions_quarantined 0") {
		t.Errorf("/metrics on the metrics address: %d %.200s", code, body)
	}
	for _, path := range []string{"/v1/sessions", "/debug/pprof/", "/", "/v1/auth/whoami"} {
		if code, _ := get(path); code != http.StatusNotFound {
			t.Errorf("%s on the metrics address: %d, want 404", path, code)
		}
	}
}
