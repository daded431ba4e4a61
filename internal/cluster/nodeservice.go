package cluster

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/internal/cluster/bus"
)

// ErrUnreachable reports a node whose node service this node cannot call:
// no lease record names its address (it is gone, or never was).
var ErrUnreachable = errors.New("cluster: the node's address is not known (no lease names it)")

// Local is what a node serves to the other nodes, on its node service:
// the hub's own service over its hub (one with no Router: a call the node
// service takes runs here, never gathered or forwarded again).
type Local struct {
	Hub *hub.Hub
	// Service is a hubgrpc.Service over Hub with no Router.
	Service hubsvc.HubServer
	// Options are the gRPC server's options (limits, codec, keepalives)
	// beside the node service's own credentials and interceptors.
	Options []grpc.ServerOption
	// Tracer records the spans of the calls served; nil records none.
	Tracer trace.TracerProvider
}

// nodeService is the gRPC server the other nodes call: the Hub service on
// a listener of its own (Config.NodeListen), apart from the clients'.
type nodeService struct {
	lis  net.Listener
	g    *grpc.Server
	addr string // as advertised in the leases
	done chan struct{}
}

// serveNodeService starts the node service. With the cluster's credentials it
// speaks mutual TLS only, and takes a call only from a certificate the
// nodes' CA signed (nodeTLS); without, it takes any (a development
// cluster, or --insecure-nats).
func (n *Node) serveNodeService(l Local) (*nodeService, error) {
	lis, err := net.Listen("tcp", n.nodeListen())
	if err != nil {
		return nil, fmt.Errorf("cluster: the node service on %s: %w", n.nodeListen(), err)
	}
	creds := insecure.NewCredentials()
	if n.tls != nil {
		creds = credentials.NewTLS(n.tls.server())
	}
	g := grpc.NewServer(append(slices.Clip(l.Options), grpc.Creds(creds),
		grpc.ChainUnaryInterceptor(n.nodeUnary, hubgrpc.TraceInterceptor(l.Tracer)),
		grpc.ChainStreamInterceptor(n.nodeStream))...)
	hubsvc.RegisterHubServer(g, l.Service)
	s := &nodeService{lis: lis, g: g, addr: n.nodeAdvertise(lis.Addr()), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if err := g.Serve(lis); err != nil {
			n.logger.Error().Err(err).Msg("cluster: the node service stopped")
		}
	}()
	n.logger.Info().Str("node_listen", lis.Addr().String()).Str("node_addr", s.addr).Bool("mtls", n.tls != nil).Msg("node service listening")
	return s, nil
}

// nodeListen is where the node service listens: Config.NodeListen, or
// the host of the clients' address with any free port.
func (n *Node) nodeListen() string {
	if n.cfg.NodeListen != "" {
		return n.cfg.NodeListen
	}
	host, _, err := net.SplitHostPort(n.listen)
	if err != nil {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, "0")
}

// nodeAdvertise is the node service's address as the leases name it:
// Config.NodeAdvertise, or the host clients are given (Advertise) with
// the port listened on.
func (n *Node) nodeAdvertise(bound net.Addr) string {
	if n.cfg.NodeAdvertise != "" {
		return n.cfg.NodeAdvertise
	}
	_, port, _ := net.SplitHostPort(bound.String())
	host, _, err := net.SplitHostPort(n.cfg.Advertise)
	if err != nil || host == "" {
		host, _, _ = net.SplitHostPort(bound.String())
	}
	return net.JoinHostPort(host, port)
}

// close stops the node service: its calls and streams are ended.
func (s *nodeService) close() {
	s.g.Stop()
	<-s.done
}

// nodeCaller is the context of a call the node service takes: the caller
// named by the calling node's metadata, believed only from a node (a
// certificate the nodes' CA signed, which the TLS handshake already
// required; checked again here).
func (n *Node) nodeCaller(ctx context.Context, method string) (context.Context, error) {
	if n.tls != nil {
		p, _ := peer.FromContext(ctx)
		var verified [][]*x509.Certificate
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			verified = info.State.VerifiedChains
		}
		if len(verified) == 0 {
			n.logger.Warn().Str("method", method).Msg("cluster: a call to the node service not from a node; refused")
			return nil, status.Errorf(codes.Unauthenticated, "%s: %v: the node service takes calls from the nodes of the cluster alone", method, ErrNotNode)
		}
	}
	md, _ := metadata.FromIncomingContext(ctx)
	agent := md.Get(mdAgent)
	if len(agent) != 1 || agent[0] == "" {
		return nil, status.Errorf(codes.InvalidArgument, "%s: a call between nodes names its caller in %s", method, mdAgent)
	}
	op := md.Get(mdOperator)
	return hubgrpc.WithIdentity(ctx, hubgrpc.Identity{Agent: agent[0], Operator: len(op) == 1 && op[0] == "1"}), nil
}

