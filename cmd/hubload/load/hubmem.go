package load

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hubd/hubd/agentsdk"
)

// hubMem is what a hub's /metrics says of its Go runtime.
type hubMem struct {
	goroutines, heapInuse, stackInuse float64
	gc                                bool // a GC was forced just before
}

// readHubMem forces a GC in the hub at addr (its /debug/pprof/heap with
// gc=1, as operator in development mode) and reads its /metrics. A hub
// that refuses the GC (it wants a token) is read all the same, without.
func readHubMem(ctx context.Context, addr, operator string) (hubMem, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var m hubMem
	if resp, err := get(ctx, "http://"+addr+"/debug/pprof/heap?gc=1", operator); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		m.gc = resp.StatusCode == http.StatusOK
	}
	vals, err := scrape(ctx, addr, "go_goroutines", "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes")
	if err != nil {
		return m, err
	}
	m.goroutines, m.heapInuse, m.stackInuse = vals[0], vals[1], vals[2]
	return m, nil
}

// scrape reads the hub's /metrics at addr and returns the values of the
// unlabelled samples names, in order; a name missing is an error.
func scrape(ctx context.Context, addr string, names ...string) ([]float64, error) {
	resp, err := get(ctx, "http://"+addr+"/metrics", "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s/metrics: %s", addr, resp.Status)
	}
	vals := make([]float64, len(names))
	found := make([]bool, len(names))
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		i := slices.Index(names, name)
		if i < 0 {
			continue
		}
		if vals[i], err = strconv.ParseFloat(val, 64); err != nil {
			return nil, fmt.Errorf("%s/metrics: %s: %w", addr, name, err)
		}
		found[i] = true
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for i, ok := range found {
		if !ok {
			return nil, fmt.Errorf("%s/metrics has no %s", addr, names[i])
		}
	}
	return vals, nil
}

// hubLog is the hub's write-ahead log counters, from its /metrics.
type hubLog struct{ commits, appends, syncs, syncing float64 }

// readHubLog reads the hub's log counters from /metrics at addr.
func readHubLog(ctx context.Context, addr string) (hubLog, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := scrape(ctx, addr, "hubd_wal_commits_total", "hubd_wal_committed_appends_total", "hubd_wal_syncs_total", "hubd_wal_sync_seconds_total")
	if err != nil {
		return hubLog{}, err
	}
	return hubLog{commits: v[0], appends: v[1], syncs: v[2], syncing: v[3]}, nil
}

// LogReport is what a log did in a window: its commits, the appends each
// held (group commit) and what one fsync took on average.
type LogReport struct {
	Commits          uint64  `json:"commits"`
	AppendsPerCommit float64 `json:"appends_per_commit"`
	Syncs            uint64  `json:"fsyncs"`
	SyncMeanUS       float64 `json:"fsync_mean_us"`
}

// since is what the hub's log did from l0 to l.
func (l hubLog) since(l0 hubLog) *LogReport {
	syncs := l.syncs - l0.syncs
	return &LogReport{Commits: uint64(l.commits - l0.commits), AppendsPerCommit: ratio(l.appends-l0.appends, l.commits-l0.commits),
		Syncs: uint64(syncs), SyncMeanUS: ratio((l.syncing-l0.syncing)*1e6, syncs)}
}

// Text describes the log's window.
func (r *LogReport) Text() string {
	return fmt.Sprintf("%d commits, %.1f appends per commit, fsync mean %.0fµs", r.Commits, r.AppendsPerCommit, r.SyncMeanUS)
}

// get is an HTTP GET, as agent when not "".
func get(ctx context.Context, url, agent string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if agent != "" {
		req.Header.Set(agentsdk.AgentHeader, agent)
	}
	return http.DefaultClient.Do(req)
}

// printHubMem prints the hub's goroutines, heap and stacks per
// subscription between before and after.
func printHubMem(w io.Writer, n int, before, after hubMem) {
	per := func(a, b float64) float64 { return (b - a) / float64(n) }
	heap, stack := per(before.heapInuse, after.heapInuse), per(before.stackInuse, after.stackInuse)
	gc := "after a forced GC"
	if !before.gc || !after.gc {
		gc = "no GC forced (the hub refused --operator its /debug/pprof)"
	}
	fmt.Fprintf(w, "hub /metrics (%s): goroutines %.0f → %.0f (%.2f per subscription); heap %.0f B + stacks %.0f B = %.0f B per subscription\n",
		gc, before.goroutines, after.goroutines, per(before.goroutines, after.goroutines), heap, stack, heap+stack)
}
