package sdkgo_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/internal/server"
)

// pki is a throwaway CA with a server certificate for 127.0.0.1.
type pki struct {
	ca      *x509.Certificate
	caKey   *ecdsa.PrivateKey
	pool    *x509.CertPool
	dir     string
	certPEM string // the server's, as files
	keyPEM  string
	caPEM   string
}

func newPKI(t *testing.T) *pki {
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
	ca, _ := x509.ParseCertificate(der)
	p := &pki{ca: ca, caKey: key, pool: x509.NewCertPool(), dir: t.TempDir()}
	p.pool.AddCert(ca)
	p.caPEM = p.write(t, "ca.pem", "CERTIFICATE", der)
	srvCert := p.issue(t, "hubd", x509.ExtKeyUsageServerAuth)
	p.certPEM = p.write(t, "server.pem", "CERTIFICATE", srvCert.Certificate[0])
	keyDER, err := x509.MarshalECPrivateKey(srvCert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	p.keyPEM = p.write(t, "server.key", "EC PRIVATE KEY", keyDER)
	return p
}

func (p *pki) write(t *testing.T, name, kind string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// issue makes a certificate for cn signed by the CA.
func (p *pki) issue(t *testing.T, cn string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{usage},
		KeyUsage: x509.KeyUsageDigitalSignature, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestTLSToken: a token over TLS.
func TestTLSToken(t *testing.T) {
	p := newPKI(t)
	addr := startSecure(t, server.Config{Tokens: parseTokens(t), TLSCert: p.certPEM, TLSKey: p.keyPEM})
	ctx := testCtx(t)
	alice := dial(t, addr, "alice", func(o *agentsdk.Options) {
		o.Token, o.TLS = "alice-token-0123456789", &tls.Config{RootCAs: p.pool}
	})
	if c := openPipeline(t, ctx, alice).GetMeta().GetCreator(); c != "alice" {
		t.Errorf("creator %q", c)
	}
	// A common name that is no agent name (a bidirectional override) is
	// refused, not taken as the agent.
	evil := p.issue(t, "ev\u202eil", x509.ExtKeyUsageClientAuth)
	mallory := dial(t, addr, "", func(o *agentsdk.Options) {
		o.Name, o.TLS = "", &tls.Config{RootCAs: p.pool, Certificates: []tls.Certificate{evil}}
	})
	if _, _, err := mallory.ListSessions(ctx, agentsdk.ListOptions{}); !errors.Is(err, agentsdk.ErrUnauthenticated) {
		t.Errorf("a certificate named with a bidirectional override: %v", err)
	}
}

// TestMutualTLS: the client certificate names the agent; no name, no
// token.
func TestMutualTLS(t *testing.T) {
	p := newPKI(t)
	addr := startSecure(t, server.Config{TLSCert: p.certPEM, TLSKey: p.keyPEM, ClientCA: p.caPEM})
	ctx := testCtx(t)
	cert := p.issue(t, "alice", x509.ExtKeyUsageClientAuth)
	alice := dial(t, addr, "", func(o *agentsdk.Options) {
		o.Name, o.TLS = "", &tls.Config{RootCAs: p.pool, Certificates: []tls.Certificate{cert}}
	})
	if c := openPipeline(t, ctx, alice).GetMeta().GetCreator(); c != "alice" {
		t.Errorf("creator %q", c)
	}
	// A common name that is no agent name (a bidirectional override) is
	// refused, not taken as the agent.
	evil := p.issue(t, "ev\u202eil", x509.ExtKeyUsageClientAuth)
	mallory := dial(t, addr, "", func(o *agentsdk.Options) {
		o.Name, o.TLS = "", &tls.Config{RootCAs: p.pool, Certificates: []tls.Certificate{evil}}
	})
	if _, _, err := mallory.ListSessions(ctx, agentsdk.ListOptions{}); !errors.Is(err, agentsdk.ErrUnauthenticated) {
		t.Errorf("a certificate named with a bidirectional override: %v", err)
	}
	// Without a certificate the handshake fails: Dial waits until ctx ends.
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := agentsdk.Dial(short, addr, agentsdk.Options{Name: "mallory", TLS: &tls.Config{RootCAs: p.pool}})
	if err == nil {
		t.Fatal("dial without a client certificate")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Logf("dial: %v", err)
	}
}
