package sdkgo_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
)

// frameCounter counts the HTTP/2 frames of one direction of a connection
// by type, parsing the bytes as they pass.
type frameCounter struct {
	preface int // bytes of the client's connection preface still to skip
	hdr     []byte
	skip    uint32 // payload bytes of the current frame still to skip
	counts  *[256]atomic.Int64
}

func (f *frameCounter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		switch {
		case f.preface > 0:
			k := min(f.preface, len(p))
			f.preface -= k
			p = p[k:]
		case f.skip > 0:
			k := min(int(f.skip), len(p))
			f.skip -= uint32(k)
			p = p[k:]
		default:
			k := min(9-len(f.hdr), len(p))
			f.hdr = append(f.hdr, p[:k]...)
			p = p[k:]
			if len(f.hdr) == 9 {
				f.counts[f.hdr[3]].Add(1)
				f.skip = binary.BigEndian.Uint32(append([]byte{0}, f.hdr[:3]...))
				f.hdr = f.hdr[:0]
			}
		}
	}
	return n, nil
}

// pingProxy forwards loopback connections to addr and counts the HTTP/2
// frames each way.
type pingProxy struct {
	l        net.Listener
	up, down [256]atomic.Int64 // frames by type: agent → hub, hub → agent
	wg       sync.WaitGroup
}

func newPingProxy(t *testing.T, addr string) *pingProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pingProxy{l: l}
	t.Cleanup(func() { l.Close(); p.wg.Wait() })
	p.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			const preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
			pipe := func(dst, src net.Conn, fc *frameCounter) {
				_, _ = io.Copy(io.MultiWriter(dst, fc), src)
				dst.Close()
				src.Close()
			}
			p.wg.Go(func() { pipe(s, c, &frameCounter{preface: len(preface), counts: &p.up}) })
			p.wg.Go(func() { pipe(c, s, &frameCounter{counts: &p.down}) })
		}
	})
	return p
}

// TestNoFlowControlPings: forty turns between two agents served over
// their streams cost no HTTP/2 PING either way. With gRPC's dynamic
// flow-control windows each message read is followed by a ping to
// estimate the bandwidth-delay product, and its ack: two more frames,
// and a write and a wake-up on each side, per message; the hub and
// agentsdk fix their windows (1 MiB a stream, 4 MiB a connection).
func TestNoFlowControlPings(t *testing.T) {
	h := hubtest.New(t)
	p := newPingProxy(t, h.Addr())
	ctx := testCtx(t)
	names := []string{"ping", "pong"}
	var clients []*agentsdk.Client
	for _, n := range names {
		clients = append(clients, dial(t, p.l.Addr().String(), n))
	}
	serve(t, ctx, clients, func(c *agentsdk.Client) agentsdk.Handler {
		return func(context.Context, *agentsdk.Turn) (agentsdk.Reply, error) {
			return agentsdk.ReplyText(string(bytes.Repeat([]byte("x"), 256))), nil
		}
	})
	const turns = 40
	s, err := clients[0].OpenWorkflow(ctx, agentsdk.RoundRobin(names, turns), "pong")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := transcript(t, ctx, clients[0], s.ID())
	if len(got) != turns {
		t.Fatalf("%d turns, want %d", len(got), turns)
	}
	const (
		frameData = 0x0
		framePing = 0x6
	)
	if d := p.down[frameData].Load(); d < turns {
		t.Fatalf("the proxy saw %d DATA frames from the hub, want at least %d: it counts nothing", d, turns)
	}
	if up, down := p.up[framePing].Load(), p.down[framePing].Load(); up+down > 2 {
		t.Errorf("PING frames: %d from the agents, %d from the hub over %d turns, want none per message", up, down, turns)
	}
}
