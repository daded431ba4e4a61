package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// reach watches a client's dial for its first failure: a TCP connection
// refused or failed, or a TLS handshake failed. It ends the wait for the
// connection then (gRPC itself would retry until --connect-timeout), so
// a hub that is down is reported at once, with the cause.
type reach struct {
	cancel context.CancelFunc // ends the dial's wait

	mu  sync.Mutex
	err error // the first failure
}

// fail records err, if it is the first failure, and ends the wait.
func (r *reach) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
	r.cancel()
}

// failure is the first failure, nil if none.
func (r *reach) failure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// watch returns the target to dial for the address hub and the dial
// options that report its failures. A host:port is dialed by a dialer of
// its own through gRPC's passthrough resolver, so a failure is one of the
// whole address (net.Dialer tries each of a name's IP addresses before it
// fails); a gRPC target with a scheme ("dns:///h:p", "unix:path") keeps
// gRPC's dialer, and only its handshakes are watched.
func (r *reach) watch(hub string, tlsCfg *tls.Config) (string, []grpc.DialOption) {
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(watchedCreds{creds, r})}
	if hasScheme(hub) {
		return hub, opts
	}
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			r.fail(err)
		}
		return conn, err
	}
	return "passthrough:///" + hub, append(opts, grpc.WithContextDialer(dial))
}

// hasScheme reports whether a gRPC target names its resolver.
func hasScheme(target string) bool {
	return strings.Contains(target, "://") || strings.HasPrefix(target, "unix:")
}

// watchedCreds are transport credentials whose failed handshakes are
// reported to a reach.
type watchedCreds struct {
	credentials.TransportCredentials
	r *reach
}

// ClientHandshake implements credentials.TransportCredentials.
func (w watchedCreds) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	c, info, err := w.TransportCredentials.ClientHandshake(ctx, authority, conn)
	if err != nil {
		w.r.fail(&handshakeError{err})
	}
	return c, info, err
}

// Clone implements credentials.TransportCredentials.
func (w watchedCreds) Clone() credentials.TransportCredentials {
	return watchedCreds{w.TransportCredentials.Clone(), w.r}
}

// handshakeError is a failed TLS handshake.
type handshakeError struct{ err error }

func (e *handshakeError) Error() string { return "TLS handshake failed: " + e.err.Error() }
func (e *handshakeError) Unwrap() error { return e.err }

// unreachable describes why the hub at hub could not be reached: "cannot
// reach hubd at 127.0.0.1:7420: connection refused (is `hubd serve`
// running?)".
func unreachable(hub string, err error) error {
	var (
		dns   *net.DNSError
		op    *net.OpError
		shake *handshakeError
	)
	cause, hint := err.Error(), ""
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		cause, hint = "connection refused", "is `hubd serve` running?"
	case errors.As(err, &shake):
		hint = "does the hub serve TLS, with a certificate --tls-ca trusts?"
	case errors.As(err, &dns):
		cause, hint = dns.Error(), "check --hub"
	case errors.As(err, &op) && op.Timeout():
		cause, hint = "no answer", "is `hubd serve` running there, and reachable?"
	case errors.As(err, &op):
		cause = op.Err.Error()
	}
	if hint != "" {
		cause += " (" + hint + ")"
	}
	return fmt.Errorf("cannot reach hubd at %s: %s", hub, cause)
}