// nodeUnary authenticates a call to the node service, and tells a
// listing's caller which partitions were served throughout (a trailer):
// the partitions its answer covers.
func (n *Node) nodeUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, err := n.nodeCaller(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	if m, ok := req.(proto.Message); !ok || !gathered(info.FullMethod, m) {
		return handler(ctx, req)
	}
	before := n.servedNow()
	resp, err := handler(ctx, req)
	if terr := grpc.SetTrailer(ctx, metadata.Pairs(mdServed, formatInts(intersect(before, n.servedNow())))); terr != nil {
		n.logger.Debug().Err(terr).Msg("cluster: served partitions not sent")
	}
	return resp, err
}

// nodeStream authenticates a stream of the node service: a Subscribe or
// a Watch another node runs for its client (feed.go, watch.go).
func (n *Node) nodeStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if info.FullMethod != hubsvc.Hub_Subscribe_FullMethodName && info.FullMethod != hubsvc.Hub_Watch_FullMethodName {
		return status.Errorf(codes.Unimplemented, "%s is not served between nodes", info.FullMethod)
	}
	ctx, err := n.nodeCaller(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	return handler(srv, &callerStream{ServerStream: ss, ctx: ctx})
}

// callerStream is a stream with its caller in its context.
type callerStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *callerStream) Context() context.Context { return s.ctx }

// peers are this node's connections to the other nodes' node services,
// by node id, each dialled when first needed and again when the node's
// address changes (it restarted).
type peers struct {
	tls *nodeTLS
	lg  zerolog.Logger

	mu    sync.Mutex
	conns map[string]peerConn
}

type peerConn struct {
	addr string
	cc   *grpc.ClientConn
}

func newPeers(t *nodeTLS, lg zerolog.Logger) *peers {
	return &peers{tls: t, lg: lg, conns: map[string]peerConn{}}
}

// Flow-control windows of the connections between nodes, fixed as the
// server's are (internal/server): one connection carries every call and
// stream a node routes to another.
const (
	peerStreamWindow = 1 << 20
	peerConnWindow   = 16 << 20
)

// conn returns the connection to node at addr.
func (p *peers) conn(node, addr string) (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.conns[node]; ok && c.addr == addr {
		return c.cc, nil
	} else if ok {
		c.cc.Close()
		delete(p.conns, node)
	}
	cc, err := grpc.NewClient(addr, dialOptions(p.tls, node)...)
	if err != nil {
		return nil, fmt.Errorf("cluster: node %s at %s: %w", node, addr, err)
	}
	p.conns[node] = peerConn{addr: addr, cc: cc}
	return cc, nil
}

// dialOptions are the options of a connection to node's node service:
// mutual TLS with t (nil: none, a cluster without credentials).
func dialOptions(t *nodeTLS, node string) []grpc.DialOption {
	creds := insecure.NewCredentials()
	if t != nil {
		creds = credentials.NewTLS(t.client(node))
	}
	return []grpc.DialOption{grpc.WithTransportCredentials(creds),
		// Trusted peers: the client's own request limits were applied by
		// the node asked, and the answers are what its client gets.
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32), grpc.MaxCallSendMsgSize(math.MaxInt32)),
		grpc.WithStaticStreamWindowSize(peerStreamWindow), grpc.WithStaticConnWindowSize(peerConnWindow),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 5 * time.Second, PermitWithoutStream: true}),
		// A node that restarts is called again within a second, not
		// after gRPC's default backoff of up to two minutes.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6,
			Jitter: 0.2, MaxDelay: time.Second}, MinConnectTimeout: 2 * time.Second})}
}

// NodeDialOptions are the gRPC options with which a node of the cluster
// of creds, named self, calls node's node service, as the nodes do (nil
// creds: a cluster without credentials). A call on such a connection
// names its caller in the metadata hubd-node-agent and
// hubd-node-operator ("1"). For tools and tests that act as a node.
func NodeDialOptions(creds *bus.Creds, self, node string) ([]grpc.DialOption, error) {
	var t *nodeTLS
	if creds != nil {
		var err error
		if t, err = newNodeTLS(creds, self); err != nil {
			return nil, err
		}
	}
	return dialOptions(t, node), nil
}

// close closes every connection.
func (p *peers) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for node, c := range p.conns { //hubd:orderless closing all
		c.cc.Close()
		delete(p.conns, node)
	}
}

// peer returns the connection to node's node service, at the address its
// lease records name.
func (n *Node) peer(node string) (*grpc.ClientConn, error) {
	addr := ""
	for _, o := range n.leases.Owners() { //hubd:orderless any record of the node
		if o.NodeID == node && o.NodeAddr != "" {
			addr = o.NodeAddr
			break
		}
	}
	if addr == "" {
		for _, m := range n.leases.Nodes() {
			if m.NodeID == node && m.NodeAddr != "" {
				addr = m.NodeAddr
			}
		}
	}
	if addr == "" {
		return nil, fmt.Errorf("node %s: %w", node, ErrUnreachable)
	}
	return n.peers.conn(node, addr)
}

// NodeAddr is the node service's address as the leases name it ("" before
// Serve).
func (n *Node) NodeAddr() string {
	if n.service == nil {
		return ""
	}
	return n.service.addr
}

// ID is the node's id.
func (n *Node) ID() string { return n.cfg.NodeID }
