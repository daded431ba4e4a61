package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeMetricsListen runs `hubd serve` with tokens on 0.0.0.0 and
// --metrics-listen: /metrics on the HTTP address is an operator's
// (anonymous: 401), and the metrics address serves it to anyone.
func TestServeMetricsListen(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("alice alice-secret-token-1\nops ops-secret-token-12 operator\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--log-format", "json",
			"--tokens", tokens, "--insecure-tokens", "--http", "0.0.0.0:0", "--metrics-listen", "127.0.0.1:0"}, nil, io.Discard, pw)
		pw.Close()
	}()
	var addrs struct{ Message, HTTP, Metrics string }
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if json.Unmarshal(sc.Bytes(), &addrs) == nil && addrs.Message == "hubd listening" {
			break
		}
	}
	go io.Copy(io.Discard, pr)
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	if addrs.HTTP == "" || addrs.Metrics == "" {
		t.Fatalf("hubd listening names http %q and metrics %q", addrs.HTTP, addrs.Metrics)
	}
	get := func(url, token string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("http://"+addrs.HTTP+"/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("anonymous /metrics on %s: %d %.200s", addrs.HTTP, code, body)
	}
	if code, _ := get("http://"+addrs.HTTP+"/metrics", "alice-secret-token-1"); code != http.StatusForbidden {
		t.Errorf("alice's /metrics on %s: %d", addrs.HTTP, code)
	}
	if code, body := get("http://"+addrs.HTTP+"/metrics", "ops-secret-token-12"); code != 200 || !strings.Contains(body, "hubd_") {
		t.Errorf("the operator's /metrics on %s: %d %.200s", addrs.HTTP, code, body)
	}
	if code, body := get("http://"+addrs.Metrics+"/metrics", ""); code != 200 || !strings.Contains(body, "hubd_") {
		t.Errorf("/metrics on the metrics address %s: %d %.200s", addrs.Metrics, code, body)
	}
	if code, _ := get("http://"+addrs.Metrics+"/debug/pprof/", ""); code != http.StatusNotFound {
		t.Errorf("pprof on the metrics address: %d", code)
	}
}
