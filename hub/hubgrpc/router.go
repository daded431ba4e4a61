package hubgrpc

import (
	"context"

	"google.golang.org/grpc"

	"github.com/hubd/hubd/hubpb"
)

// Deliveries is a stream of deliveries the service hands out on
// Subscribe, Watch and an agent stream: the feed's subscription, or one a Router
// makes (a cluster node's, gathered from the nodes that serve the
// sessions). Next waits for the next delivery; TryNext returns at once,
// ok false when none is ready; OnReady's function is called, without
// blocking, whenever one may have become ready or the stream failed;
// Close ends it. A stream that ends cleanly (a tree watch whose root ended)
// returns io.EOF.
type Deliveries interface {
	Next(ctx context.Context) (*hubpb.Delivery, error)
	TryNext(ctx context.Context) (*hubpb.Delivery, bool, error)
	OnReady(f func())
	Close()
}

// OpenLocal opens the deliveries of this service's feed for a request (the
// request as asked, or as a Router changed it: cursors moved on). Its
// error is a status.
type OpenLocal[R any] func(ctx context.Context, req R) (Deliveries, error)

// A Router routes what the service would otherwise run on its own hub:
// in a cluster (internal/cluster), the sessions are served by several
// nodes, and the node asked runs each call and stream where its sessions
// are. Config.Router; nil runs everything on the hub.
type Router interface {
	// Unary runs the sends and opens of an agent stream, as the Send and
	// Open calls they are (a grpc.UnaryServerInterceptor: handler runs
	// them on the hub and returns a status). ctx carries the agent's
	// identity (FromContext).
	Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error)
	// Subscribe opens the deliveries of a Subscribe call or of an agent
	// stream for id; local opens the hub's part.
	Subscribe(ctx context.Context, id Identity, req *hubpb.SubscribeRequest, local OpenLocal[*hubpb.SubscribeRequest]) (Deliveries, error)
	// Watch opens a Watch call's deliveries for id; local opens the
	// hub's watch.
	Watch(ctx context.Context, id Identity, req *hubpb.WatchRequest, local OpenLocal[*hubpb.WatchRequest]) (Deliveries, error)
}
