package huba2a

import (
	"context"
	"net/http"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/internal/a2aconf"
	"github.com/hubd/hubd/session"
)

// ProtocolVersion is the A2A version served (Major.Minor).
const ProtocolVersion = "1.0"

// Watcher streams a session's envelopes to a caller (feed.Feed).
type Watcher interface {
	Watch(ctx context.Context, agent string, operator bool, id session.ID, opts feed.WatchOptions) (*feed.Subscription, error)
}

// Config configures the A2A side.
type Config struct {
	// Agents are the exposed hubd agents.
	Agents []a2aconf.Exposed
	// Client calls the hub as the request's caller: the headers named by
	// Forward are passed to it as metadata.
	Client  hubsvc.HubClient
	Forward []string
	// Watch follows a task's session for streams.
	Watch Watcher
	// Identify authenticates a request as the JSON API does.
	Identify func(*http.Request) (hubgrpc.Identity, error)
	// Security says how callers authenticate, for the cards: "bearer"
	// (tokens), "mtls" (client certificates), "dev" (development mode:
	// a name in the X-Hubd-Agent header, from this machine).
	Security []string
	// Version is the hub's version, each card's version.
	Version string
}

// Server serves the A2A routes.
type Server struct {
	cfg    Config
	agents map[string]a2aconf.Exposed
}

// New returns the A2A side of the hub.
func New(cfg Config) *Server {
	s := &Server{cfg: cfg, agents: map[string]a2aconf.Exposed{}}
	for _, a := range cfg.Agents {
		s.agents[a.Agent] = a
	}
	return s
}

// Register mounts the routes on mux.
func (s *Server) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /.well-known/agent-card.json", s.hubCard)
	mux.HandleFunc("GET /a2a/agents/{agent}/.well-known/agent-card.json", s.agentCard)
	mux.HandleFunc("POST /a2a", s.rpc)
	mux.HandleFunc("POST /a2a/agents/{agent}", s.rpc)
	mux.HandleFunc("POST /a2a/agents/{agent}/", s.rpc)
}

// call is ctx with the request's credentials as outgoing metadata, so
// that the hub sees the caller itself.
func (s *Server) call(r *http.Request) context.Context {
	md := metadata.MD{}
	for _, h := range s.cfg.Forward {
		if v := r.Header.Values(h); len(v) > 0 {
			md.Set(strings.ToLower(h), v...)
		}
	}
	return metadata.NewOutgoingContext(r.Context(), md)
}

// taskType is the session type of tasks.
const taskType = "workflow@1"

// Labels of a task's session.
const (
	labelAgent   = "a2a_agent"   // the exposed agent
	labelContext = "a2a_context" // the task's context id (its thread key)
)

// reasonOf is the hub's stable reason of a refusal: a hub error's, or
// the one a status's ErrorInfo names; REASON_UNSPECIFIED for neither.
func reasonOf(err error) hubpb.Reason {
	if r, ok := session.ReasonOf(err); ok {
		return r
	}
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == "hubd" {
			return hubpb.Reason(hubpb.Reason_value[info.GetReason()])
		}
	}
	return hubpb.Reason_REASON_UNSPECIFIED
}

// detailOf is a refusal's message, as the hub words it.
func detailOf(err error) string {
	if _, ok := session.ReasonOf(err); ok {
		return session.Detail(err)
	}
	return status.Convert(err).Message()
}
