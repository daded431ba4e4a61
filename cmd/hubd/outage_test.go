package main

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
)

// TestE2ESendAcrossOutage stops the real hubd, restarts it on the same
// address and data a second later, and sends meanwhile through agentsdk:
// the send waits for the hub within its retry budget and is written once
// (the same client message id on every try), where three tries over
// 150 ms used to fail with "connection refused".
func TestE2ESendAcrossOutage(t *testing.T) {
	data := t.TempDir()
	d := startDaemon(t, data, "")
	addr := d.addr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alice, err := agentsdk.Dial(ctx, addr, agentsdk.Options{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.SendText(ctx, s.ID(), "before"); err != nil {
		t.Fatal(err)
	}
	d.stop(syscall.SIGKILL)
	type result struct {
		ack agentsdk.Ack
		err error
	}
	done := make(chan result, 1)
	go func() {
		ack, err := alice.SendText(ctx, s.ID(), "during the outage", agentsdk.WithClientMsgID("outage-1"))
		done <- result{ack, err}
	}()
	time.Sleep(time.Second) // the hub stays down this long: more than gRPC's first reconnect backoffs
	startDaemon(t, data, addr)
	r := <-done
	if r.err != nil {
		t.Fatalf("the send during a 1 s outage: %v", r.err)
	}
	log, err := alice.Raw().ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: s.ID()})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range log.GetEnvelopes() {
		if e.GetClientMsgId() == "outage-1" {
			n++
			if e.GetSeq() != r.ack.GetSeq() {
				t.Errorf("acknowledged seq %d, logged at %d", r.ack.GetSeq(), e.GetSeq())
			}
		}
	}
	if n != 1 {
		t.Errorf("the send is in the log %d times, want once", n)
	}
	if _, err := alice.SendText(ctx, s.ID(), "after"); err != nil {
		t.Errorf("the next send: %v", err)
	}
}
