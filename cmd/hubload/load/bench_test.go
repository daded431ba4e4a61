package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/hubd/hubd/hub/hubtest"
)

// BenchmarkLoadInProcess runs hubload against an in-process hub (fsync on,
// a fresh data directory per case) so that one CPU profile covers the hub
// and the client:
//
//	go test ./cmd/hubload -run XXX -bench LoadInProcess -benchtime 1x -cpuprofile cpu.out
//
// The hub's share is under hub., hubgrpc., wal., badger and grpc's
// http2Server; the client's under main. and grpc's http2Client.
func BenchmarkLoadInProcess(b *testing.B) {
	for _, c := range []struct{ agents, sessions int }{{16, 8}, {16, 64}, {128, 64}, {3, 1}} {
		b.Run(fmt.Sprintf("agents=%d/sessions=%d", c.agents, c.sessions), func(b *testing.B) {
			h := hubtest.New(b, hubtest.Options{DataDir: b.TempDir()})
			var last Report
			for b.Loop() {
				last = benchRun(b, h.Addr(), c.agents, c.sessions)
			}
			b.ReportMetric(last.PerSecond, "accepted/s")
			b.ReportMetric(last.SendToAck.P50, "ack-p50-ms")
			b.ReportMetric(last.SendToAck.P99, "ack-p99-ms")
			b.ReportMetric(last.SendToTold.P50, "told-p50-ms")
		})
	}
}

// benchRun runs one 5-second load against addr and returns its report.
func benchRun(b *testing.B, addr string, agents, sessions int) Report {
	b.Helper()
	var stdout, stderr bytes.Buffer
	args := []string{"--hub", addr, "--agents", fmt.Sprint(agents), "--sessions", fmt.Sprint(sessions),
		"--payload", "256", "--duration", "5s", "--warmup", "1s", "--json"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := Run(ctx, args, &stdout, &stderr); err != nil {
		b.Fatalf("run: %v\n%s", err, stderr.String())
	}
	var r Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		b.Fatal(err)
	}
	return r
}
