package natstest

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
	"testing"
	"time"

	"github.com/hubd/hubd/internal/cluster/bus"
)

// TLSFiles are PEM files of a throwaway CA and of one certificate it
// signed, for 127.0.0.1 and localhost, good for server and client
// authentication: what every node of a test cluster presents.
type TLSFiles struct {
	Cert, Key, CA string
}

// WriteTLS makes a CA and a certificate and writes them into dir.
func WriteTLS(t testing.TB, dir string) TLSFiles {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hubd test cluster ca"}, IsCA: true,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "hubd node"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	write := func(name, kind string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
			t.Fatalf("natstest: %v", err)
		}
		return path
	}
	return TLSFiles{Cert: write("node.pem", "CERTIFICATE", der), Key: write("node.key", "EC PRIVATE KEY", keyDER),
		CA: write("ca.pem", "CERTIFICATE", caDER)}
}

// Load reads the files as a node does.
func (f TLSFiles) Load(t testing.TB) *bus.TLS {
	t.Helper()
	tls, err := bus.LoadTLS(f.Cert, f.Key, f.CA)
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	return tls
}

// WriteCreds writes new node credentials into dir (mode 0600) and returns
// the file's path and the credentials.
func WriteCreds(t testing.TB, dir, name string) (string, *bus.Creds) {
	t.Helper()
	b, creds, err := bus.NewCreds()
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatalf("natstest: %v", err)
	}
	return path, creds
}
