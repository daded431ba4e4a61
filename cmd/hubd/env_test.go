package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/internal/exitcode"
)

func TestEnvName(t *testing.T) {
	for flag, want := range map[string]string{"max-depth": "HUBD_MAX_DEPTH", "hub": "HUBD_HUB", "tls-ca": "HUBD_TLS_CA",
		"subscriber-buffer-bytes": "HUBD_SUBSCRIBER_BUFFER_BYTES", "embed-nats": "HUBD_EMBED_NATS"} {
		if got := envName(flag); got != want {
			t.Errorf("envName(%q) = %q, want %q", flag, got, want)
		}
	}
}

// TestEnvHelp checks that the help names the variable of every flag of
// serve and of every client flag, and no other's, and never shows a
// variable's value.
func TestEnvHelp(t *testing.T) {
	const secret = "s3cret-token-from-the-environment"
	t.Setenv("HUBD_TOKEN", secret)
	t.Setenv("HUBD_HUB", "10.9.8.7:7420")
	t.Setenv("HUBD_TOKENS", "/secret/tokens/path")
	var names []string
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	(&serveFlags{}).register(fs)
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	_, serveHelp, _ := runCmd(t, "", "serve", "--help")
	for _, n := range names {
		if !strings.Contains(serveHelp, "[$"+envName(n)+"]") {
			t.Errorf("serve --help does not name $%s for --%s", envName(n), n)
		}
	}
	_, listHelp, _ := runCmd(t, "", "sessions", "list", "--help")
	for _, n := range []string{"HUBD_HUB", "HUBD_AS", "HUBD_TOKEN", "HUBD_TLS_CA", "HUBD_CONNECT_TIMEOUT"} {
		if !strings.Contains(listHelp, "[$"+n+"]") {
			t.Errorf("sessions list --help does not name $%s:\n%s", n, listHelp)
		}
	}
	if strings.Contains(listHelp, "$HUBD_STATE") || strings.Contains(listHelp, "$HUBD_LABEL") {
		t.Errorf("sessions list --help names a variable for a flag of its own:\n%s", listHelp)
	}
	_, top, _ := runCmd(t, "", "help")
	if !strings.Contains(top, "HUBD_MAX_DEPTH=4") {
		t.Errorf("hubd help does not say how variables set flags:\n%s", top)
	}
	for _, args := range [][]string{{"help"}, {"serve", "--help"}, {"sessions", "--help"}, {"sessions", "list", "--help"}, {"log", "backup", "--help"}} {
		_, out, _ := runCmd(t, "", args...)
		for _, v := range []string{secret, "10.9.8.7", "/secret/tokens/path"} {
			if strings.Contains(out, v) {
				t.Errorf("%v shows the value %q of a variable", args, v)
			}
		}
	}
}

// runBounded runs the command in process for at most 20 s (a serve that
// ignored a bad variable would run until then) and returns its exit code
// and stderr.
func runBounded(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var errb bytes.Buffer
	err := run(ctx, args, nil, io.Discard, &errb)
	return exitcode.Report("hubd", err, &errb), errb.String()
}

// TestServeEnvErrors checks that a variable serve's flag refuses, or one
// that makes the flags inconsistent, stops serve with exit 2 naming it.
func TestServeEnvErrors(t *testing.T) {
	for _, tc := range []struct {
		env, value, err string
	}{
		{"HUBD_MAX_DEPTH", "deep", "hubd: serve: $HUBD_MAX_DEPTH (--max-depth): parse error"},
		{"HUBD_FSYNC", "maybe", "$HUBD_FSYNC (--fsync): parse error"},
		{"HUBD_NODE_ID", "n1", "serve: --node-id needs --cluster or --embed-nats"},
		{"HUBD_ON_DAMAGE", "ignore", `serve: --on-damage "ignore": want refuse or quarantine`},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(tc.env, tc.value)
			code, errs := runBounded(t, "serve", "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--log-format", "json")
			if code != 2 || !strings.Contains(errs, tc.err) {
				t.Errorf("%s=%s: exit %d, stderr %q; want exit 2, %q", tc.env, tc.value, code, errs, tc.err)
			}
		})
	}
}

