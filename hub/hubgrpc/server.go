package hubgrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Config configures the service.
type Config struct {
	Auth   Authenticator
	Logger zerolog.Logger // default zerolog.Nop()
}

// Server implements hubpb.HubServer over a hub.
type Server struct {
	hubpb.UnimplementedHubServer
	h    *hub.Hub
	auth Authenticator
	lg   zerolog.Logger
}

// New returns the service over h.
func New(h *hub.Hub, cfg Config) *Server {
	return &Server{h: h, auth: cfg.Auth, lg: cfg.Logger}
}

// Register registers the service on g.
func (s *Server) Register(g *grpc.Server) { hubpb.RegisterHubServer(g, s) }

// caller returns the authenticated identity of a call.
func caller(ctx context.Context) (Identity, error) {
	id, ok := FromContext(ctx)
	if !ok {
		return Identity{}, fmt.Errorf("no identity on the call: %w", ErrUnauthenticated)
	}
	return id, nil
}

// unary runs a handler body and maps its error through the table.
func unary[R any](s *Server, ctx context.Context, method string, f func(Identity) (R, error)) (R, error) {
	var zero R
	id, err := caller(ctx)
	if err != nil {
		return zero, statusOf(s.lg, method, err)
	}
	r, err := f(id)
	if err != nil {
		return zero, statusOf(s.lg, method, err)
	}
	return r, nil
}

// Open implements hubpb.HubServer.
func (s *Server) Open(ctx context.Context, req *hubpb.OpenRequest) (*hubpb.OpenResponse, error) {
	return unary(s, ctx, "Open", func(id Identity) (*hubpb.OpenResponse, error) {
		r, err := openFromPB(req)
		if err != nil {
			return nil, err
		}
		o, err := s.h.Open(ctx, id.Agent, r)
		if err != nil {
			return nil, err
		}
		info, err := s.h.Get(ctx, id.Agent, id.Operator, o.Meta.ID)
		if err != nil {
			return nil, err
		}
		return &hubpb.OpenResponse{Session: infoToPB(info), Existing: o.Existing}, nil
	})
}

func openFromPB(req *hubpb.OpenRequest) (hub.OpenRequest, error) {
	typ, err := session.ParseType(req.GetType())
	if err != nil {
		return hub.OpenRequest{}, err
	}
	r := hub.OpenRequest{Type: typ, Labels: req.GetLabels(), Key: req.GetIdempotencyKey(),
		TTL: req.GetTtl().AsDuration(), InviteTimeout: req.GetInviteTimeout().AsDuration()}
	for _, p := range req.GetParticipants() {
		r.Participants = append(r.Participants, session.Participant{Name: p.GetName(), Role: p.GetRole(), AutoAccept: p.GetAutoAccept()})
	}
	if r.Knobs, err = jsonMap("knobs", req.GetKnobs()); err != nil {
		return r, err
	}
	if g := req.GetGraphJson(); g != "" {
		if r.Knobs == nil {
			r.Knobs = map[string]json.RawMessage{}
		}
		r.Knobs["graph"] = json.RawMessage(g)
	}
	if es := req.GetExpectations(); es != nil {
		r.Expectations = []session.Expectation{}
		for _, e := range es.GetItems() {
			r.Expectations = append(r.Expectations, session.Expectation{Name: e.GetName(), Action: session.Action(e.GetAction()),
				Within: durationOfSeconds(e.GetSeconds())})
		}
	}
	if req.GetParentSessionId() != "" {
		if r.Parent, err = parseID("parent_session_id", req.GetParentSessionId()); err != nil {
			return r, err
		}
	}
	return r, nil
}

// Send implements hubpb.HubServer. The sender is the caller; an envelope
// naming another sender is refused.
func (s *Server) Send(ctx context.Context, req *hubpb.SendRequest) (*hubpb.SendResponse, error) {
	return unary(s, ctx, "Send", func(id Identity) (*hubpb.SendResponse, error) {
		sid, err := parseID("session_id", req.GetSessionId())
		if err != nil {
			return nil, err
		}
		env, err := EnvelopeFromPB(req.GetEnvelope())
		if err != nil {
			return nil, err
		}
		if env.From != "" && env.From != id.Agent {
			return nil, fmt.Errorf("the envelope says it is from %q but the caller is %q: %w", env.From, id.Agent, ErrImpersonation)
		}
		if !env.Session.IsZero() && env.Session != sid {
			return nil, fmt.Errorf("envelope.session_id %v differs from session_id %v: %w", env.Session, sid, session.ErrMalformed)
		}
		ack, err := s.h.Send(ctx, id.Agent, sid, env)
		return ackToPB(ack), err
	})
}

