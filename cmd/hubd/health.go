package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/hubd/hubd/internal/exitcode"
	"github.com/hubd/hubd/internal/server"
)

// runHealth is "hubd health": it asks a hub's gRPC health service whether
// the hub takes writes (server.WriteHealth, NOT_SERVING while its disk is
// below the reserve or its storage failed) and exits 0 when it does, 1
// when it does not, 3 when the hub cannot be reached: the probe of the
// container image's HEALTHCHECK, or of an orchestrator's exec probe. The
// health service needs no token, so none is sent; a hub started with
// --client-ca takes no connection without a client certificate, which
// --tls-cert and --tls-key present.
func runHealth(ctx context.Context, args []string, stdout io.Writer) error {
	c := lookup("health")
	fs := newCommand(c.name, c.args, c.summary, stdout)
	var hub, caFile, certFile, keyFile *string
	var useTLS *bool
	var timeout *time.Duration
	env := envFlags(fs, func(fs *flag.FlagSet) {
		hub = fs.String("hub", DefaultListen, "the hub's gRPC `address`")
		useTLS = fs.Bool("tls", false, "connect with TLS without verifying the hub's certificate, as Kubernetes' HTTPS probes do (the probe sends nothing secret); with --tls-ca it is verified")
		caFile = fs.String("tls-ca", "", "connect with TLS and verify the hub's certificate with this CA (PEM `file`)")
		certFile = fs.String("tls-cert", "", "present this client certificate (PEM `file`; implies TLS), for a hub started with --client-ca")
		keyFile = fs.String("tls-key", "", "the key of --tls-cert (PEM `file`)")
		timeout = fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	})
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := fromEnv(fs, env); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return exitcode.Usage("health: unexpected argument %q", fs.Arg(0))
	}
	creds, err := probeCredentials(*useTLS, *caFile, *certFile, *keyFile)
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient(*hub, grpc.WithTransportCredentials(creds))
	if err != nil {
		return exitcode.Usage("health: --hub %q: %v", *hub, err)
	}
	defer conn.Close()
	cctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(cctx, &healthpb.HealthCheckRequest{Service: server.WriteHealth})
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return fmt.Errorf("health: %w", ctx.Err()) // interrupted
		}
		return exitcode.Unreachable(fmt.Errorf("health: %s at %s: %w", server.WriteHealth, *hub, err))
	}
	status := resp.GetStatus()
	if status != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("health: %s at %s: %s (GET /healthz on its HTTP address says why)", server.WriteHealth, *hub, status)
	}
	_, err = fmt.Fprintf(stdout, "%s at %s: %s\n", server.WriteHealth, *hub, status)
	return err
}

// probeCredentials are the transport of the probe: plaintext, or TLS,
// the hub's certificate verified with a CA file or not verified, with a
// client certificate when one is given.
func probeCredentials(useTLS bool, caFile, certFile, keyFile string) (credentials.TransportCredentials, error) {
	if (certFile == "") != (keyFile == "") {
		return nil, exitcode.Usage("health: --tls-cert and --tls-key go together (the client certificate and its key)")
	}
	if caFile == "" && certFile == "" && !useTLS {
		return insecure.NewCredentials(), nil
	}
	// A probe of liveness sends no token and reads one status: unless a
	// CA is given, the hub's identity protects nothing here.
	cfg := &tls.Config{InsecureSkipVerify: caFile == "", MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, exitcode.Usage("health: --tls-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, exitcode.Usage("health: --tls-ca: %s holds no PEM certificate", caFile)
		}
		cfg.RootCAs = pool
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, exitcode.Usage("health: --tls-cert, --tls-key: %v", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return credentials.NewTLS(cfg), nil
}
