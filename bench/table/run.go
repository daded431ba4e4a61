package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hubd/hubd/cmd/hubload/load"
)

// tableRun is one run of the table: a workload of hubload's and its size.
type tableRun struct {
	workload string
	agents   int     // turns: agents (two a session, or three for one)
	sessions int     // turns: sessions in flight
	conc     int     // sessions workload: sessions in flight
	perSec   float64 // sessions workload: sessions a second this machine opens, for a run of about --warmup plus --duration
}

// minSessions is the fewest sessions a sessions run opens, however short
// --duration.
const minSessions = 50

// flags are the hubload flags that run it alone (without its floors),
// for windows of duration after a warm-up of warmup.
func (r tableRun) flags(o options) string {
	if r.workload == load.WorkloadSessions {
		n := int(r.perSec * (o.duration + o.warmup).Seconds())
		return fmt.Sprintf("--workload sessions --conc %d --sessions %d", r.conc, min(max(n, minSessions), load.MaxSessions))
	}
	return fmt.Sprintf("--agents %d --sessions %d", r.agents, r.sessions)
}

// runReport is one run of a workload between its floors, and the ratios
// of hubd's figures to theirs.
type runReport struct {
	Flags      string               `json:"flags"` // hubload FLAGS runs the workload alone
	Turns      *load.Report         `json:"turns,omitempty"`
	Sessions   *load.SessionsReport `json:"sessions,omitempty"`
	Floor      *floorReport         `json:"floor"`
	TurnFloor  *floorReport         `json:"turn_floor,omitempty"`
	Ratios     []namedRatio         `json:"ratios"`
	TurnRatios []namedRatio         `json:"turn_floor_ratios,omitempty"`
}

// namedRatio is one of a run's ratios to a floor.
type namedRatio struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// measure runs r against the hub between its floors: each floor is
// measured just before the workload and just after it, at the
// workload's concurrency and payload.
func (r tableRun) measure(ctx context.Context, o options, stderr io.Writer) (runReport, error) {
	cfg, err := load.Parse(append(o.loadArgs(), strings.Fields(r.flags(o))...), stderr)
	if err != nil {
		return runReport{}, err
	}
	fl := &floors{w: window{warmup: cfg.Warmup, length: cfg.Duration / 2, dir: o.floorDir, apart: o.floorApart}, payload: cfg.Payload}
	if cfg.Workload == load.WorkloadSessions {
		fl.inFlight, fl.conns = cfg.Conc, min(cfg.ConnsFor(3), cfg.Conc) // three agents serve every session
	} else {
		fl.inFlight, fl.conns, fl.pairs = cfg.Sessions, cfg.ConnsFor(cfg.Agents), cfg.Sessions
	}
	rep := runReport{Flags: r.flags(o)}
	if err := fl.measure(ctx); err != nil {
		return rep, err
	}
	if cfg.Workload == load.WorkloadSessions {
		s, err := load.Sessions(ctx, cfg, stderr)
		if err == nil {
			err = s.Err()
		}
		if err != nil {
			return rep, err
		}
		rep.Sessions = &s
	} else {
		t, err := load.Turns(ctx, cfg, stderr)
		if err == nil {
			err = t.Err()
		}
		if err != nil {
			return rep, err
		}
		rep.Turns = &t
	}
	if err := fl.measure(ctx); err != nil {
		return rep, err
	}
	if rep.Floor, rep.TurnFloor, err = fl.reports(); err != nil {
		return rep, err
	}
	rep.Ratios, rep.TurnRatios = rep.ratios()
	return rep, nil
}

// ratios compares the run with its floors: throughput and latencies,
// each hubd's figure over the floor's, then what each side cost.
func (r *runReport) ratios() (toFloor, toTurnFloor []namedRatio) {
	b := r.Floor
	if s := r.Sessions; s != nil {
		return append([]namedRatio{
			{"turns/s", ratio(s.TurnsPerS, b.PerSecond)},
			{"open→closed p50 (to the floor's send→ack p50)", ratio(s.OpenToClosed.P50, b.SendToAck.P50)},
			{"handler→handler p50 (to the floor's send→ack p50)", ratio(s.HandlerToNext.P50, b.SendToAck.P50)},
		}, costRatios(s.CPU, s.HubLog, b)...), nil
	}
	t := r.Turns
	toFloor = append([]namedRatio{
		{"accepted/s", ratio(t.PerSecond, b.PerSecond)},
		{"send→ack p50", ratio(t.SendToAck.P50, b.SendToAck.P50)},
		{"send→ack p99", ratio(t.SendToAck.P99, b.SendToAck.P99)},
		{"send→next told p50 (to the floor's send→ack p50)", ratio(t.SendToTold.P50, b.SendToAck.P50)},
	}, costRatios(t.CPU, t.HubLog, b)...)
	if tf := r.TurnFloor; tf != nil {
		toTurnFloor = append([]namedRatio{
			{"accepted/s", ratio(t.PerSecond, tf.PerSecond)},
			{"send→ack p50", ratio(t.SendToAck.P50, tf.SendToAck.P50)},
			{"send→ack p99", ratio(t.SendToAck.P99, tf.SendToAck.P99)},
			{"send→next told p50", ratio(t.SendToTold.P50, tf.SendToTold.P50)},
		}, costRatios(t.CPU, t.HubLog, tf)...)
	}
	return toFloor, toTurnFloor
}

// costRatios compares what a run cost with what a floor did: CPU per
// request, the hub's and its agents' together (with --hub-pid), and the
// mean fsync of the logs (with --hub-http).
func costRatios(c load.CPUReport, l *load.LogReport, f *floorReport) []namedRatio {
	var out []namedRatio
	if c.HubPerAccepted > 0 {
		out = append(out, namedRatio{"CPU per request (hub + agents)", ratio(c.HubPerAccepted+c.HubloadPerAccepted, f.CPUPerRequest)})
	}
	if l != nil {
		out = append(out, namedRatio{"fsync mean", ratio(l.SyncMeanUS, f.SyncMeanUS)})
	}
	return out
}

// text is the run as the table prints it before its rows: the flags,
// hubload's report, each floor and the ratios to it.
func (r *runReport) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "== hubload %s\n", r.Flags)
	if r.Turns != nil {
		b.WriteString(r.Turns.Text())
	} else {
		b.WriteString(r.Sessions.Text())
	}
	b.WriteString(r.Floor.text())
	b.WriteString(ratioLine("floor", r.Ratios))
	if r.TurnFloor != nil {
		b.WriteString(r.TurnFloor.text())
		b.WriteString(ratioLine("turn floor", r.TurnRatios))
	}
	return b.String()
}

// ratioLine prints named ratios to the floor named on one line:
// "hubd / floor: accepted/s 0.52, send→ack p50 1.30".
func ratioLine(floor string, rs []namedRatio) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.Name + " " + strconv.FormatFloat(r.Value, 'f', 2, 64)
	}
	return "hubd / " + floor + ": " + strings.Join(parts, ", ") + "\n"
}
