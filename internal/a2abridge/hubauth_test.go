package a2abridge_test

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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/a2aconf"
	"github.com/hubd/hubd/internal/a2apb"
	"github.com/hubd/hubd/internal/server"
)

const (
	aliceToken = "alice-token-0123456789"
	echoToken  = "echo-token-0123456789"
)

// With tokens, the bridge joins as its agent by the token in its token
// file, and a remote entry without one stops the hub from starting.
func TestBridgeWithTokens(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a := newAgent(t, false, func(_ *agent, tk *a2apb.Task, msg *a2apb.Message) { complete(tk, "ok") })
	toks, err := hubgrpc.ParseTokens(strings.NewReader("alice " + aliceToken + "\necho " + echoToken + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{Listen: "127.0.0.1:0", InMemory: true, Logger: zerolog.Nop(), Tokens: toks,
		A2A: &a2aconf.File{Remote: []a2aconf.Remote{{Agent: "echo", Card: a.cardURL()}}}}
	if _, err := server.Start(ctx, cfg); err == nil || !strings.Contains(err.Error(), "a2a remote echo: the hub has tokens: want a token_file") {
		t.Fatalf("start without the remote's token file: %v", err)
	}
	file := filepath.Join(t.TempDir(), "echo.token")
	if err := os.WriteFile(file, []byte(echoToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.A2A.Remote[0].TokenFile = file
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	defer stop(t, srv)
	alice, err := agentsdk.Dial(ctx, srv.Addr(), agentsdk.Options{Token: aliceToken})
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.Invited("alice", "echo")})
	if err != nil {
		t.Fatal(err)
	}
	var reply string
	_, err = alice.Follow(ctx, s.ID(), 1, func(e *hubpb.Envelope) error {
		switch {
		case e.GetType() == agentsdk.EventOpened: // echo accepted the invite
			_, err := alice.SendText(ctx, s.ID(), "hi")
			return err
		case e.GetFrom() == "echo" && e.GetType() == agentsdk.EventText:
			reply = e.GetText().GetText()
			return errFound
		}
		return nil
	})
	if !errors.Is(err, errFound) || reply != "ok" {
		t.Fatalf("echo's reply %q: %v", reply, err)
	}
}

// selfSigned writes a certificate for the name "hubd.test" alone (not
// the loopback address the bridge dials) and its key, and returns their
// files and the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hubd.test"}, DNSNames: []string{"hubd.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := errors.Join(os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600),
		os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)); err != nil {
		t.Fatal(err)
	}
	cert, err = x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, cert
}

// With TLS, the bridge dials the hub's loopback listener and accepts
// exactly the hub's own certificate, whatever names it bears.
func TestBridgeOverTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a := newAgent(t, false, func(_ *agent, tk *a2apb.Task, msg *a2apb.Message) { complete(tk, "over TLS") })
	certFile, keyFile, cert := selfSigned(t)
	srv, err := server.Start(ctx, server.Config{Listen: "127.0.0.1:0", InMemory: true, Logger: zerolog.Nop(),
		TLSCert: certFile, TLSKey: keyFile, A2A: &a2aconf.File{Remote: []a2aconf.Remote{{Agent: "echo", Card: a.cardURL()}}}})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	defer stop(t, srv)
	mtls := server.Config{Listen: "127.0.0.1:0", InMemory: true, Logger: zerolog.Nop(), TLSCert: certFile, TLSKey: keyFile, ClientCA: certFile,
		A2A: &a2aconf.File{Remote: []a2aconf.Remote{{Agent: "echo", Card: a.cardURL()}}}}
	if _, err := server.Start(ctx, mtls); err == nil || !strings.Contains(err.Error(), "requires client certificates (--client-ca)") {
		t.Fatalf("start with --client-ca and a remote: %v, want a refusal", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	alice, err := agentsdk.Dial(ctx, srv.Addr(), agentsdk.Options{Name: "alice", TLS: &tls.Config{RootCAs: roots, ServerName: "hubd.test"}})
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("alice", "echo")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.SendText(ctx, s.ID(), "hi"); err != nil {
		t.Fatal(err)
	}
	var reply string
	_, err = alice.Follow(ctx, s.ID(), 1, func(e *hubpb.Envelope) error {
		if e.GetFrom() == "echo" && e.GetType() == agentsdk.EventText {
			reply = e.GetText().GetText()
			return errFound
		}
		return nil
	})
	if !errors.Is(err, errFound) || reply != "over TLS" {
		t.Fatalf("echo's reply %q: %v", reply, err)
	}
}
