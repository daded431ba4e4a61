package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hubd/hubd/internal/natstest"
)

// The measurements of docs/SCALING.md. They are not tests (they take
// minutes and print figures): set HUBD_CLUSTER_MEASURE=1 to run them,
//
//	HUBD_CLUSTER_MEASURE=1 go test ./cmd/hubd -run 'TestMeasure' -v -timeout 30m
//
// HUBD_FAILOVER_KILLS sets the number of kills (default 10).

func measuring(t *testing.T) {
	t.Helper()
	if os.Getenv("HUBD_CLUSTER_MEASURE") == "" {
		t.Skip("a measurement: set HUBD_CLUSTER_MEASURE=1")
	}
}

// served is one "partition served" line of a node's log.
type served struct {
	Partition  int    `json:"partition"`
	Message    string `json:"message"`
	Hydrate    string `json:"hydrate"`
	Records    int    `json:"records"`
	AcquiredAt string `json:"acquired_at"`
	ServedAt   string `json:"served_at"`
	SeenAt     string `json:"seen_at"`
}

// logEvents returns a node's "partition served" and "partition free"
// lines.
func logEvents(log string) []served {
	var out []served
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, "partition served") && !strings.Contains(l, "partition free") {
			continue
		}
		var s served
		if json.Unmarshal([]byte(l), &s) == nil {
			out = append(out, s)
		}
	}
	return out
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// TestMeasureFailover kills a node with SIGKILL over and over under
// hubload spread over all three, restarting it each time, and splits each
// failover into lease expiry (the kill to the partition seen free),
// takeover (seen free to the lease created) and hydrate, from the
// survivors' logs. hubload --check then finds every acknowledged send.
func TestMeasureFailover(t *testing.T) {
	measuring(t)
	kills := 10
	if n, err := strconv.Atoi(os.Getenv("HUBD_FAILOVER_KILLS")); err == nil && n > 0 {
		kills = n
	}
	c := startCluster(t, false)
	load := buildBinary(t, "./cmd/hubload")
	verify := filepath.Join(t.TempDir(), "acked.txt")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	lg, lgOut := startLoad(t, ctx, load, "--hub", c.addrs(), "--agents", "12", "--sessions", "6", "--duration", "10m",
		"--warmup", "0s", "--verify", verify)
	var total, expiry, takeover, hydrate []time.Duration
	for k := range kills {
		victim := k % 3
		st, ok := c.status(t, (victim+1)%3)
		if !ok {
			t.Fatal("no cluster status")
		}
		var parts []int
		for _, p := range st.Partitions {
			if p.Owner == c.ids[victim] {
				parts = append(parts, p.Partition)
			}
		}
		killed := time.Now()
		c.nodes[victim].stop(syscall.SIGKILL)
		var survivors []string
		for i, id := range c.ids {
			if i != victim {
				survivors = append(survivors, id)
			}
		}
		c.waitSpread(t, survivors, 60*time.Second)
		// Per partition of the victim: its first free sighting, acquisition
		// and service on a survivor after the kill.
		var worst time.Duration
		for _, p := range parts {
			var free, acq, srv time.Time
			var hyd time.Duration
			for i, d := range c.nodes {
				if i == victim {
					continue
				}
				for _, e := range logEvents(d.log()) {
					if e.Partition != p {
						continue
					}
					if at := parseTime(e.SeenAt); e.Message == "cluster: partition free" && at.After(killed) && (free.IsZero() || at.Before(free)) {
						free = at
					}
					if at := parseTime(e.AcquiredAt); e.Message == "partition served" && at.After(killed) && (acq.IsZero() || at.Before(acq)) {
						acq, srv = at, parseTime(e.ServedAt)
						hyd, _ = time.ParseDuration(e.Hydrate)
					}
				}
			}
			if acq.IsZero() {
				t.Fatalf("kill %d: partition %d of %s not served after the kill", k, p, c.ids[victim])
			}
			if free.IsZero() || free.After(acq) {
				free = acq // the expiry marker was not seen: the stale lease was taken
			}
			expiry, takeover, hydrate = append(expiry, free.Sub(killed)), append(takeover, acq.Sub(free)), append(hydrate, hyd)
			worst = max(worst, srv.Sub(killed))
		}
		total = append(total, worst)
		t.Logf("kill %d of %s (%d partitions): served again after %v", k+1, c.ids[victim], len(parts), worst.Round(time.Millisecond))
		// Back to three nodes before the next kill.
		c.await(t, victim, c.spawn(t, victim))
		c.waitSpread(t, c.ids, 60*time.Second)
		time.Sleep(2 * time.Second)
	}
	lg.Process.Signal(syscall.SIGINT)
	lg.Wait()
	acked := countLines(verify)
	out, err := exec.CommandContext(ctx, load, "--hub", c.addrs(), "--check", verify).CombinedOutput()
	first := strings.SplitN(string(out), "\n", 2)[0]
	if err != nil || first != fmt.Sprintf("acked %d, found %d", acked, acked) {
		t.Fatalf("check: %v\n%s", err, out)
	}
	t.Logf("%d kills (lease %v, P=%d): failover p50 %v max %v; lease expiry p50 %v max %v; takeover p50 %v max %v; hydrate p50 %v max %v; %s",
		kills, e2eLease, e2ePartitions, pct(total, 50), pct(total, 100), pct(expiry, 50), pct(expiry, 100),
		pct(takeover, 50), pct(takeover, 100), pct(hydrate, 50), pct(hydrate, 100), first)
	t.Logf("load: %s", strings.TrimSpace(lgOut.String()))
}

// pct returns the p-th percentile (nearest rank) of ds.
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := max(0, (p*len(s)+99)/100-1)
	return s[min(i, len(s)-1)].Round(time.Millisecond)
}

// TestMeasureThroughput runs the same hubload against badger (one hubd)
// and against 1, 2 and 3 hubd nodes on one three-server NATS cluster (R3),
// in one run: on one 2-core machine, a floor for the cluster, not a
// forecast.
func TestMeasureThroughput(t *testing.T) {
	measuring(t)
	load := buildBinary(t, "./cmd/hubload")
	args := []string{"--agents", "32", "--sessions", "16", "--duration", "8s", "--warmup", "2s"}
	run := func(name, hubs string) {
		t.Helper()
		out, err := exec.Command(load, append([]string{"--hub", hubs}, args...)...).Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		t.Logf("%-28s %s", name, strings.TrimSpace(string(out)))
	}
	d := startDaemon(t, t.TempDir(), "")
	run("badger, one hubd", d.addr)
	d.stop(syscall.SIGTERM)
	ext := natstest.RunCluster(t, 3)
	for n := 1; n <= 3; n++ {
		c := startNodes(t, n, ext)
		run(fmt.Sprintf("JetStream R3, %d hubd", n), c.addrs())
		for _, d := range c.nodes {
			d.stop(syscall.SIGTERM)
		}
	}
}