// TestE2EClientEnv runs client commands configured by HUBD_HUB, HUBD_AS,
// HUBD_CONNECT_TIMEOUT and HUBD_TLS_CA, and checks that a flag on the
// command line wins over its variable.
func TestE2EClientEnv(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := dialAs(t, d.addr, "alice").Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	closed := closedPort(t)
	for _, tc := range []struct {
		args []string
		code int
		out  string // in stdout, for exit 0; in stderr otherwise
	}{
		{[]string{"HUBD_HUB=" + d.addr, "sessions", "list"}, 0, s.ID()},
		{[]string{"HUBD_HUB=" + closed, "sessions", "list", "--hub", d.addr}, 0, s.ID()},
		{[]string{"HUBD_HUB=" + d.addr, "HUBD_AS=bob", "sessions", "show", s.ID()}, 0, s.ID()},
		{[]string{"HUBD_HUB=" + d.addr, "HUBD_AS=mallory", "sessions", "show", s.ID()}, 1, "(PERMISSION_DENIED)"},
		{[]string{"HUBD_HUB=" + d.addr, "HUBD_AS=mallory", "sessions", "show", s.ID(), "--as", "bob"}, 0, s.ID()},
		{[]string{"HUBD_HUB=" + d.addr, "HUBD_AS=bob", "log", "backup", "-"}, 1, "(PERMISSION_DENIED)"},
		{[]string{"HUBD_HUB=" + d.addr, "HUBD_CONNECT_TIMEOUT=soon", "sessions", "list"}, 2, "hubd: sessions list: $HUBD_CONNECT_TIMEOUT (--connect-timeout): parse error"},
		{[]string{"HUBD_HUB=" + d.addr, "HUBD_TLS_CA=" + t.TempDir() + "/none.pem", "sessions", "list"}, 2, "hubd: sessions list: --tls-ca: open "},
		{[]string{"HUBD_HUB=" + d.addr, "HUBD_TLS_CA=" + t.TempDir() + "/none.pem", "sessions", "list", "--tls-ca", ""}, 0, s.ID()},
	} {
		code, out, errs := hubd(t, tc.args...)
		got := errs
		if tc.code == 0 {
			got = out
		}
		if code != tc.code || !strings.Contains(got, tc.out) {
			t.Errorf("hubd %v: exit %d, stdout %q, stderr %q; want exit %d with %q", tc.args, code, out, errs, tc.code, tc.out)
		}
	}
}

// TestE2EServeEnv starts the binary configured by HUBD_HTTP and
// HUBD_LOG_LEVEL, then with --http on the command line over HUBD_HTTP.
func TestE2EServeEnv(t *testing.T) {
	d := startDaemonEnv(t, []string{"HUBD_HTTP=off", "HUBD_LOG_LEVEL=debug"}, t.TempDir(), "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := dialAs(t, d.addr, "alice").Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")}); err != nil {
		t.Fatal(err)
	}
	if l := d.logLines(t, "hubd listening"); len(l) != 1 || l[0]["http"] != nil {
		t.Errorf("HUBD_HTTP=off: listening %v, want no HTTP address", l)
	}
	// The hub logs the open's envelopes as it answers: the line may reach
	// the daemon's log reader a moment after the answer.
	for deadline := time.Now().Add(10 * time.Second); len(d.logLines(t, "envelope accepted")) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("HUBD_LOG_LEVEL=debug: no envelope logged:\n%s", d.log())
			break
		}
	}
	d = startDaemonEnv(t, []string{"HUBD_HTTP=off", "HUBD_LOG_LEVEL=debug"}, t.TempDir(), "", "--http", "127.0.0.1:0", "--log-level", "info")
	if l := d.logLines(t, "hubd listening"); len(l) != 1 || l[0]["http"] == nil {
		t.Errorf("--http over HUBD_HTTP=off: listening %v, want an HTTP address", l)
	}
	if n := len(linesWith(d.log(), `"level":"debug"`)); n != 0 {
		t.Errorf("--log-level info over HUBD_LOG_LEVEL=debug: %d debug lines", n)
	}
}

// linesWith returns the lines of s that contain sub.
func linesWith(s, sub string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}
