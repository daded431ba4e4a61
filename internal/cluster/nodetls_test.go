package cluster

import (
	"bytes"
	"crypto/x509"
	"errors"
	"testing"

	"github.com/hubd/hubd/internal/cluster/bus"
)

// TestNodeTLS: every node holding the same credentials derives the same
// CA, so each verifies the others' certificates (each with a key of its
// own) as servers and as clients, for the node it names; a certificate
// derived from other credentials, or one naming another node than the
// one called, is not a node's.
func TestNodeTLS(t *testing.T) {
	creds, other := newCreds(t), newCreds(t)
	a, err := newNodeTLS(creds, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := newNodeTLS(creds, "b")
	if err != nil {
		t.Fatal(err)
	}
	x, err := newNodeTLS(other, "b")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.ca.Raw, b.ca.Raw) || bytes.Equal(a.ca.Raw, x.ca.Raw) {
		t.Fatalf("the CAs of one cluster's nodes differ, or match another cluster's")
	}
	if bytes.Equal(a.cert.Certificate[0], b.cert.Certificate[0]) {
		t.Fatal("two nodes present the same certificate")
	}
	chain := func(n *nodeTLS) []*x509.Certificate {
		c, err := x509.ParseCertificate(n.cert.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return []*x509.Certificate{c}
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if err := a.verify(chain(b), usage, "b"); err != nil {
			t.Errorf("a verifying b (usage %v): %v", usage, err)
		}
		if err := b.verify(chain(a), usage, ""); err != nil {
			t.Errorf("b verifying a (usage %v): %v", usage, err)
		}
		if err := a.verify(chain(x), usage, "b"); !errors.Is(err, ErrNotNode) {
			t.Errorf("a verifying another cluster's b: %v, want ErrNotNode", err)
		}
	}
	if err := a.verify(chain(b), x509.ExtKeyUsageServerAuth, "c"); !errors.Is(err, ErrNotNode) {
		t.Errorf("a calling c and reaching b: %v, want ErrNotNode", err)
	}
	if err := a.verify(nil, x509.ExtKeyUsageClientAuth, ""); !errors.Is(err, ErrNotNode) {
		t.Errorf("no certificate: %v, want ErrNotNode", err)
	}
}

func newCreds(t *testing.T) *bus.Creds {
	t.Helper()
	_, c, err := bus.NewCreds()
	if err != nil {
		t.Fatal(err)
	}
	return c
}
