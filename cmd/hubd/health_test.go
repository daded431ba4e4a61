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

// TestE2EHealth runs hubd health, the probe of the container image's
// HEALTHCHECK, against real hubs: one taking writes (exit 0), one whose
// disk is below its reserve from the start (exit 1, NOT_SERVING), none
// (exit 3, at once), and one serving TLS (with --tls, or --tls-ca its
// certificate; plaintext cannot reach it).
func TestE2EHealth(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "")
	code, out, errs := hubd(t, "health", "--hub", d.addr)
	if want := "hubd.v1.Hub/writes at " + d.addr + ": SERVING\n"; code != 0 || out != want || errs != "" {
		t.Errorf("health of a hub taking writes: exit %d, stdout %q, stderr %q; want 0, %q", code, out, errs, want)
	}

	full := startDaemon(t, t.TempDir(), "", "--min-free-disk", "1000000TiB")
	code, out, errs = hubd(t, "health", "--hub", full.addr)
	if code != 1 || out != "" || !strings.Contains(errs, "hubd.v1.Hub/writes at "+full.addr+": NOT_SERVING") {
		t.Errorf("health of a hub below its disk reserve: exit %d, stdout %q, stderr %q; want 1 naming NOT_SERVING", code, out, errs)
	}

	began := time.Now()
	code, _, errs = hubd(t, "health", "--hub", closedAddr(t))
	if took := time.Since(began); code != 3 || !strings.Contains(errs, "health: ") || took > 5*time.Second {
		t.Errorf("health of no hub: exit %d after %v, stderr %q; want 3 within the timeout", code, took, errs)
	}

	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	tlsHub := startDaemon(t, t.TempDir(), "", "--tls-cert", cert, "--tls-key", key)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"--tls"}, 0},
		{[]string{"--tls-ca", cert}, 0},
		{nil, 3},
	} {
		code, out, errs := hubd(t, append([]string{"health", "--hub", tlsHub.addr}, tc.args...)...)
		if code != tc.code {
			t.Errorf("health %q of a TLS hub: exit %d; want %d\n%s%s", tc.args, code, tc.code, out, errs)
		}
	}

	code, _, errs = hubd(t, "health", "extra")
	if code != 2 || !strings.Contains(errs, `unexpected argument "extra"`) {
		t.Errorf("health with an argument: exit %d, stderr %q; want 2", code, errs)
	}
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key
// into dir and returns their paths.
func selfSigned(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hubd"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for path, block := range map[string]*pem.Block{cert: {Type: "CERTIFICATE", Bytes: der}, key: {Type: "EC PRIVATE KEY", Bytes: kder}} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return cert, key
}

// TestE2EHealthEnv: hubd health reads the hub's address from $HUBD_HUB, as
// every client command does; --hub on the command line wins.
func TestE2EHealthEnv(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "")
	if code, out, errs := hubd(t, "HUBD_HUB="+d.addr, "health"); code != 0 || !strings.Contains(out, "SERVING") {
		t.Errorf("health with $HUBD_HUB: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := hubd(t, "HUBD_HUB="+d.addr, "health", "--hub", "127.0.0.1:1", "--timeout", "2s"); code != 3 {
		t.Errorf("health --hub over $HUBD_HUB: exit %d, want 3 (the flag's address)\n%s", code, errs)
	}
}

// TestE2EHealthClientCert: a hub started with --client-ca takes no
// connection without a client certificate of its CA; hubd health presents
// one with --tls-cert and --tls-key.
func TestE2EHealthClientCert(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	caFile := ca.write(t, dir, "ca", ca.cert, ca.key)
	srvCert, srvKey := ca.issue(t, dir, "server", x509.ExtKeyUsageServerAuth)
	probeCert, probeKey := ca.issue(t, dir, "probe", x509.ExtKeyUsageClientAuth)
	d := startDaemon(t, t.TempDir(), "", "--tls-cert", srvCert, "--tls-key", srvKey, "--client-ca", caFile)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"--tls-ca", caFile, "--tls-cert", probeCert, "--tls-key", probeKey}, 0},
		{[]string{"--tls-cert", probeCert, "--tls-key", probeKey}, 0}, // the hub unverified, as --tls
		{[]string{"--tls-ca", caFile}, 3},                             // no client certificate: refused at the handshake
		{[]string{"--tls-ca", caFile, "--tls-cert", probeCert}, 2},    // a certificate without its key
	} {
		code, out, errs := hubd(t, append([]string{"health", "--hub", d.addr, "--timeout", "3s"}, tc.args...)...)
		if code != tc.code {
			t.Errorf("health %q of a hub with --client-ca: exit %d; want %d\n%s%s", tc.args, code, tc.code, out, errs)
		}
	}
}

// testCA is a certificate authority for tests of client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hubd test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: k}
}

// issue writes a certificate for 127.0.0.1 named cn, for usage, signed by
// the CA, and its key, into dir; it returns their paths.
func (ca *testCA) issue(t *testing.T, dir, cn string, usage x509.ExtKeyUsage) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &k.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return ca.write(t, dir, cn, c, k), filepath.Join(dir, cn+"-key.pem")
}

// write writes cert as dir/name.pem and key as dir/name-key.pem; it
// returns the certificate's path.
func (ca *testCA) write(t *testing.T, dir, name string, cert *x509.Certificate, key *ecdsa.PrivateKey) string {
	t.Helper()
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".pem")
	for p, block := range map[string]*pem.Block{path: {Type: "CERTIFICATE", Bytes: cert.Raw}, filepath.Join(dir, name+"-key.pem"): {Type: "EC PRIVATE KEY", Bytes: kder}} {
		if err := os.WriteFile(p, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return path
}
