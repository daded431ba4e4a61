package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"

	"github.com/hubd/hubd/internal/a2abridge"
)

// remotes are the running bridges of the outside A2A agents
// (Config.A2A.Remote).
type remotes struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startRemotes runs a bridge per outside A2A agent, each a hubd agent
// connected to this server's gRPC listener as the agent's name: by that
// name in development mode, else by the token in its token file.
func (s *Server) startRemotes(dev bool) error {
	if s.cfg.A2A == nil || len(s.cfg.A2A.Remote) == 0 {
		return nil
	}
	if s.cfg.ClientCA != "" {
		return errors.New("a2a remotes: the gRPC address requires client certificates (--client-ca), which the bridges to remote agents do not have: serve remote agents from a hub with --tokens and no --client-ca")
	}
	target := loopbackTarget(s.lis.Addr())
	tlsCfg, err := s.selfTLS()
	if err != nil {
		return err
	}
	var opts []a2abridge.Options
	for _, r := range s.cfg.A2A.Remote {
		o := a2abridge.Options{Remote: r, Hub: target, TLS: tlsCfg, Logger: s.cfg.Logger}
		if !dev {
			if r.TokenFile == "" {
				return fmt.Errorf("a2a remote %s: the hub has tokens: want a token_file with the agent's token", r.Agent)
			}
			b, err := os.ReadFile(r.TokenFile)
			if err != nil {
				return fmt.Errorf("a2a remote %s: %w", r.Agent, err)
			}
			if o.Token = strings.TrimSpace(string(b)); o.Token == "" {
				return fmt.Errorf("a2a remote %s: token file %s is empty", r.Agent, r.TokenFile)
			}
		}
		opts = append(opts, o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.remotes = &remotes{cancel: cancel}
	for _, o := range opts {
		s.remotes.wg.Add(1)
		go func() {
			defer s.remotes.wg.Done()
			a2abridge.New(o).Run(ctx)
		}()
	}
	return nil
}

// stopRemotes stops the bridges and waits for them: their streams end
// before the gRPC server's graceful stop waits for streams.
func (s *Server) stopRemotes() {
	if s.remotes == nil {
		return
	}
	s.remotes.cancel()
	s.remotes.wg.Wait()
}

// loopbackTarget is the address a process on this machine dials to reach
// addr: a wildcard host (0.0.0.0, ::) is the loopback.
func loopbackTarget(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, port)
}

// selfTLS is the TLS of a connection from this server to itself: nil
// without TLS; else it accepts exactly the server's own certificate
// (whatever names it bears, the peer is this process's listener).
func (s *Server) selfTLS() (*tls.Config, error) {
	if s.cfg.TLSCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(s.cfg.TLSCert, s.cfg.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("a2a remotes: %w", err)
	}
	leaf := cert.Certificate[0]
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // replaced by the pin below
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || !bytes.Equal(raw[0], leaf) {
				return errors.New("a2a remotes: the hub's listener did not present the hub's certificate")
			}
			return nil
		},
	}, nil
}
