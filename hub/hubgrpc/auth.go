package hubgrpc

import (
	"bufio"
	"context"
	"crypto/subtle"
	"fmt"
	"io"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/hubd/hubd/session"
)

// AgentHeader is the metadata key naming the caller in development mode.
const AgentHeader = "x-hubd-agent"

// Identity is an authenticated caller.
type Identity struct {
	Agent    string
	Operator bool // may read and close any session
}

// Tokens maps bearer tokens to agents.
type Tokens struct {
	byToken map[string]Identity
}

// ParseTokens reads a tokens file: one agent per line, "name token" or
// "name token operator"; blank lines and lines starting with # are
// ignored. A name or token given twice is an error.
func ParseTokens(r io.Reader) (*Tokens, error) {
	t := &Tokens{byToken: map[string]Identity{}}
	names := map[string]bool{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 || len(f) > 3 || (len(f) == 3 && f[2] != "operator") {
			return nil, fmt.Errorf("tokens line %d: want \"name token\" or \"name token operator\"", n)
		}
		if err := session.CheckName(f[0]); err != nil {
			return nil, fmt.Errorf("tokens line %d: %w", n, err)
		}
		if len(f[1]) < 16 {
			return nil, fmt.Errorf("tokens line %d: the token of %q is shorter than 16 characters", n, f[0])
		}
		if names[f[0]] {
			return nil, fmt.Errorf("tokens line %d: %q is listed twice", n, f[0])
		}
		if _, dup := t.byToken[f[1]]; dup {
			return nil, fmt.Errorf("tokens line %d: the token of %q is also another agent's", n, f[0])
		}
		names[f[0]] = true
		t.byToken[f[1]] = Identity{Agent: f[0], Operator: len(f) == 3}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(t.byToken) == 0 {
		return nil, fmt.Errorf("tokens file lists no agent")
	}
	return t, nil
}

// lookup finds a token's identity, comparing in constant time.
func (t *Tokens) lookup(token string) (Identity, bool) {
	var found Identity
	ok := false
	for k, id := range t.byToken { //hubd:orderless constant-time scan of all tokens
		if subtle.ConstantTimeCompare([]byte(k), []byte(token)) == 1 {
			found, ok = id, true
		}
	}
	return found, ok
}

// Authenticator turns a call's credentials into an identity.
type Authenticator struct {
	// Tokens, when set, are required (unless a client certificate names
	// the agent).
	Tokens *Tokens
	// Dev accepts any agent named in the x-hubd-agent metadata. Only for a
	// hub on a loopback address without tokens.
	Dev bool
	// Operators are agents (by certificate or dev name) with operator
	// rights.
	Operators []string
}

type identityKey struct{}

// FromContext returns the identity the interceptors put in ctx.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// WithIdentity returns ctx carrying id as the authenticated caller, as the
// interceptors leave it: for a call a cluster node runs on behalf of a
// client another node authenticated (the handlers read it with
// FromContext).
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// authenticate finds the caller of ctx.
func (a *Authenticator) authenticate(ctx context.Context) (Identity, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if auth := first(md, "authorization"); auth != "" {
		token, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok || a.Tokens == nil {
			return Identity{}, fmt.Errorf("authorization must be \"Bearer <token>\" for an agent in the tokens file: %w", ErrUnauthenticated)
		}
		id, ok := a.Tokens.lookup(strings.TrimSpace(token))
		if !ok {
			return Identity{}, fmt.Errorf("unknown token: %w", ErrUnauthenticated)
		}
		return id, nil
	}
	if cn := peerCommonName(ctx); cn != "" {
		if err := session.CheckName(cn); err != nil {
			return Identity{}, fmt.Errorf("the client certificate's common name is no agent name (%v): %w", err, ErrUnauthenticated)
		}
		return a.withOperator(Identity{Agent: cn}), nil
	}
	if a.Dev {
		name := first(md, AgentHeader)
		if err := session.CheckName(name); err != nil {
			return Identity{}, fmt.Errorf("development mode: name the agent in the %q metadata (%v): %w", AgentHeader, err, ErrUnauthenticated)
		}
		return a.withOperator(Identity{Agent: name}), nil
	}
	return Identity{}, fmt.Errorf("no credentials: send \"authorization: Bearer <token>\" metadata: %w", ErrUnauthenticated)
}

func (a *Authenticator) withOperator(id Identity) Identity {
	for _, op := range a.Operators {
		if op == id.Agent {
			id.Operator = true
		}
	}
	return id
}

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// peerCommonName returns the verified client certificate's common name.
func peerCommonName(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return ""
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return ""
	}
	return info.State.VerifiedChains[0][0].Subject.CommonName
}

// public reports whether a method needs no authentication.
func public(method string) bool {
	return strings.HasPrefix(method, "/grpc.health.v1.") || strings.HasPrefix(method, "/grpc.reflection.")
}

// UnaryInterceptor authenticates unary calls.
func (s *Service) UnaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if public(info.FullMethod) {
		return handler(ctx, req)
	}
	id, err := s.auth.authenticate(ctx)
	if err != nil {
		return nil, statusOf(s.lg, info.FullMethod, err)
	}
	if err := s.check(req); err != nil {
		return nil, statusOf(s.lg, info.FullMethod, err)
	}
	return handler(context.WithValue(ctx, identityKey{}, id), req)
}

// StreamInterceptor authenticates streams.
func (s *Service) StreamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if public(info.FullMethod) {
		return handler(srv, ss)
	}
	id, err := s.auth.authenticate(ss.Context())
	if err != nil {
		return statusOf(s.lg, info.FullMethod, err)
	}
	return handler(srv, &identifiedStream{ServerStream: ss, ctx: context.WithValue(ss.Context(), identityKey{}, id), svc: s, method: info.FullMethod})
}

type identifiedStream struct {
	grpc.ServerStream
	ctx    context.Context
	svc    *Service
	method string
}

func (s *identifiedStream) Context() context.Context { return s.ctx }

// RecvMsg receives a request and checks its strings and numbers.
func (s *identifiedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if s.method == connectMethod {
		return nil // AgentStream checks each frame itself, and answers a bad send
	}
	return statusOf(s.svc.lg, s.method, s.svc.check(m))
}
