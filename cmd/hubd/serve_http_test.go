package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// serveHTTP runs `hubd serve` through run() and returns its gRPC and HTTP
// addresses from the "hubd listening" line ("" when it serves no HTTP).
func serveHTTP(t *testing.T, args ...string) (grpcAddr, httpAddr string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--log-format", "json"}, args...), nil, io.Discard, pw)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		var line struct{ Message, Listen, HTTP string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Message == "hubd listening" {
			grpcAddr, httpAddr = line.Listen, line.HTTP
			break
		}
	}
	if grpcAddr == "" {
		cancel()
		t.Fatalf("serve did not say it listens: %v", <-done)
	}
	go io.Copy(io.Discard, pr)
	return grpcAddr, httpAddr, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve exited with %v", err)
		}
	}
}

// post sends a JSON body as a development-mode agent and decodes the answer.
func post(t *testing.T, url, agent, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), "POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hubd-Agent", agent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
		t.Fatalf("POST %s: %d %v %v", url, resp.StatusCode, m, err)
	}
	return m
}

// TestServeHTTP: in development mode serve has an HTTP side by default;
// a session is opened and a turn sent over it as with curl, and /metrics
// counts the turn.
func TestServeHTTP(t *testing.T) {
	_, addr, stop := serveHTTP(t)
	defer stop()
	if addr == "" {
		t.Fatal("no HTTP side in development mode")
	}
	base := "http://" + addr
	open := post(t, base+"/v1/sessions", "alice", `{"type":"conversation@1","participants":[{"name":"bob","auto_accept":true}]}`)
	id := open["session"].(map[string]any)["meta"].(map[string]any)["session_id"].(string)
	if sent := post(t, base+"/v1/sessions/"+id+"/envelopes", "alice", `{"type":"text","text":{"text":"hi bob"}}`); sent["seq"] != "3" {
		t.Errorf("send answered %v", sent)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), `hubd_sends_accepted_total{session_type="conversation@1"} 1`) {
		t.Errorf("/metrics does not count the turn:\n%.2000s", b)
	}
}

// TestServeHTTPOff: --http off serves no HTTP side.
func TestServeHTTPOff(t *testing.T) {
	_, addr, stop := serveHTTP(t, "--http", "off")
	defer stop()
	if addr != "" {
		t.Errorf("HTTP on %s with --http off", addr)
	}
}

// TestServeHTTPAddr: where the HTTP side listens by default.
func TestServeHTTPAddr(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "127.0.0.1:7421"},
		{[]string{"--listen", "127.0.0.1:0"}, "127.0.0.1:0"},
		{[]string{"--listen", "[::1]:9000"}, "[::1]:9001"},
		{[]string{"--tokens", "t"}, ""},
		{[]string{"--client-ca", "ca.pem"}, ""},
		{[]string{"--tokens", "t", "--http", "0.0.0.0:8080"}, "0.0.0.0:8080"},
		{[]string{"--http", "off"}, ""},
		{[]string{"--http", ""}, ""},
		{[]string{"--http", "127.0.0.1:9"}, "127.0.0.1:9"},
	} {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		var f serveFlags
		f.register(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		fs.Visit(func(fl *flag.Flag) { f.httpSet = f.httpSet || fl.Name == "http" })
		if got := f.httpAddr(); got != tc.want {
			t.Errorf("%v: HTTP on %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestServeNewFlags: --max-depth and --sse-heartbeat reach the
// configuration; bad values and an unknown OTLP protocol are refused.
func TestServeNewFlags(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var f serveFlags
	f.register(fs)
	if err := fs.Parse([]string{"--max-depth", "3", "--sse-heartbeat", "5s"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := f.config(zerolog.Nop())
	if err != nil || cfg.Hub.MaxDepth != 3 || cfg.Heartbeat.String() != "5s" {
		t.Errorf("config %+v %v", cfg.Hub, err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"serve", "--max-depth", "0"}, "--max-depth"},
		{[]string{"serve", "--sse-heartbeat", "0s"}, "--sse-heartbeat"},
		{[]string{"serve", "--otlp-endpoint", "http://127.0.0.1:4318"}, "unsupported OTLP protocol"},
	} {
		code, _, errs := runCmd(t, "", tc.args...)
		if code != 2 || !strings.Contains(errs, tc.err) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errs, tc.err)
		}
	}
}
