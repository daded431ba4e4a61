package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
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
	resp, err := get(ctx, "http://"+addr+"/metrics", "")
	if err != nil {
		return m, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return m, fmt.Errorf("%s/metrics: %s", addr, resp.Status)
	}
	found := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		var dst *float64
		switch name {
		case "go_goroutines":
			dst = &m.goroutines
		case "go_memstats_heap_inuse_bytes":
			dst = &m.heapInuse
		case "go_memstats_stack_inuse_bytes":
			dst = &m.stackInuse
		default:
			continue
		}
		if *dst, err = strconv.ParseFloat(val, 64); err != nil {
			return m, fmt.Errorf("%s/metrics: %s: %w", addr, name, err)
		}
		found++
	}
	if err := sc.Err(); err != nil {
		return m, err
	}
	if found < 3 {
		return m, fmt.Errorf("%s/metrics has no go_goroutines, go_memstats_heap_inuse_bytes and go_memstats_stack_inuse_bytes", addr)
	}
	return m, nil
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
