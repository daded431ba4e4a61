package hubgrpc

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/session"
)

// Config configures the service.
type Config struct {
	Auth   Authenticator
	Logger zerolog.Logger // default zerolog.Nop()
	// MaxStreamsPerConn bounds the Subscribe and Watch streams of one
	// connection, agent streams included (with the ConnStats handler on
	// the server); default DefaultMaxStreamsPerConn.
	MaxStreamsPerConn int
	// MaxInFlight bounds the sends and opens one agent stream runs at
	// once; default DefaultMaxInFlight.
	MaxInFlight int
	// Tracer records the spans of the sends and opens of agent streams, as
	// TraceInterceptor does for calls; nil records none (the caller's
	// traceparent still reaches the envelope).
	Tracer trace.TracerProvider
	// OnStreamRequest, when set, is called after each send or open of an agent
	// stream with its method ("Send" or "Open"), its status (nil when
	// acknowledged) and how long it took (for metrics: a Send or Open call
	// is counted by the interceptors).
	OnStreamRequest func(method string, err error, took time.Duration)
	// CloseGrace is how long an agent stream the hub ends waits for the
	// agent to close its side after the closing frame before it is
	// cancelled (with StreamTap installed); default DefaultCloseGrace.
	CloseGrace time.Duration
	// OnLimit, when set, is told of every call, frame or stream the
	// service refuses at a limit of its own (a request too large, a
	// connection's streams), by the limit's name (hub.LimitError.Limit);
	// the hub's own refusals go to its Limited hook.
	OnLimit func(limit string)
	// Router, when set, routes the streams and the agent streams' sends
	// and opens (a cluster node's); nil runs them on the hub.
	Router Router
}

// Service implements hubsvc.HubServer over a hub (writes) and its feed
// (deliveries and reads).
type Service struct {
	hubsvc.UnimplementedHubServer
	h    *hub.Hub
	f    *feed.Feed
	auth Authenticator
	lg   zerolog.Logger

	maxConnStreams  int
	maxInFlight     int
	tracer          trace.Tracer
	recording       bool // the tracer records spans (not the no-op one)
	onStreamRequest func(string, error, time.Duration)
	onLimit         func(string)
	closeGrace      time.Duration
	router          Router

	cmu   sync.Mutex
	conns map[*agentConn]struct{} // the agent streams, ended when the hub closes
}

