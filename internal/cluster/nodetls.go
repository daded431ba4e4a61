package cluster

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/hubd/hubd/internal/cluster/bus"
)

// ErrNotNode reports a peer that does not prove it is a node of this
// cluster: no certificate, or one the nodes' CA did not sign, or one for
// another node than the one called.
var ErrNotNode = errors.New("cluster: not a node of this cluster")

// nodeCALabel is the label of the nodes' CA key derived from the
// credentials (bus.Creds.Derive).
const nodeCALabel = "hubd node ca v1"

// The nodes' CA certificate is made the same on every node: a fixed
// serial, subject and validity, signed with Ed25519 (deterministic).
var (
	caNotBefore = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	caNotAfter  = time.Date(2125, 1, 1, 0, 0, 0, 0, time.UTC)
)

// nodeTLS is a node's mutual TLS with the other nodes: the nodes' CA,
// derived from the credentials every node holds, and this node's
// certificate, which the CA signs for a key of its own drawn at start.
// Whoever holds the credentials can derive the CA and so sign a node
// certificate: holding the credentials file is what makes a node (the
// same file that lets it onto the bus and write the log).
type nodeTLS struct {
	node string
	ca   *x509.Certificate
	pool *x509.CertPool
	cert tls.Certificate
}

// newNodeTLS derives the nodes' CA from creds and makes node's
// certificate.
func newNodeTLS(creds *bus.Creds, node string) (*nodeTLS, error) {
	caKey := ed25519.NewKeyFromSeed(creds.Derive(nodeCALabel))
	ca, err := caCert(caKey)
	if err != nil {
		return nil, err
	}
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	leaf := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: node, OrganizationalUnit: []string{"hubd node"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: caNotAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, pub, caKey)
	if err != nil {
		return nil, fmt.Errorf("cluster: the node certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &nodeTLS{node: node, ca: ca, pool: pool, cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}}, nil
}

// caCert makes the nodes' CA certificate for key: the same bytes on every
// node with the same credentials.
func caCert(key ed25519.PrivateKey) (*x509.Certificate, error) {
	pub := key.Public().(ed25519.PublicKey)
	id := sha256.Sum256(pub)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1),
		Subject:   pkix.Name{CommonName: "hubd nodes " + hex.EncodeToString(id[:6]), OrganizationalUnit: []string{"hubd node ca"}},
		NotBefore: caNotBefore, NotAfter: caNotAfter, IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, SubjectKeyId: id[:20]}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return nil, fmt.Errorf("cluster: the nodes' CA: %w", err)
	}
	return x509.ParseCertificate(der)
}

// server is the node service's TLS: a certificate the nodes' CA signed
// is required of every caller.
func (t *nodeTLS) server() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{t.cert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: t.pool}
}

// client is the TLS of calls to node want: its certificate must be the
// nodes' CA's, for want. Node ids are not host names, so the check is
// this one rather than the host name's (the nodes' addresses come from
// the lease records; the CA is what is trusted).
func (t *nodeTLS) client(want string) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{t.cert},
		InsecureSkipVerify: true, // verified by VerifyConnection, against the nodes' CA
		VerifyConnection: func(cs tls.ConnectionState) error {
			return t.verify(cs.PeerCertificates, x509.ExtKeyUsageServerAuth, want)
		}}
}

// verify checks a peer's certificate chain against the nodes' CA, for
// usage, naming node want ("" for any node); the error wraps ErrNotNode.
func (t *nodeTLS) verify(chain []*x509.Certificate, usage x509.ExtKeyUsage, want string) error {
	if len(chain) == 0 {
		return fmt.Errorf("%w: no certificate", ErrNotNode)
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: t.pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		return fmt.Errorf("%w: %v (is its --nats-creds this cluster's?)", ErrNotNode, err)
	}
	if got := chain[0].Subject.CommonName; want != "" && got != want {
		return fmt.Errorf("%w: the node called as %s presents itself as %s", ErrNotNode, want, got)
	}
	return nil
}
