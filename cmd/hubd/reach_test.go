package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key,
// and returns their files: the certificate is its own CA (--tls-ca).
func selfSigned(t *testing.T) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hubd"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

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
	cert, key := selfSigned(t)
	plain := startDaemon(t, t.TempDir(), "")
	secure := startDaemon(t, t.TempDir(), "", "--tls-cert", cert, "--tls-key", key)
	other, _ := selfSigned(t)
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
	if code, out, errs := hubd(t, "sessions", "list", "--hub", secure.addr, "--tls-ca", cert); code != 0 || !strings.HasPrefix(out, "SESSION") {
		t.Errorf("sessions list over TLS: exit %d\n%s%s", code, out, errs)
	}
}
