package hubgrpc_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/internal/wiretest"
	"github.com/hubd/hubd/wal"
)

// TestCodeTable: every stable reason has its own row in the table from
// reason to gRPC code; only INTERNAL (and what is not a reason) is
// Internal.
func TestCodeTable(t *testing.T) {
	// Numbers hub.proto reserves for reasons not in this build.
	reserved := map[int]bool{32: true}
	for n := range len(hubpb.Reason_name) + len(reserved) {
		if reserved[n] {
			continue
		}
		r := hubpb.Reason(n)
		code := hubgrpc.Code(r)
		switch {
		case r == hubpb.Reason_REASON_UNSPECIFIED, r == hubpb.Reason_INTERNAL:
			if code != codes.Internal {
				t.Errorf("%v is %v, want Internal", r, code)
			}
		case code == codes.Internal || code == codes.OK || code == codes.Unknown:
			t.Errorf("%v has no row in the code table (it maps to %v)", r, code)
		}
	}
	if _, ok := hubpb.Reason_name[int32(len(hubpb.Reason_name)+len(reserved))]; ok {
		t.Fatal("the reasons are not numbered densely from 0; this test misses some")
	}
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// brokenReads is a log whose reads fail with an error that carries no
// reason (and a detail clients must not see).
type brokenReads struct{ hub.Log }

func (brokenReads) Scan(context.Context, [16]byte, uint64, func(uint64, []byte) error) error {
	return errors.New("disk on fire under /srv/secret")
}

// TestInternalNotLeaked: an error without a stable reason reaches the
// client as INTERNAL without its text, which the hub logs once.
func TestInternalNotLeaked(t *testing.T) {
	l, err := wal.Open(wal.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	h, fd, err := feed.Open(context.Background(), hub.Config{Log: brokenReads{server.WALLog(l)}, Adapters: server.Adapters(nil)}, feed.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	var logged syncBuffer
	svc := hubgrpc.New(h, fd, hubgrpc.Config{Auth: hubgrpc.Authenticator{Dev: true}, Logger: zerolog.New(&logged)})
	g := grpc.NewServer(grpc.ChainUnaryInterceptor(svc.UnaryInterceptor), grpc.ChainStreamInterceptor(svc.StreamInterceptor))
	svc.Register(g)
	lis := bufconn.Listen(1 << 20)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	f := &fixture{t: t, lis: lis}
	alice := f.agent("alice")
	id := openConversation(t, alice)
	_, err = alice.ReadLog(context.Background(), &hubpb.ReadLogRequest{SessionId: id})
	code, reason := wiretest.ReasonOf(err)
	if code != codes.Internal || reason != "INTERNAL" {
		t.Fatalf("got %v %s (%v), want Internal INTERNAL", code, reason, err)
	}
	if msg := status.Convert(err).Message(); strings.Contains(msg, "fire") || strings.Contains(msg, "secret") {
		t.Fatalf("the client was told %q", msg)
	}
	if n := strings.Count(logged.String(), "disk on fire"); n != 1 {
		t.Fatalf("the error is logged %d times, want once:\n%s", n, logged.String())
	}
}
