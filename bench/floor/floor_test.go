package floor

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/hubpb"
)

// TestDrive runs the floor for a moment: every acknowledged request is a
// record the log committed (synced), in sessions of consecutive seqs (the
// log refuses a gap, so a wrong seq would fail the run).
func TestDrive(t *testing.T) {
	srv, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var acks atomic.Int64
	stop := make(chan struct{})
	time.AfterFunc(300*time.Millisecond, func() { close(stop) })
	err = Drive(context.Background(), srv.Addr(), Load{Conc: 4, Conns: 2, Payload: 100,
		Record: func(start, done time.Time) {
			if done.Before(start) {
				t.Error("acknowledged before it was sent")
			}
			acks.Add(1)
		}}, stop)
	if err != nil {
		t.Fatal(err)
	}
	st := srv.LogStats()
	if acks.Load() == 0 || st.Records != uint64(acks.Load()) || st.Requests != st.Records || st.Commits == 0 {
		t.Errorf("acks %d, log stats %+v: want every ack one record committed", acks.Load(), st)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDriveRefusesNoClient checks the one precondition of Drive.
func TestDriveRefusesNoClient(t *testing.T) {
	if err := Drive(context.Background(), "127.0.0.1:1", Load{}, nil); err == nil {
		t.Error("Conc 0 accepted")
	}
}

// TestDriveTurns runs the turn floor for a moment: every send is a record
// the log committed before its ack, and each pair's seats take turns (a
// seat sends only when told, so the told count follows the sends).
func TestDriveTurns(t *testing.T) {
	srv, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var acks, told atomic.Int64
	check := func(n *atomic.Int64) func(start, done time.Time) {
		return func(start, done time.Time) {
			if done.Before(start) {
				t.Error("answered before it was sent")
			}
			n.Add(1)
		}
	}
	stop := make(chan struct{})
	time.AfterFunc(300*time.Millisecond, func() { close(stop) })
	if err := DriveTurns(context.Background(), srv.Addr(), Turns{Pairs: 3, Payload: 100, Acked: check(&acks), Told: check(&told)}, stop); err != nil {
		t.Fatal(err)
	}
	st := srv.LogStats()
	if acks.Load() < 6 || st.Records != uint64(acks.Load()) || st.Commits == 0 {
		t.Errorf("acks %d, log stats %+v: want every ack one record committed", acks.Load(), st)
	}
	// Each pair's last send may end the run untold; every other told.
	if n, a := told.Load(), acks.Load(); n < a-3 || n > a {
		t.Errorf("told %d times for %d sends: want each send but each pair's last to tell the other seat", n, a)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestTurnsRefuses checks what the turn floor's stream needs: a pair and
// a seat, each seat taken once.
func TestTurnsRefuses(t *testing.T) {
	srv, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	pid := uuid.NewString()
	open := func(kv ...string) error {
		ctx := metadata.AppendToOutgoingContext(t.Context(), kv...)
		cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, turnsMethod)
		if err != nil {
			return err
		}
		if err := cs.CloseSend(); err != nil {
			return err
		}
		return cs.RecvMsg(new(hubpb.HubFrame))
	}
	for _, tc := range []struct {
		md   []string
		want codes.Code
	}{
		{nil, codes.InvalidArgument},
		{[]string{pairKey, "nope", seatKey, "0"}, codes.InvalidArgument},
		{[]string{pairKey, pid, seatKey, "2"}, codes.InvalidArgument},
		{[]string{pairKey, pid, seatKey, "0"}, codes.OK}, // io.EOF: the seat is taken, then left
		{[]string{pairKey, pid, seatKey, "0"}, codes.AlreadyExists},
	} {
		err := open(tc.md...)
		if got := status.Code(err); got != tc.want && !(tc.want == codes.OK && errors.Is(err, io.EOF)) {
			t.Errorf("%v: %v, want %v", tc.md, err, tc.want)
		}
	}
}