// New returns the service over h and its feed f.
func New(h *hub.Hub, f *feed.Feed, cfg Config) *Service {
	if cfg.MaxStreamsPerConn <= 0 {
		cfg.MaxStreamsPerConn = DefaultMaxStreamsPerConn
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.CloseGrace <= 0 {
		cfg.CloseGrace = DefaultCloseGrace
	}
	if cfg.Tracer == nil {
		cfg.Tracer = noop.NewTracerProvider()
	}
	s := &Service{h: h, f: f, auth: cfg.Auth, lg: cfg.Logger, maxConnStreams: cfg.MaxStreamsPerConn, maxInFlight: cfg.MaxInFlight,
		tracer: cfg.Tracer.Tracer(TracerName), recording: Recording(cfg.Tracer), onStreamRequest: cfg.OnStreamRequest, onLimit: cfg.OnLimit, closeGrace: cfg.CloseGrace, router: cfg.Router, conns: map[*agentConn]struct{}{}}
	context.AfterFunc(h.Lifetime(), s.endStreams)
	return s
}

// endStreams ends every agent stream: the hub is closing.
func (s *Service) endStreams() {
	s.cmu.Lock()
	conns := make([]*agentConn, 0, len(s.conns))
	for c := range s.conns { //hubd:orderless each ends alike
		conns = append(conns, c)
	}
	s.cmu.Unlock()
	err := statusOf(s.lg, "AgentStream", hub.ErrClosed)
	for _, c := range conns {
		go c.end(err) // its closing frame waits behind a write blocked on a reader that stopped: not the others'
	}
}

// track counts c among the agent streams (ended when the hub closes)
// and returns its removal.
func (s *Service) track(c *agentConn) func() {
	s.cmu.Lock()
	s.conns[c] = struct{}{}
	s.cmu.Unlock()
	if s.h.Lifetime().Err() != nil { // closed before it was counted
		c.end(statusOf(s.lg, "AgentStream", hub.ErrClosed))
	}
	return func() {
		s.cmu.Lock()
		delete(s.conns, c)
		s.cmu.Unlock()
	}
}

// Register registers the service on g.
func (s *Service) Register(g *grpc.Server) { hubsvc.RegisterHubServer(g, s) }

// caller returns the authenticated identity of a call.
func caller(ctx context.Context) (Identity, error) {
	id, ok := FromContext(ctx)
	if !ok {
		return Identity{}, fmt.Errorf("no identity on the call: %w", ErrUnauthenticated)
	}
	return id, nil
}

// unary runs a handler body and maps its error to a status.
func unary[R any](s *Service, ctx context.Context, method string, f func(Identity) (R, error)) (R, error) {
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

// parseID parses the session id a request gives in field.
func parseID(field, s string) (session.ID, error) { return session.ParseIDOf(field, s) }

// Open implements hubsvc.HubServer. Fields of the request this hub does
// not know were dropped by the codec.
func (s *Service) Open(ctx context.Context, req *hubpb.OpenRequest) (*hubpb.OpenResponse, error) {
	return unary(s, ctx, "Open", func(id Identity) (*hubpb.OpenResponse, error) {
		return s.h.Open(ctx, id.Agent, req)
	})
}

// Send implements hubsvc.HubServer. The sender is the caller; an envelope
// naming another sender is refused. Fields of the envelope this hub does
// not know were dropped by the codec.
func (s *Service) Send(ctx context.Context, req *hubpb.SendRequest) (*hubpb.SendResponse, error) {
	return unary(s, ctx, "Send", func(id Identity) (*hubpb.SendResponse, error) {
		sid, err := parseID("session_id", req.GetSessionId())
		if err != nil {
			return nil, err
		}
		return s.h.Send(ctx, id.Agent, sid, req.GetEnvelope())
	})
}

// AckInvite implements hubsvc.HubServer.
func (s *Service) AckInvite(ctx context.Context, req *hubpb.InviteRequest) (*hubpb.SendResponse, error) {
	return unary(s, ctx, "AckInvite", func(id Identity) (*hubpb.SendResponse, error) {
		sid, err := parseID("session_id", req.GetSessionId())
		if err != nil {
			return nil, err
		}
		return s.h.AckInvite(ctx, id.Agent, sid)
	})
}

// RejectInvite implements hubsvc.HubServer.
func (s *Service) RejectInvite(ctx context.Context, req *hubpb.InviteRequest) (*hubpb.SendResponse, error) {
	return unary(s, ctx, "RejectInvite", func(id Identity) (*hubpb.SendResponse, error) {
		sid, err := parseID("session_id", req.GetSessionId())
		if err != nil {
			return nil, err
		}
		return s.h.RejectInvite(ctx, id.Agent, sid, req.GetReason())
	})
}

// Close implements hubsvc.HubServer.
func (s *Service) Close(ctx context.Context, req *hubpb.CloseRequest) (*hubpb.SendResponse, error) {
	return unary(s, ctx, "Close", func(id Identity) (*hubpb.SendResponse, error) {
		sid, err := parseID("session_id", req.GetSessionId())
		if err != nil {
			return nil, err
		}
		return s.h.CloseSession(ctx, id.Agent, id.Operator, sid, req.GetReason())
	})
}

// Fork implements hubsvc.HubServer: a participant of the source (or an
// operator) opens a session continuing it from one of its seqs.
func (s *Service) Fork(ctx context.Context, req *hubpb.ForkRequest) (*hubpb.ForkResponse, error) {
	return unary(s, ctx, "Fork", func(id Identity) (*hubpb.ForkResponse, error) {
		return s.h.Fork(ctx, id.Agent, id.Operator, req)
	})
}

// Steer implements hubsvc.HubServer.
func (s *Service) Steer(ctx context.Context, req *hubpb.SteerRequest) (*hubpb.SendResponse, error) {
	return unary(s, ctx, "Steer", func(id Identity) (*hubpb.SendResponse, error) {
		return s.h.Steer(ctx, id.Agent, id.Operator, req)
	})
}

// Purge implements hubsvc.HubServer: an operator archives and purges an
// ended session whose whole tree ended (hub.Purge).
func (s *Service) Purge(ctx context.Context, req *hubpb.PurgeRequest) (*hubpb.PurgeResponse, error) {
	return unary(s, ctx, "Purge", func(id Identity) (*hubpb.PurgeResponse, error) {
		if !id.Operator {
			return nil, fmt.Errorf("%q may not purge a session: it is an operator's call: %w", id.Agent, hub.ErrPermissionDenied)
		}
		sid, err := parseID("session_id", req.GetSessionId())
		if err != nil {
			return nil, err
		}
		t, err := s.h.Purge(ctx, sid)
		if err != nil {
			return nil, err
		}
		return &hubpb.PurgeResponse{SessionId: sid.String(), PurgedAt: timestamppb.New(t.At), Archive: t.Archive}, nil
	})
}

// Erase implements hubsvc.HubServer: an operator erases sessions for
// good (hub.Erase).
func (s *Service) Erase(ctx context.Context, req *hubpb.EraseRequest) (*hubpb.EraseResponse, error) {
	return unary(s, ctx, "Erase", func(id Identity) (*hubpb.EraseResponse, error) {
		ts, ids, err := s.h.Erase(ctx, id.Agent, id.Operator, req)
		if err != nil {
			return nil, err
		}
		out := &hubpb.EraseResponse{}
		for i, t := range ts {
			out.Sessions = append(out.Sessions, &hubpb.ErasedSession{SessionId: ids[i].String(), ErasedAt: timestamppb.New(t.At),
				ErasedBy: t.By, Reason: t.Reason})
		}
		return out, nil
	})
}

// Import implements hubsvc.HubServer: an operator writes purged sessions
// back from an archive file of the hub (hub.Import).
func (s *Service) Import(ctx context.Context, req *hubpb.ImportRequest) (*hubpb.ImportResponse, error) {
	return unary(s, ctx, "Import", func(id Identity) (*hubpb.ImportResponse, error) {
		if !id.Operator {
			return nil, fmt.Errorf("%q may not import sessions: it is an operator's call: %w", id.Agent, hub.ErrPermissionDenied)
		}
		ids := make([]session.ID, len(req.GetSessionIds()))
		for i, x := range req.GetSessionIds() {
			sid, err := parseID("session_ids", x)
			if err != nil {
				return nil, err
			}
			ids[i] = sid
		}
		done, err := s.h.Import(ctx, req.GetArchive(), ids)
		if err != nil {
			return nil, err
		}
		out := &hubpb.ImportResponse{}
		for _, x := range done {
			out.Sessions = append(out.Sessions, &hubpb.ImportedSession{SessionId: x.ID.String(), Envelopes: uint64(x.Envelopes), Archive: x.Archive})
		}
		return out, nil
	})
}

// GetSession implements hubsvc.HubServer.
func (s *Service) GetSession(ctx context.Context, req *hubpb.GetSessionRequest) (*hubpb.SessionInfo, error) {
	return unary(s, ctx, "GetSession", func(id Identity) (*hubpb.SessionInfo, error) {
		sid, err := parseID("session_id", req.GetSessionId())
		if err != nil {
			return nil, err
		}
		return s.f.Get(ctx, id.Agent, id.Operator, sid)
	})
}

// ListSessions implements hubsvc.HubServer.
func (s *Service) ListSessions(ctx context.Context, req *hubpb.ListSessionsRequest) (*hubpb.ListSessionsResponse, error) {
	return unary(s, ctx, "ListSessions", func(id Identity) (*hubpb.ListSessionsResponse, error) {
		f := feed.Filter{Creator: req.GetCreator(), Participant: req.GetParticipant(), Labels: req.GetLabels(), Limit: int(req.GetPageSize())}
		var err error
		if f.State, f.Quarantined, err = listState(req.GetState()); err != nil {
			return nil, err
		}
		if req.GetPageToken() != "" {
			if f.After, err = parseID("page_token", req.GetPageToken()); err != nil {
				return nil, err
			}
		}
		infos, next, err := s.f.List(ctx, id.Agent, id.Operator, f)
		if err != nil {
			return nil, err
		}
		return &hubpb.ListSessionsResponse{Sessions: infos, NextPageToken: next.String()}, nil
	})
}

// listState parses a listing's state filter: a lifecycle state, or
// QUARANTINED (the sessions found damaged), or "" for all.
func listState(s string) (session.State, bool, error) {
	switch {
	case s == "":
		return 0, false, nil
	case strings.EqualFold(s, feed.StateQuarantined):
		return 0, true, nil
	}
	st, err := session.ParseState(s)
	if err != nil {
		return 0, false, fmt.Errorf("state: unknown session state %q (known: PENDING, OPEN, CLOSED, EXPIRED, QUARANTINED): %w", s, session.ErrMalformed)
	}
	return st, false, nil
}

// ReadLog implements hubsvc.HubServer.
func (s *Service) ReadLog(ctx context.Context, req *hubpb.ReadLogRequest) (*hubpb.ReadLogResponse, error) {
	return unary(s, ctx, "ReadLog", func(id Identity) (*hubpb.ReadLogResponse, error) {
		sid, err := parseID("session_id", req.GetSessionId())
		if err != nil {
			return nil, err
		}
		es, next, err := s.f.ReadLog(ctx, id.Agent, id.Operator, sid, req.GetFromSeq(), int(req.GetLimit()))
		if err != nil {
			return nil, err
		}
		return &hubpb.ReadLogResponse{Envelopes: es, NextSeq: next}, nil
	})
}

// PendingTurns implements hubsvc.HubServer.
func (s *Service) PendingTurns(ctx context.Context, _ *hubpb.PendingTurnsRequest) (*hubpb.PendingTurnsResponse, error) {
	return unary(s, ctx, "PendingTurns", func(id Identity) (*hubpb.PendingTurnsResponse, error) {
		ds, err := s.f.PendingTurns(ctx, id.Agent)
		if err != nil {
			return nil, err
		}
		return &hubpb.PendingTurnsResponse{Turns: ds}, nil
	})
}

// GetView implements hubsvc.HubServer.
func (s *Service) GetView(ctx context.Context, req *hubpb.GetViewRequest) (*hubpb.View, error) {
	return unary(s, ctx, "GetView", func(id Identity) (*hubpb.View, error) {
		sid, err := parseID("session_id", req.GetSessionId())
		if err != nil {
			return nil, err
		}
		return s.f.View(ctx, id.Agent, sid, feed.ViewOptions{Name: req.GetName(), Window: int(req.GetWindow()), History: req.GetHistory()})
	})
}

// Delegate implements hubsvc.HubServer.
func (s *Service) Delegate(ctx context.Context, req *hubpb.DelegateRequest) (*hubpb.DelegateResponse, error) {
	return unary(s, ctx, "Delegate", func(id Identity) (*hubpb.DelegateResponse, error) {
		return s.h.Delegate(ctx, id.Agent, req)
	})
}

// Answer implements hubsvc.HubServer.
func (s *Service) Answer(ctx context.Context, req *hubpb.AnswerRequest) (*hubpb.SendResponse, error) {
	return unary(s, ctx, "Answer", func(id Identity) (*hubpb.SendResponse, error) {
		return s.h.Answer(ctx, id.Agent, id.Operator, req)
	})
}

// ListQuestions implements hubsvc.HubServer.
func (s *Service) ListQuestions(ctx context.Context, req *hubpb.ListQuestionsRequest) (*hubpb.ListQuestionsResponse, error) {
	return unary(s, ctx, "ListQuestions", func(id Identity) (*hubpb.ListQuestionsResponse, error) {
		var root session.ID
		if r := req.GetRootSessionId(); r != "" {
			var err error
			if root, err = parseID("root_session_id", r); err != nil {
				return nil, err
			}
		}
		qs, err := s.f.ListQuestions(ctx, id.Agent, id.Operator, req.GetAnswerer(), root)
		if err != nil {
			return nil, err
		}
		return &hubpb.ListQuestionsResponse{Questions: qs}, nil
	})
}

// GetTree implements hubsvc.HubServer.
func (s *Service) GetTree(ctx context.Context, req *hubpb.GetTreeRequest) (*hubpb.TreeNode, error) {
	return unary(s, ctx, "GetTree", func(id Identity) (*hubpb.TreeNode, error) {
		sid, err := parseID("session_id", req.GetSessionId())
		if err != nil {
			return nil, err
		}
		return s.f.GetTree(ctx, id.Agent, id.Operator, sid)
	})
}

// Replay implements hubsvc.HubServer: operators only.
func (s *Service) Replay(ctx context.Context, req *hubpb.ReplayRequest) (*hubpb.ReplayResponse, error) {
	return unary(s, ctx, "Replay", func(id Identity) (*hubpb.ReplayResponse, error) {
		if !id.Operator {
			return nil, fmt.Errorf("%q may not replay sessions: it is an operator's call: %w", id.Agent, hub.ErrPermissionDenied)
		}
		sid, err := parseID("session_id", req.GetSessionId())
		if err != nil {
			return nil, err
		}
		return s.h.Replay(ctx, sid)
	})
}

// Subscribe implements hubsvc.HubServer.
func (s *Service) Subscribe(req *hubpb.SubscribeRequest, stream grpc.ServerStreamingServer[hubpb.Delivery]) error {
	ctx := stream.Context()
	id, err := caller(ctx)
	if err != nil {
		return statusOf(s.lg, "Subscribe", err)
	}
	if _, err := subscribeOptions(req); err != nil {
		return statusOf(s.lg, "Subscribe", err)
	}
	done, err := s.takeConnStream(ctx)
	if err != nil {
		return statusOf(s.lg, "Subscribe", err)
	}
	defer done()
	sub, err := s.subscribe(ctx, id, req, nil)
	if err != nil {
		return statusOf(s.lg, "Subscribe", err)
	}
	return s.pump(ctx, "Subscribe", sub, stream)
}

// subscribe opens the deliveries of a Subscribe call or of an agent
// stream (riding on place): the hub's subscription, or the Router's feed.
func (s *Service) subscribe(ctx context.Context, id Identity, req *hubpb.SubscribeRequest, place *feed.StreamPlace) (Deliveries, error) {
	local := func(ctx context.Context, req *hubpb.SubscribeRequest) (Deliveries, error) {
		opts, err := subscribeOptions(req)
		if err != nil {
			return nil, statusOf(s.lg, "Subscribe", err)
		}
		opts.Place = place
		sub, err := s.f.Subscribe(ctx, id.Agent, opts)
		if err != nil {
			return nil, statusOf(s.lg, "Subscribe", err)
		}
		return sub, nil
	}
	if s.router == nil {
		return local(ctx, req)
	}
	return s.router.Subscribe(ctx, id, req, local)
}

// Watch implements hubsvc.HubServer.
func (s *Service) Watch(req *hubpb.WatchRequest, stream grpc.ServerStreamingServer[hubpb.Delivery]) error {
	ctx := stream.Context()
	id, err := caller(ctx)
	if err != nil {
		return statusOf(s.lg, "Watch", err)
	}
	if _, err := parseID("session_id", req.GetSessionId()); err != nil {
		return statusOf(s.lg, "Watch", err)
	}
	done, err := s.takeConnStream(ctx)
	if err != nil {
		return statusOf(s.lg, "Watch", err)
	}
	defer done()
	if _, err := treeCursors(req.GetCursors()); err != nil {
		return statusOf(s.lg, "Watch", err)
	}
	local := func(ctx context.Context, req *hubpb.WatchRequest) (Deliveries, error) {
		sid, err := parseID("session_id", req.GetSessionId())
		if err != nil {
			return nil, statusOf(s.lg, "Watch", err)
		}
		cursors, err := treeCursors(req.GetCursors())
		if err != nil {
			return nil, statusOf(s.lg, "Watch", err)
		}
		sub, err := s.f.Watch(ctx, id.Agent, id.Operator, sid, feed.WatchOptions{From: req.GetFromSeq(), Tree: req.GetTree(),
			Verbose: req.GetVerbose(), Cursors: cursors, Deltas: req.GetDeltas()})
		if err != nil {
			return nil, statusOf(s.lg, "Watch", err)
		}
		return sub, nil
	}
	var sub Deliveries
	if s.router == nil {
		sub, err = local(ctx, req)
	} else {
		sub, err = s.router.Watch(ctx, id, req, local)
	}
	if err != nil {
		return statusOf(s.lg, "Watch", err)
	}
	return s.pump(ctx, "Watch", sub, stream)
}

// treeCursors checks a tree watch's cursors: each key a session id,
// spelled as the hub spells it (the watch finds them by that spelling).
func treeCursors(in map[string]uint64) (map[string]uint64, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(map[string]uint64, len(in))
	for _, k := range slices.Sorted(maps.Keys(in)) {
		sid, err := parseID("cursors key", k)
		if err != nil {
			return nil, err
		}
		out[sid.String()] = in[k]
	}
	return out, nil
}

// pump sends a subscription's deliveries until the client goes away or the
// subscription ends.
//
// The response headers go out at once, so a client knows its subscription
// is registered before any delivery arrives.
func (s *Service) pump(ctx context.Context, method string, sub Deliveries, stream grpc.ServerStreamingServer[hubpb.Delivery]) error {
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
			if errors.Is(err, io.EOF) {
				return nil // a tree watch whose root ended: a clean end
			}
			return statusOf(s.lg, method, err)
		}
		if err := stream.Send(d); err != nil {
			return err
		}
	}
}