// AckInvite implements hubpb.HubServer.
func (s *Server) AckInvite(ctx context.Context, req *hubpb.InviteRequest) (*hubpb.SendResponse, error) {
	return unary(s, ctx, "AckInvite", func(id Identity) (*hubpb.SendResponse, error) {
		sid, err := parseID("session_id", req.GetSessionId())
		if err != nil {
			return nil, err
		}
		ack, err := s.h.AckInvite(ctx, id.Agent, sid)
		return ackToPB(ack), err
	})
}

// RejectInvite implements hubpb.HubServer.
func (s *Server) RejectInvite(ctx context.Context, req *hubpb.InviteRequest) (*hubpb.SendResponse, error) {
	return unary(s, ctx, "RejectInvite", func(id Identity) (*hubpb.SendResponse, error) {
		sid, err := parseID("session_id", req.GetSessionId())
		if err != nil {
			return nil, err
		}
		ack, err := s.h.RejectInvite(ctx, id.Agent, sid, req.GetReason())
		return ackToPB(ack), err
	})
}

// Close implements hubpb.HubServer.
func (s *Server) Close(ctx context.Context, req *hubpb.CloseRequest) (*hubpb.SendResponse, error) {
	return unary(s, ctx, "Close", func(id Identity) (*hubpb.SendResponse, error) {
		sid, err := parseID("session_id", req.GetSessionId())
		if err != nil {
			return nil, err
		}
		ack, err := s.h.CloseSession(ctx, id.Agent, id.Operator, sid, req.GetReason())
		return ackToPB(ack), err
	})
}

// GetSession implements hubpb.HubServer.
func (s *Server) GetSession(ctx context.Context, req *hubpb.GetSessionRequest) (*hubpb.SessionInfo, error) {
	return unary(s, ctx, "GetSession", func(id Identity) (*hubpb.SessionInfo, error) {
		sid, err := parseID("session_id", req.GetSessionId())
		if err != nil {
			return nil, err
		}
		info, err := s.h.Get(ctx, id.Agent, id.Operator, sid)
		if err != nil {
			return nil, err
		}
		return infoToPB(info), nil
	})
}

// ListSessions implements hubpb.HubServer.
func (s *Server) ListSessions(ctx context.Context, req *hubpb.ListSessionsRequest) (*hubpb.ListSessionsResponse, error) {
	return unary(s, ctx, "ListSessions", func(id Identity) (*hubpb.ListSessionsResponse, error) {
		f := hub.Filter{Creator: req.GetCreator(), Participant: req.GetParticipant(), Labels: req.GetLabels(), Limit: int(req.GetPageSize())}
		var err error
		if req.GetState() != "" {
			if f.State, err = session.ParseState(req.GetState()); err != nil {
				return nil, err
			}
		}
		if req.GetPageToken() != "" {
			if f.After, err = parseID("page_token", req.GetPageToken()); err != nil {
				return nil, err
			}
		}
		infos, next, err := s.h.List(id.Agent, id.Operator, f)
		if err != nil {
			return nil, err
		}
		resp := &hubpb.ListSessionsResponse{NextPageToken: next.String()}
		for _, i := range infos {
			resp.Sessions = append(resp.Sessions, infoToPB(i))
		}
		return resp, nil
	})
}

// ReadLog implements hubpb.HubServer.
func (s *Server) ReadLog(ctx context.Context, req *hubpb.ReadLogRequest) (*hubpb.ReadLogResponse, error) {
	return unary(s, ctx, "ReadLog", func(id Identity) (*hubpb.ReadLogResponse, error) {
		sid, err := parseID("session_id", req.GetSessionId())
		if err != nil {
			return nil, err
		}
		es, err := s.h.ReadLog(ctx, id.Agent, id.Operator, sid, req.GetFromSeq(), int(req.GetLimit()))
		if err != nil {
			return nil, err
		}
		resp := &hubpb.ReadLogResponse{}
		for _, e := range es {
			resp.Envelopes = append(resp.Envelopes, EnvelopeToPB(e))
		}
		return resp, nil
	})
}

