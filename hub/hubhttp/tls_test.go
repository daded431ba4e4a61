package hubhttp_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/internal/server"
)

// testCA is a throwaway CA that issues certificates for 127.0.0.1.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
	dir  string
}

func newCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test ca"}, IsCA: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &testCA{cert: cert, key: key, pool: x509.NewCertPool(), dir: t.TempDir()}
	ca.pool.AddCert(cert)
	return ca
}

// issue makes a certificate for cn.
func (ca *testCA) issue(t *testing.T, cn string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{usage},
		KeyUsage: x509.KeyUsageDigitalSignature, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// files writes the CA and a server certificate as PEM files.
func (ca *testCA) files(t *testing.T) (caFile, certFile, keyFile string) {
	t.Helper()
	write := func(name, kind string, der []byte) string {
		p := filepath.Join(ca.dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	srv := ca.issue(t, "hubd", x509.ExtKeyUsageServerAuth)
	keyDER, err := x509.MarshalECPrivateKey(srv.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	return write("ca.pem", "CERTIFICATE", ca.cert.Raw), write("server.pem", "CERTIFICATE", srv.Certificate[0]),
		write("server.key", "EC PRIVATE KEY", keyDER)
}

// TestTLS: over HTTPS a client certificate names the agent (asked for, not
// required), a token works without one, the sign-in cookie is Secure, and
// nothing else gets in.
func TestTLS(t *testing.T) {
	ca := newCA(t)
	caFile, certFile, keyFile := ca.files(t)
	srv := start(t, true, func(c *server.Config) { c.TLSCert, c.TLSKey, c.ClientCA = certFile, keyFile, caFile })
	client := func(certs ...tls.Certificate) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool, Certificates: certs}}}
	}
	get := func(c *http.Client, path string, header map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", "https://"+srv.HTTPAddr()+path, nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	if code, body := get(client(ca.issue(t, "carol", x509.ExtKeyUsageClientAuth)), "/v1/auth/whoami", nil); code != 200 || !strings.Contains(body, `"agent":"carol"`) {
		t.Errorf("with carol's certificate: %d %s", code, body)
	}
	if code, body := get(client(), "/v1/sessions", map[string]string{"Authorization": "Bearer " + testToken}); code != 200 {
		t.Errorf("a token without a certificate: %d %s", code, body)
	}
	if code, _ := get(client(), "/v1/sessions", nil); code != http.StatusUnauthorized {
		t.Errorf("no certificate, no token: %d", code)
	}
	req, _ := http.NewRequest("POST", "https://"+srv.HTTPAddr()+"/v1/auth/signin", strings.NewReader(`{"token":"`+testToken+`"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if c := resp.Header.Get("Set-Cookie"); resp.StatusCode != 200 || !strings.Contains(c, "Secure") {
		t.Errorf("sign-in over TLS: %d, cookie %q", resp.StatusCode, c)
	}
}