// backupChunk is the most data one BackupChunk carries.
const backupChunk = 1 << 20

// Backup implements hubsvc.HubServer: operators only. The log's snapshot
// goes out in chunks of at most backupChunk bytes; the first names the
// format, the last carries the SHA-256 and length of all of it.
func (s *Service) Backup(_ *hubpb.BackupRequest, stream grpc.ServerStreamingServer[hubpb.BackupChunk]) error {
	ctx := stream.Context()
	id, err := caller(ctx)
	if err != nil {
		return statusOf(s.lg, "Backup", err)
	}
	if !id.Operator {
		return statusOf(s.lg, "Backup", fmt.Errorf("%q may not back up the hub: it is an operator's call: %w", id.Agent, hub.ErrPermissionDenied))
	}
	format, err := s.h.BackupFormat()
	if errors.Is(err, hub.ErrNoBackup) {
		return status.Error(codes.Unimplemented, err.Error())
	}
	cw := &chunkWriter{stream: stream, sum: sha256.New(), format: format}
	if err := s.h.Backup(ctx, cw); err != nil {
		if cw.sendErr != nil {
			return cw.sendErr // the stream broke: its status as it is
		}
		return statusOf(s.lg, "Backup", err)
	}
	if err := cw.flush(); err != nil {
		return err
	}
	return stream.Send(&hubpb.BackupChunk{Format: cw.pendingFormat(), Sha256: cw.sum.Sum(nil), TotalBytes: cw.total})
}

// chunkWriter cuts what Backup writes into BackupChunks.
type chunkWriter struct {
	stream grpc.ServerStreamingServer[hubpb.BackupChunk]
	sum    hash.Hash
	format string // sent on the first chunk, then ""
	buf    []byte
	total  uint64
	// sendErr is the first failed Send: the client went away.
	sendErr error
}

func (c *chunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	c.sum.Write(p)
	c.total += uint64(n)
	for len(p) > 0 {
		k := min(len(p), backupChunk-len(c.buf))
		c.buf = append(c.buf, p[:k]...)
		p = p[k:]
		if len(c.buf) == backupChunk {
			if err := c.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// flush sends what is buffered, if anything.
func (c *chunkWriter) flush() error {
	if len(c.buf) == 0 {
		return nil
	}
	if err := c.stream.Send(&hubpb.BackupChunk{Data: c.buf, Format: c.pendingFormat()}); err != nil {
		c.sendErr = err
		return err
	}
	c.buf = c.buf[:0]
	return nil
}

// pendingFormat returns the format once: for the first chunk sent.
func (c *chunkWriter) pendingFormat() string {
	f := c.format
	c.format = ""
	return f
}
