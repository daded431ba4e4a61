package load

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// Report is the outcome of a load run; --json prints it as is.
type Report struct {
	Agents     int               `json:"agents"`
	Sessions   int               `json:"sessions"`
	Conns      int               `json:"conns"`
	Transport  string            `json:"transport"`
	Payload    int               `json:"payload_bytes"`
	Warmup     float64           `json:"warmup_s"`
	Rate       int               `json:"rate_per_s,omitempty"` // --rate; 0: unpaced
	Window     float64           `json:"window_s"`
	Accepted   uint64            `json:"accepted"`
	PerSecond  float64           `json:"accepted_per_s"`
	SendToAck  Latency           `json:"send_to_ack"`
	SendToTold Latency           `json:"send_to_next_told"`
	Rejected   map[string]uint64 `json:"rejected"`
	CPU        CPUReport         `json:"cpu"`
	Hub        *HubUsage         `json:"hub,omitempty"`
	HubLog     *LogReport        `json:"hub_log,omitempty"`
}

// CPUReport is how the machine's processors were used in the window, in
// cores (CPU-seconds per second). Other is everything but the hub (with
// --hub-pid) and hubload: on a shared machine, other load.
type CPUReport struct {
	Cores              float64 `json:"cores"`
	Hubload            float64 `json:"hubload_cores"`
	Hub                float64 `json:"hub_cores,omitempty"`
	Other              float64 `json:"other_cores"`
	HubloadPerAccepted float64 `json:"hubload_us_per_accepted"`
	HubPerAccepted     float64 `json:"hub_us_per_accepted,omitempty"`
}

// Latency summarises a histogram, in milliseconds.
type Latency struct {
	Count uint64  `json:"count"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p99_9_ms"`
	Max   float64 `json:"max_ms"`
}

// HubUsage is the hub process's memory and threads at the start and the
// end of a run.
type HubUsage struct {
	PID           int     `json:"pid"`
	RSSBeforeMiB  float64 `json:"rss_before_mib"`
	RSSAfterMiB   float64 `json:"rss_after_mib"`
	ThreadsBefore int     `json:"threads_before"`
	ThreadsAfter  int     `json:"threads_after"`
}

// report builds the run's report.
func (l *load) report(st *Stats, cpu cpuUse, before, after procStatus) Report {
	w := st.Window()
	r := Report{Agents: l.cfg.Agents, Sessions: l.cfg.Sessions, Conns: l.cfg.ConnsFor(l.cfg.Agents), Transport: l.cfg.Transport, Payload: l.cfg.Payload,
		Warmup: l.cfg.Warmup.Seconds(), Rate: l.cfg.Rate, Window: w.Seconds(), Accepted: st.accepted.Load(),
		SendToAck: summarize(&st.ack), SendToTold: summarize(&st.told), Rejected: st.rejections(), HubLog: l.hubLog}
	if w > 0 {
		r.PerSecond = float64(r.Accepted) / w.Seconds()
	}
	r.CPU = cpu.report(w, r.Accepted)
	if l.cfg.HubPID != 0 {
		r.Hub = &HubUsage{PID: l.cfg.HubPID, RSSBeforeMiB: before.rssMiB(), RSSAfterMiB: after.rssMiB(),
			ThreadsBefore: before.threads, ThreadsAfter: after.threads}
	}
	return r
}

// report turns CPU times over a window into cores and per-envelope costs.
func (u cpuUse) report(w time.Duration, accepted uint64) CPUReport {
	if w <= 0 {
		return CPUReport{}
	}
	cores := func(d time.Duration) float64 { return d.Seconds() / w.Seconds() }
	return CPUReport{Cores: cores(u.total), Hubload: cores(u.self), Hub: cores(u.hub), Other: max(cores(u.busy-u.self-u.hub), 0),
		HubloadPerAccepted: perAccepted(u.self, accepted), HubPerAccepted: perAccepted(u.hub, accepted)}
}

// ratio is a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// perAccepted is d per accepted envelope, in microseconds.
func perAccepted(d time.Duration, accepted uint64) float64 {
	if accepted == 0 {
		return 0
	}
	return float64(d) / float64(time.Microsecond) / float64(accepted)
}

func summarize(h *histogram) Latency {
	return Latency{Count: h.count(), Mean: ms(h.mean()), P50: ms(h.quantile(0.5)), P90: ms(h.quantile(0.9)),
		P99: ms(h.quantile(0.99)), P999: ms(h.quantile(0.999)), Max: ms(h.quantile(1))}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// print writes the report, as JSON or as text.
func (r Report) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return writeJSON(w, r)
	}
	_, err := io.WriteString(w, r.Text())
	return err
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Text is the human-readable report.
func (r Report) Text() string {
	var b strings.Builder
	paced := ""
	if r.Rate > 0 {
		paced = fmt.Sprintf(", paced at %d sends/s", r.Rate)
	}
	fmt.Fprintf(&b, "hubload: %d agents, %d sessions, %d connections, transport %s, payload %d B, warm-up %gs%s\n",
		r.Agents, r.Sessions, r.Conns, r.Transport, r.Payload, r.Warmup, paced)
	fmt.Fprintf(&b, "accepted %d in %.1fs = %.0f/s; send→ack %s; send→next told %s; rejected: %s\n",
		r.Accepted, r.Window, r.PerSecond, r.SendToAck.Text(), r.SendToTold.Text(), rejectedText(r.Rejected))
	c := r.CPU
	fmt.Fprintf(&b, "CPU of %.0f cores: hubload %.2f (%.0fµs per accepted)", c.Cores, c.Hubload, c.HubloadPerAccepted)
	if h := r.Hub; h != nil {
		fmt.Fprintf(&b, ", hub %.2f (%.0fµs per accepted)", c.Hub, c.HubPerAccepted)
	}
	fmt.Fprintf(&b, ", other processes %.2f\n", c.Other)
	if h := r.Hub; h != nil {
		fmt.Fprintf(&b, "hub pid %d: VmRSS %.1f MiB → %.1f MiB, threads %d → %d\n",
			h.PID, h.RSSBeforeMiB, h.RSSAfterMiB, h.ThreadsBefore, h.ThreadsAfter)
	}
	if r.HubLog != nil {
		fmt.Fprintf(&b, "hub log (its /metrics): %s\n", r.HubLog.Text())
	}
	return b.String()
}

// Text is the latencies on one line, or "(no sample)".
func (l Latency) Text() string {
	if l.Count == 0 {
		return "(no sample)"
	}
	return fmt.Sprintf("p50 %.2fms p90 %.2fms p99 %.2fms p99.9 %.2fms max %.2fms (n=%d)", l.P50, l.P90, l.P99, l.P999, l.Max, l.Count)
}

// rejectedText is "0", or the total and the counts by reason.
func rejectedText(m map[string]uint64) string {
	var total uint64
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		total += m[k]
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	if total == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, " "))
}
