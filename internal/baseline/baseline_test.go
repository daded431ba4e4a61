package baseline

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
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
	st := srv.Stats()
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
