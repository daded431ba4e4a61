package hubgrpc

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/session"
)

// SendDelta implements hubsvc.HubServer: a piece of the caller's reply,
// forwarded and never written (hub.SendDelta).
func (s *Service) SendDelta(ctx context.Context, req *hubpb.Delta) (*hubpb.DeltaResponse, error) {
	return unary(s, ctx, "SendDelta", func(id Identity) (*hubpb.DeltaResponse, error) {
		return s.sendDelta(ctx, id.Agent, req)
	})
}

func (s *Service) sendDelta(ctx context.Context, agent string, d *hubpb.Delta) (*hubpb.DeltaResponse, error) {
	sid, err := parseID("session_id", d.GetSessionId())
	if err != nil {
		return nil, err
	}
	return s.h.SendDelta(ctx, agent, sid, d)
}

// SendStream implements hubsvc.HubServer: deltas, then the final send,
// whose acknowledgement answers the call. A refused delta ends the call
// with its status; a call whose client ends it before the final envelope
// writes nothing.
func (s *Service) SendStream(stream grpc.ClientStreamingServer[hubpb.SendStreamFrame, hubpb.SendResponse]) error {
	ctx := stream.Context()
	id, err := caller(ctx)
	if err != nil {
		return statusOf(s.lg, "SendStream", err)
	}
	for {
		f, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return statusOf(s.lg, "SendStream", fmt.Errorf("the stream ended without its final envelope (SendStreamFrame.final): nothing was written: %w", session.ErrMalformed))
		}
		if err != nil {
			return err
		}
		if err := s.check(f); err != nil {
			return statusOf(s.lg, "SendStream", err)
		}
		switch fr := f.GetFrame().(type) {
		case *hubpb.SendStreamFrame_Delta:
			if _, err := s.routedDelta(ctx, id, fr.Delta); err != nil {
				return statusOf(s.lg, "SendStream", err)
			}
		case *hubpb.SendStreamFrame_Final:
			resp, err := s.routedSend(ctx, id, fr.Final)
			if err != nil {
				return statusOf(s.lg, "SendStream", err)
			}
			return stream.SendAndClose(resp)
		default:
			return statusOf(s.lg, "SendStream", fmt.Errorf("a SendStreamFrame needs delta or final: %w", session.ErrMalformed))
		}
	}
}

// routedDelta runs a delta of a stream of id's on the hub, or through the
// Router (a cluster node's: to the session's owner).
func (s *Service) routedDelta(ctx context.Context, id Identity, d *hubpb.Delta) (*hubpb.DeltaResponse, error) {
	if s.router == nil {
		return s.sendDelta(ctx, id.Agent, d)
	}
	return routedAs(s, id, ctx, hubsvc.Hub_SendDelta_FullMethodName, d, func(ctx context.Context, d *hubpb.Delta) (*hubpb.DeltaResponse, error) {
		return s.sendDelta(ctx, id.Agent, d)
	})
}

// routedSend is routedDelta for a send.
func (s *Service) routedSend(ctx context.Context, id Identity, req *hubpb.SendRequest) (*hubpb.SendResponse, error) {
	run := func(ctx context.Context, r *hubpb.SendRequest) (*hubpb.SendResponse, error) {
		sid, err := parseID("session_id", r.GetSessionId())
		if err != nil {
			return nil, err
		}
		return s.h.Send(ctx, id.Agent, sid, r.GetEnvelope())
	}
	if s.router == nil {
		return run(ctx, req)
	}
	return routedAs(s, id, ctx, hubsvc.Hub_Send_FullMethodName, req, run)
}

// delta forwards a delta frame of the agent stream, on the reading
// goroutine (nothing is written: it is quick), so that it leaves before
// the sends read after it; a refusal (or checkErr, the frame's own)
// comes back to the agent as its delta with refused set.
func (c *agentConn) delta(ctx context.Context, d *hubpb.Delta, checkErr error) {
	err := checkErr
	if err == nil {
		_, err = c.svc.routedDelta(ctx, c.id, d)
	}
	if err == nil {
		return
	}
	err = statusOf(c.svc.lg, "AgentStream", err)
	back := &hubpb.Delta{SessionId: d.GetSessionId(), From: c.id.Agent, StreamId: d.GetStreamId(), Index: d.GetIndex(), Refused: StreamError(err)}
	_ = c.write(&hubpb.HubFrame{Frame: &hubpb.HubFrame_Delta{Delta: back}})
}

// deliveryFrame is the agent stream's frame of delivery d: a delta on its
// own, else the delivery.
func deliveryFrame(d *hubpb.Delivery) *hubpb.HubFrame {
	if x := d.GetDelta(); x != nil {
		return &hubpb.HubFrame{Frame: &hubpb.HubFrame_Delta{Delta: x}}
	}
	return &hubpb.HubFrame{Frame: &hubpb.HubFrame_Delivery{Delivery: d}}
}
