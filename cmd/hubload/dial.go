package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
)

// maxRecvBytes bounds one response (a page of ReadLog is the largest).
const maxRecvBytes = 256 << 20

// pool is a set of plaintext gRPC connections to one hub.
type pool struct {
	conns   []*grpc.ClientConn
	clients []hubpb.HubClient
}

// dial opens n connections to addr (connecting eagerly).
func dial(addr string, n int) (*pool, error) {
	p := &pool{}
	for range n {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecvBytes)))
		if err != nil {
			p.close()
			return nil, fmt.Errorf("connecting to %s: %w", addr, err)
		}
		cc.Connect()
		p.conns = append(p.conns, cc)
		p.clients = append(p.clients, hubpb.NewHubClient(cc))
	}
	return p, nil
}

// waitReady waits until every connection is ready, at most d.
func (p *pool) waitReady(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for _, cc := range p.conns {
		for st := cc.GetState(); st != connectivity.Ready; st = cc.GetState() {
			cc.Connect()
			if !cc.WaitForStateChange(ctx, st) {
				return fmt.Errorf("the hub at %s is not reachable (%v after %v)", cc.Target(), st, d)
			}
		}
	}
	return nil
}

// client returns the client agent i uses.
func (p *pool) client(i int) hubpb.HubClient { return p.clients[i%len(p.clients)] }

// close closes every connection.
func (p *pool) close() {
	for _, cc := range p.conns {
		cc.Close()
	}
}

// as returns ctx naming agent as the caller (development mode), built once
// per agent so calls add no metadata of their own.
func as(ctx context.Context, agent string) context.Context {
	return metadata.NewOutgoingContext(ctx, metadata.Pairs(hubgrpc.AgentHeader, agent))
}

// reasonOf is an error's google.rpc.ErrorInfo reason, or its gRPC code in
// upper snake case when it carries none ("UNAVAILABLE").
func reasonOf(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		if errors.Is(err, context.Canceled) {
			return "CANCELED"
		}
		return "ERROR"
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() != "" {
			return info.GetReason()
		}
	}
	return codeName(st.Code())
}

// codeName spells a gRPC code the way ErrorInfo reasons are spelled.
func codeName(c codes.Code) string {
	var b strings.Builder
	lower := false
	for _, r := range c.String() {
		upper := r >= 'A' && r <= 'Z'
		if upper && lower {
			b.WriteByte('_')
		}
		lower = !upper
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

// retryable reports whether a failed Send may be retried with the same
// client_msg_id: the hub was unreachable, draining or reloading.
func retryable(err error) bool {
	if status.Code(err) == codes.Unavailable {
		return true
	}
	switch reasonOf(err) {
	case hubgrpc.ReasonDraining, hubgrpc.ReasonSessionFailed:
		return true
	}
	return false
}

// backoff is a retry delay doubling from 20ms to 1s.
type backoff struct{ d time.Duration }

// wait sleeps for the next delay or until done is closed; it reports
// whether the delay elapsed.
func (b *backoff) wait(done <-chan struct{}) bool {
	b.d = min(max(2*b.d, 20*time.Millisecond), time.Second)
	t := time.NewTimer(b.d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// reset starts the delays over after a success.
func (b *backoff) reset() { b.d = 0 }
