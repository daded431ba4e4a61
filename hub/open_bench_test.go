package hub_test

import (
	"context"
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/transition"
)

// sessionsOpenReq is the open of hubload's sessions workload: a workflow
// of three auto-accepting participants (the creator first), a round-robin
// graph capped at three turns, one label, the default expectations.
func sessionsOpenReq(names []string) *hubpb.OpenRequest {
	raw, err := json.Marshal(transition.RoundRobin(names, len(names)))
	if err != nil {
		panic(err)
	}
	graph := &structpb.Struct{}
	if err := hubpb.UnmarshalJSON(raw, graph); err != nil {
		panic(err)
	}
	req := &hubpb.OpenRequest{Type: "workflow@1", Graph: graph, Labels: map[string]string{"hubload": "bench"}}
	for _, n := range names {
		req.Participants = append(req.Participants, &hubpb.Participant{Name: n, AutoAccept: true})
	}
	return req
}

// BenchmarkOpen measures the hub's Open in process for hubload's sessions
// workload (see sessionsOpenReq), one open at a time, on a real badger log
// that does not sync, so the figure is the hub's CPU rather than the
// disk's. Every session stays open. cpu-ns/op is the whole process's CPU
// time per open (the log's goroutines included), steadier than ns/op on a
// shared machine.
func BenchmarkOpen(b *testing.B) {
	l := openWAL(b, b.TempDir(), false)
	defer l.Close()
	// One agent opens every session, all left open: its limit is off.
	h, err := openServed(context.Background(), hub.Config{Log: server.WALLog(l), Adapters: server.Adapters(nil), MaxOpenPerAgent: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	ctx := context.Background()
	names := []string{"s0", "s1", "s2"}
	req := sessionsOpenReq(names)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU()
	for range b.N {
		if _, err := h.Open(ctx, names[0], req); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer() // not the closes
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
}

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
