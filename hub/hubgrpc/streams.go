package hubgrpc

import (
	"context"
	"fmt"
	"sync/atomic"

	"google.golang.org/grpc/stats"

	"github.com/hubd/hubd/hub"
)

// DefaultMaxStreamsPerConn is how many AgentStream, Subscribe and Watch
// streams one connection may hold at once unless Config says otherwise.
const DefaultMaxStreamsPerConn = 128

// connStreams counts the streams of one connection.
type connStreams struct{ n atomic.Int32 }

type connKey struct{}

// connTagger is a stats handler that gives each connection a stream
// counter, found in the contexts of its calls.
type connTagger struct{}

// ConnStats returns the stats handler the server must be given
// (grpc.StatsHandler) for the per-connection stream limit to apply.
func ConnStats() stats.Handler { return connTagger{} }

func (connTagger) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return context.WithValue(ctx, connKey{}, &connStreams{})
}
func (connTagger) HandleConn(context.Context, stats.ConnStats)                     {}
func (connTagger) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (connTagger) HandleRPC(context.Context, stats.RPCStats)                       {}

// takeConnStream counts a stream on the call's connection, or refuses it
// past the limit (LIMIT_REACHED); the returned function uncounts it.
func (s *Service) takeConnStream(ctx context.Context) (func(), error) {
	c, _ := ctx.Value(connKey{}).(*connStreams)
	if c == nil {
		return func() {}, nil
	}
	if n := c.n.Add(1); int(n) > s.maxConnStreams {
		c.n.Add(-1)
		err := &hub.LimitError{What: fmt.Sprintf("this connection holds %d streams (open another connection, or end some)", n-1),
			Flag: "--max-streams-per-conn", Value: int64(s.maxConnStreams), Err: hub.ErrLimit}
		s.limited(err)
		return nil, err
	}
	return func() { c.n.Add(-1) }, nil
}
