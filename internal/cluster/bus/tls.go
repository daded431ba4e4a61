package bus

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// ErrTLS reports TLS files that cannot be used.
var ErrTLS = errors.New("bus: unusable TLS files")

// TLS is the cluster bus's TLS: a node's certificate, which its embedded
// server presents to clients and to routes (in both directions, so it
// must be good for server and client authentication and name the
// addresses peers dial: --nats-routes, --nats-listen), and the CA that
// signed every node's, against which routes and clients verify.
type TLS struct {
	cert *tls.Certificate // nil for a client that presents none
	cas  *x509.CertPool
}

// LoadTLS reads PEM files: a certificate and its key (both empty for a
// client that presents none) and the CA certificates (required).
func LoadTLS(certFile, keyFile, caFile string) (*TLS, error) {
	if caFile == "" {
		return nil, fmt.Errorf("%w: a CA file is required", ErrTLS)
	}
	if (certFile == "") != (keyFile == "") {
		return nil, fmt.Errorf("%w: a certificate needs its key and a key its certificate", ErrTLS)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTLS, err)
	}
	t := &TLS{cas: x509.NewCertPool()}
	if !t.cas.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: %s holds no PEM certificate", ErrTLS, caFile)
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: %s and %s: %v", ErrTLS, certFile, keyFile, err)
		}
		t.cert = &cert
	}
	return t, nil
}

// serverConfig is the embedded server's client listener: its certificate;
// clients authenticate with the credentials, not with certificates.
func (t *TLS) serverConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*t.cert}}
}

// routeConfig is the embedded server's routes, accepted and dialled:
// mutual TLS, each side verifying the other's certificate against the CA
// (the dialling side also its name: the server sets it per route).
func (t *TLS) routeConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*t.cert},
		ClientCAs: t.cas, RootCAs: t.cas, ClientAuth: tls.RequireAndVerifyClientCert}
}

// ClientConfig is a client's TLS to the NATS servers: their certificates
// verified against the CA, this one's presented if it has one.
func (t *TLS) ClientConfig() *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: t.cas}
	if t.cert != nil {
		c.Certificates = []tls.Certificate{*t.cert}
	}
	return c
}

// serves reports whether t can serve (it has a certificate).
func (t *TLS) serves() bool { return t != nil && t.cert != nil }