// PendingTurns implements hubpb.HubServer.
func (s *Server) PendingTurns(ctx context.Context, _ *hubpb.PendingTurnsRequest) (*hubpb.PendingTurnsResponse, error) {
	return unary(s, ctx, "PendingTurns", func(id Identity) (*hubpb.PendingTurnsResponse, error) {
		ds, err := s.h.PendingTurns(ctx, id.Agent)
		if err != nil {
			return nil, err
		}
		resp := &hubpb.PendingTurnsResponse{}
		for _, d := range ds {
			resp.Turns = append(resp.Turns, deliveryToPB(d))
		}
		return resp, nil
	})
}

// GetView implements hubpb.HubServer.
func (s *Server) GetView(ctx context.Context, req *hubpb.GetViewRequest) (*hubpb.View, error) {
	return unary(s, ctx, "GetView", func(id Identity) (*hubpb.View, error) {
		sid, err := parseID("session_id", req.GetSessionId())
		if err != nil {
			return nil, err
		}
		v, err := s.h.View(ctx, id.Agent, sid, hub.ViewOptions{Name: req.GetName(), Window: int(req.GetWindow())})
		if err != nil {
			return nil, err
		}
		out := &hubpb.View{SessionId: v.Session.String(), Name: v.Name, OlderTotal: int32(v.OlderTotal)}
		for _, it := range v.Items {
			out.Items = append(out.Items, &hubpb.ViewItem{Seq: it.Seq, From: it.From, Type: string(it.Type), Text: it.Text, At: ts(it.At)})
		}
		for _, c := range v.Older {
			out.Older = append(out.Older, &hubpb.SpeakerCount{Speaker: c.Speaker, Count: int32(c.Count)})
		}
		return out, nil
	})
}

// Subscribe implements hubpb.HubServer.
func (s *Server) Subscribe(req *hubpb.SubscribeRequest, stream grpc.ServerStreamingServer[hubpb.Delivery]) error {
	ctx := stream.Context()
	id, err := caller(ctx)
	if err != nil {
		return statusOf(s.lg, "Subscribe", err)
	}
	opts := hub.SubscribeOptions{Cursors: map[session.ID]uint64{}, Ended: req.GetIncludeEnded()}
	for k, v := range req.GetCursors() {
		sid, err := parseID("cursors key", k)
		if err != nil {
			return statusOf(s.lg, "Subscribe", err)
		}
		opts.Cursors[sid] = v
	}
	sub, err := s.h.Subscribe(ctx, id.Agent, opts)
	if err != nil {
		return statusOf(s.lg, "Subscribe", err)
	}
	return s.pump(ctx, "Subscribe", sub, stream)
}

// Watch implements hubpb.HubServer.
func (s *Server) Watch(req *hubpb.WatchRequest, stream grpc.ServerStreamingServer[hubpb.Delivery]) error {
	ctx := stream.Context()
	id, err := caller(ctx)
	if err != nil {
		return statusOf(s.lg, "Watch", err)
	}
	sid, err := parseID("session_id", req.GetSessionId())
	if err != nil {
		return statusOf(s.lg, "Watch", err)
	}
	sub, err := s.h.Watch(ctx, id.Agent, id.Operator, sid, req.GetFromSeq())
	if err != nil {
		return statusOf(s.lg, "Watch", err)
	}
	return s.pump(ctx, "Watch", sub, stream)
}

// pump sends a subscription's deliveries until the client goes away or the
// subscription ends.
//
// The response headers go out at once, so a client knows its subscription
// is registered before any delivery arrives.
func (s *Server) pump(ctx context.Context, method string, sub *hub.Subscription, stream grpc.ServerStreamingServer[hubpb.Delivery]) error {
	defer sub.Close()
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	for {
		d, err := sub.Next(ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				return nil // the client left
			}
			return statusOf(s.lg, method, err)
		}
		if err := stream.Send(deliveryToPB(d)); err != nil {
			return err
		}
	}
}
