package floor

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/wal"
)

// method is the floor's unary method.
const method = "/hubd.floor.Floor/Send"

// meta is what the floor stores as each session's metadata (the log
// requires some with a session's first record).
const meta = "floor"

// Server is the floors' gRPC server over its own log: the floor's unary
// method and the turn floor's stream.
type Server struct {
	log    *wal.Log
	grpc   *grpc.Server
	lis    net.Listener
	dir    string // removed on Close
	served chan error

	mu       sync.Mutex
	sessions map[[16]byte]*session
	pairs    map[[16]byte]*pair // the turn floor's
}

// session is one client's stream of records: its lock is held from
// choosing the seq through the append, as the hub holds a session's.
type session struct {
	mu   sync.Mutex
	last uint64
}

// Start opens a fresh log (fsync on) in a new directory under parent (""
// is the system's temporary directory; it should be on the disk the hub's
// log is on) and serves the floors on a loopback port. Close removes
// the directory.
func Start(parent string) (*Server, error) {
	dir, err := os.MkdirTemp(parent, "floor-")
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	log, err := wal.Open(wal.Options{Dir: dir, Logger: zerolog.Nop()})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("floor: %w", err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = log.Close()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("floor: %w", err)
	}
	s := &Server{log: log, lis: lis, dir: dir, served: make(chan error, 1), sessions: map[[16]byte]*session{}, pairs: map[[16]byte]*pair{}}
	s.grpc = grpc.NewServer(grpc.StaticStreamWindowSize(streamWindow), grpc.StaticConnWindowSize(connWindow),
		grpc.ForceServerCodecV2(newServerCodec()))
	s.grpc.RegisterService(&grpc.ServiceDesc{
		ServiceName: "hubd.floor.Floor",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "Send", Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			req := new(hubpb.SendRequest)
			if err := dec(req); err != nil {
				return nil, err
			}
			return s.send(ctx, req)
		}}},
		Streams: []grpc.StreamDesc{{StreamName: "Turns", Handler: s.turns, ServerStreams: true, ClientStreams: true}},
	}, s)
	go func() { s.served <- s.grpc.Serve(lis) }()
	return s, nil
}

// The flow-control windows of hubd's server and agentsdk's clients,
// fixed (internal/server, agentsdk): gRPC's dynamic windows cost a ping
// and its ack per small message, which the floor must not pay when hubd
// does not.
const (
	streamWindow = 1 << 20
	connWindow   = 4 << 20
)

// dialOptions are the floor's clients' options: loopback, no TLS, the
// windows above, agentsdk's codec.
func dialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStaticStreamWindowSize(streamWindow), grpc.WithStaticConnWindowSize(connWindow),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(hubsvc.ClientCodec()))}
}

// Addr is the server's loopback address.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// LogStats are the log's totals (commits, requests per commit).
func (s *Server) LogStats() wal.Stats { return s.log.Stats() }

// Close stops the server, closes the log and removes its directory.
func (s *Server) Close() error {
	s.grpc.Stop()
	err := <-s.served
	if errors.Is(err, grpc.ErrServerStopped) {
		err = nil
	}
	err = errors.Join(err, s.log.Close(), os.RemoveAll(s.dir))
	if err != nil {
		return fmt.Errorf("floor: close: %w", err)
	}
	return nil
}

// send appends req's envelope as the next record of its session and
// answers with its seq, once the log has synced it.
func (s *Server) send(ctx context.Context, req *hubpb.SendRequest) (*hubpb.SendResponse, error) {
	id, err := uuid.Parse(req.GetSessionId())
	if err != nil || req.GetEnvelope() == nil {
		return nil, status.Errorf(codes.InvalidArgument, "floor: want a session UUID and an envelope")
	}
	ss := s.session(id)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	env := req.GetEnvelope()
	env.SessionId, env.Seq = req.GetSessionId(), ss.last+1
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(env)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "floor: %v", err)
	}
	w := wal.Write{Session: id, Records: []wal.Record{{Seq: env.Seq, Data: data}}}
	if env.Seq == 1 {
		w.Meta = []byte(meta)
	}
	if err := s.log.Append(ctx, w); err != nil {
		return nil, status.Errorf(codes.Unavailable, "floor: %v", err)
	}
	ss.last = env.Seq
	return &hubpb.SendResponse{Seq: env.Seq}, nil
}

// session returns id's session, made on first use.
func (s *Server) session(id [16]byte) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	if ss == nil {
		ss = &session{}
		s.sessions[id] = ss
	}
	return ss
}

// Load is a run of the floor's clients.
type Load struct {
	// Conc is how many requests are in flight: that many clients, each
	// sending its next request when the last is acknowledged.
	Conc int
	// Conns is how many connections they share (at most Conc; 0: one each).
	Conns int
	// Payload is the text bytes of each envelope.
	Payload int
	// Record is called with the start and the acknowledgement of every
	// request, from the clients' goroutines.
	Record func(start, done time.Time)
}

// Drive runs ld's clients against the server at addr until stop is
// closed, then waits for the requests in flight. A failed request ends
// the run with its error.
func Drive(ctx context.Context, addr string, ld Load, stop <-chan struct{}) error {
	if ld.Conc < 1 {
		return errors.New("floor: Conc must be at least 1")
	}
	n := ld.Conns
	if n <= 0 || n > ld.Conc {
		n = ld.Conc
	}
	conns := make([]*grpc.ClientConn, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				_ = c.Close()
			}
		}
	}()
	for i := range conns {
		c, err := grpc.NewClient(addr, dialOptions()...)
		if err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		conns[i] = c
	}
	text := strings.Repeat("x", ld.Payload)
	run := strings.ToLower(rand.Text()[:8])
	errs := make(chan error, ld.Conc)
	var wg sync.WaitGroup
	for i := range ld.Conc {
		wg.Go(func() { errs <- client(ctx, conns[i%n], run+"-"+strconv.Itoa(i)+"-", text, ld.Record, stop) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// client sends requests on conn until stop is closed.
func client(ctx context.Context, conn *grpc.ClientConn, idPre, text string, record func(start, done time.Time), stop <-chan struct{}) error {
	sid := uuid.NewString()
	resp := new(hubpb.SendResponse)
	for n := 1; ; n++ {
		select {
		case <-stop:
			return nil
		default:
		}
		req := &hubpb.SendRequest{SessionId: sid, Envelope: &hubpb.Envelope{Type: "text", ClientMsgId: idPre + strconv.Itoa(n),
			Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: text}}}}
		start := time.Now()
		if err := conn.Invoke(ctx, method, req, resp); err != nil {
			return fmt.Errorf("floor: send: %w", err)
		}
		if record != nil {
			record(start, time.Now())
		}
	}
}
