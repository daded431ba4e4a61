package main

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// TestE2EAddressInUse starts a second hub on the first's gRPC address,
// then on its HTTP address: each refuses to start, naming the flag and
// the address.
func TestE2EAddressInUse(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "", "--http", "127.0.0.1:0")
	l := d.logLines(t, "hubd listening")
	if len(l) != 1 {
		t.Fatalf("listening lines %v", l)
	}
	httpAddr, _ := l[0]["http"].(string)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", d.addr}, "hubd: serve: --listen " + d.addr + " is in use (another hubd?): "},
		{[]string{"--listen", "127.0.0.1:0", "--http", httpAddr}, "hubd: serve: --http " + httpAddr + " is in use (another hubd?): "},
	} {
		code, _, errs := hubd(t, append([]string{"serve", "--data", t.TempDir(), "--log-format", "json"}, tc.args...)...)
		if code != 1 || !strings.Contains(errs, tc.want) {
			t.Errorf("serve %v: exit %d, stderr %q; want exit 1, %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestE2EStartupURL checks that the start-up line carries the web view's
// URL: http, or https with TLS, and none without the HTTP side.
func TestE2EStartupURL(t *testing.T) {
	cert, key := selfSigned(t, t.TempDir())
	for _, tc := range []struct {
		args   []string
		scheme string
	}{
		{nil, "http"},
		{[]string{"--tls-cert", cert, "--tls-key", key}, "https"},
		{[]string{"--http", "off"}, ""},
	} {
		d := startDaemon(t, t.TempDir(), "", tc.args...)
		l := d.logLines(t, "hubd listening")
		if len(l) != 1 {
			t.Fatalf("%v: listening lines %v", tc.args, l)
		}
		url, _ := l[0]["url"].(string)
		want := ""
		if tc.scheme != "" {
			want = tc.scheme + "://" + l[0]["http"].(string) + "/"
		}
		if url != want {
			t.Errorf("%v: url %q, want %q (%v)", tc.args, url, want, l[0])
		}
	}
}

// TestStartupURLConsole checks that the console log shows the URL as a
// word of its own, which terminals make a link.
func TestStartupURLConsole(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--log-format", "console"}, nil, io.Discard, pw)
		pw.Close()
	}()
	defer func() {
		cancel()
		go io.Copy(io.Discard, pr)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop")
		}
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "hubd listening") {
			continue
		}
		i := strings.Index(line, " url=http://127.0.0.1:")
		if i < 0 || !strings.HasSuffix(strings.Fields(line[i:])[0], "/") {
			t.Errorf("the listening line shows no URL: %q", line)
		}
		return
	}
	t.Fatalf("no listening line: %v", sc.Err())
}
