package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestE2EServeSafety runs the real binary with unsafe or incomplete
// flags: each is refused at start (exit 2) with a message naming the
// flag; the safe forms start.
func TestE2EServeSafety(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("alice alice-secret-token-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "tokens-open")
	if err := os.WriteFile(open, []byte("alice alice-secret-token-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o666); err != nil { // not subject to the umask
		t.Fatal(err)
	}
	group := filepath.Join(dir, "tokens-group")
	if err := os.WriteFile(group, []byte("alice alice-secret-token-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(group, 0o620); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"tokens in cleartext on all interfaces", []string{"--listen", "0.0.0.0:0", "--tokens", tokens},
			"--tokens without TLS on --listen 0.0.0.0:0 would send bearer tokens in cleartext"},
		{"tokens in cleartext over HTTP", []string{"--tokens", tokens, "--http", "0.0.0.0:0"}, "--tokens without TLS on --http 0.0.0.0:0"},
		{"world-writable tokens file", []string{"--tokens", open}, "is writable by its group or others (mode 0666)"},
		{"group-writable tokens file", []string{"--tokens", group}, "(mode 0620)"},
		{"certificate without key", []string{"--tls-cert", filepath.Join(dir, "cert.pem")}, "--tls-cert " + filepath.Join(dir, "cert.pem") + " needs --tls-key"},
		{"key without certificate", []string{"--tls-key", filepath.Join(dir, "key.pem")}, "needs --tls-cert"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data", t.TempDir()}, tc.args...)
			code, _, errs := hubd(t, args...)
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 with %q", code, errs, tc.want)
			}
		})
	}
	d := startDaemon(t, t.TempDir(), "0.0.0.0:0", "--tokens", tokens, "--insecure-tokens")
	d.stop(syscall.SIGTERM)
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("--insecure-tokens on 0.0.0.0: exit %d\n%s", code, d.log())
	}
}
