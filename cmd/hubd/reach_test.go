package main

import (
	"strings"
	"testing"
	"time"
)

// TestE2EHubDown runs client commands against an address nothing
// listens on: each exits 3 at once, saying the hub cannot be reached and
// why, and how to start one.
func TestE2EHubDown(t *testing.T) {
	hubdBinary(t)
	closed := closedPort(t)
	want := ": cannot reach hubd at " + closed + ": connection refused (is `hubd serve` running?)\n"
	for _, args := range [][]string{
		{"sessions", "list", "--hub", closed},
		{"HUBD_HUB=" + closed, "sessions", "show", "0190d1a0-0000-7000-8000-000000000000"},
		{"questions", "list", "--hub", closed},
		{"log", "backup", "-", "--hub", closed},
	} {
		start := time.Now()
		code, out, errs := hubd(t, args...)
		took := time.Since(start)
		if code != 3 || out != "" || !strings.HasPrefix(errs, "hubd: ") || !strings.HasSuffix(errs, want) {
			t.Errorf("hubd %v: exit %d, stdout %q, stderr %q; want exit 3, stderr ending %q", args, code, out, errs, want)
		}
		// Nothing listens: the refusal is immediate; the bound leaves room
		// for a loaded machine starting the binary.
		if took > 2*time.Second {
			t.Errorf("hubd %v took %v to say the hub is down, want under 2s", args, took)
		}
		t.Logf("hubd %v: %v", args, took.Round(time.Millisecond))
	}
}

// TestE2ETLSMismatch: a client that asks for TLS from a plaintext hub, or
// that does not trust the hub's certificate, is told at once why it
// cannot connect (exit 3), not after --connect-timeout.
func TestE2ETLSMismatch(t *testing.T) {
	cert, key := selfSigned(t, t.TempDir())
	plain := startDaemon(t, t.TempDir(), "")
	secure := startDaemon(t, t.TempDir(), "", "--tls-cert", cert, "--tls-key", key)
	other, _ := selfSigned(t, t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sessions", "list", "--hub", plain.addr, "--tls-ca", cert}, "cannot reach hubd at " + plain.addr + ": TLS handshake failed: "},
		{[]string{"sessions", "list", "--hub", secure.addr, "--tls-ca", other}, "cannot reach hubd at " + secure.addr + ": TLS handshake failed: tls: failed to verify certificate"},
	} {
		start := time.Now()
		code, _, errs := hubd(t, tc.args...)
		if took := time.Since(start); code != 3 || !strings.Contains(errs, tc.want) || took > 2*time.Second {
			t.Errorf("hubd %v: exit %d after %v, stderr %q; want exit 3 within 2s, %q", tc.args, code, took, errs, tc.want)
		}
	}
	if code, out, errs := hubd(t, "sessions", "list", "--hub", secure.addr, "--tls-ca", cert); code != 0 || !strings.HasPrefix(out, "ID ") {
		t.Errorf("sessions list over TLS: exit %d\n%s%s", code, out, errs)
	}
}
