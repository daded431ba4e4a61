package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// tableReport is what --table prints: issue 10's targets, each row
// measured against its floor in the same minute, and the runs that gave
// them.
type tableReport struct {
	Apart    bool         `json:"floors_apart"`
	Duration float64      `json:"duration_s"`
	Rows     []tableRow   `json:"rows"`
	Turns    []report     `json:"turns_runs"`
	Sessions []sessReport `json:"sessions_runs"`
}

// tableRow is one target: hubd's figure, the floor's, their ratio, and
// whether the ratio meets the target. NoLogic, for the rows of the turns
// workload, is the same ratio for the turn floor: what a hub whose session
// logic cost nothing would reach (the least a turn does, the three
// messages and the append, against the floor's unary call).
type tableRow struct {
	Measure string  `json:"measure"`
	Flags   string  `json:"flags"`
	Hubd    string  `json:"hubd"`
	Floor   string  `json:"floor"`
	Ratio   float64 `json:"ratio"`
	Target  target  `json:"target"`
	Met     bool    `json:"met"`
	NoLogic float64 `json:"no_session_logic,omitempty"`
	order   int     // its place in the table
}

// target is a bound on a ratio: at least (throughput) or at most
// (latency) Value.
type target struct {
	AtLeast bool    `json:"at_least"`
	Value   float64 `json:"value"`
}

func (t target) String() string {
	if t.AtLeast {
		return fmt.Sprintf("≥ %g", t.Value)
	}
	return fmt.Sprintf("≤ %g", t.Value)
}

func (t target) met(r float64) bool {
	if r <= 0 {
		return false
	}
	if t.AtLeast {
		return r >= t.Value
	}
	return r <= t.Value
}

// tableRun is one run of the table: its workload and size.
type tableRun struct {
	workload string
	agents   int     // turns: agents (two a session, or three for one)
	sessions int     // turns: sessions in flight
	conc     int     // sessions workload: sessions in flight
	perSec   float64 // sessions workload: sessions a second this machine opens, for a run of about --duration
}

// tableRuns are the runs behind issue 10's table, the one-at-a-time runs
// first, so that the latencies of a single session are measured on a
// hub that no heavier run has left anything to (the rows print in the
// issue's order, the row constants below).
func tableRuns() []tableRun {
	return []tableRun{
		{workload: workloadTurns, agents: 3, sessions: 1},
		{workload: workloadSessions, conc: 1, perSec: 600},
		{workload: workloadTurns, agents: 32, sessions: 16},
		{workload: workloadTurns, agents: 128, sessions: 128},
		{workload: workloadSessions, conc: 50, perSec: 4000},
	}
}

// The rows in the order of issue 10's table.
const (
	rowSteady16 = iota
	rowSteady128
	rowTold
	rowServe
	rowOpenClosed
	rowSessions50
	rowP99
)

// minTableSessions is the fewest sessions a sessions run of the table
// opens, however short --duration.
const minTableSessions = 50

// config is cfg set for the run.
func (r tableRun) config(cfg config) config {
	cfg.workload, cfg.baseline = r.workload, true
	if r.workload == workloadSessions {
		cfg.conc = r.conc
		cfg.sessions = min(max(int(r.perSec*(cfg.duration+cfg.warmup).Seconds()), minTableSessions), maxSessions)
		return cfg
	}
	cfg.agents, cfg.sessions = r.agents, r.sessions
	return cfg
}

// flags is how to run it alone.
func (r tableRun) flags() string {
	if r.workload == workloadSessions {
		return fmt.Sprintf("--workload sessions --conc %d", r.conc)
	}
	return fmt.Sprintf("--agents %d --sessions %d", r.agents, r.sessions)
}

// runTable measures every run of the table against the hub, each with its
// floors (in hubload's process, or apart with --floor-apart), and prints
// the rows.
func runTable(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	t := tableReport{Apart: cfg.floorApart, Duration: cfg.duration.Seconds()}
	for _, run := range tableRuns() {
		c := run.config(cfg)
		if run.workload == workloadSessions {
			rep, err := measureSessions(ctx, c, stderr)
			if err == nil {
				err = rep.check()
			}
			if err != nil {
				return fmt.Errorf("%s: %w", run.flags(), err)
			}
			t.Sessions = append(t.Sessions, rep)
			t.Rows = append(t.Rows, sessionsRows(run, rep)...)
			continue
		}
		rep, err := measureLoad(ctx, c, stderr)
		if err == nil {
			err = rep.check()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", run.flags(), err)
		}
		t.Turns = append(t.Turns, rep)
		t.Rows = append(t.Rows, turnsRows(run, rep)...)
	}
	slices.SortStableFunc(t.Rows, func(a, b tableRow) int { return cmp.Compare(a.order, b.order) })
	if cfg.json {
		return writeJSON(stdout, t)
	}
	_, err := io.WriteString(stdout, t.text())
	return err
}

// row makes the row at order of ratio r to target t.
func row(order int, measure string, run tableRun, hubd, floor string, r float64, t target) tableRow {
	return tableRow{Measure: measure, Flags: run.flags(), Hubd: hubd, Floor: floor, Ratio: r, Target: t, Met: t.met(r), order: order}
}

// turnsRows are the rows a turns run gives: throughput (and p99 at 16 in
// flight), or one session's send → next speaker told.
func turnsRows(run tableRun, r report) []tableRow {
	b, tf := r.Baseline, r.TurnFloor
	perSec := func(v float64) string { return fmt.Sprintf("%.0f/s", v) }
	if run.sessions == 1 {
		x := row(rowTold, "one session, send → next speaker told p50 (floor: send → ack p50)", run,
			msText(r.SendToTold.P50), msText(b.SendToAck.P50), ratio(r.SendToTold.P50, b.SendToAck.P50), target{Value: 1.1})
		x.NoLogic = ratio(tf.SendToTold.P50, b.SendToAck.P50)
		return []tableRow{x}
	}
	order := rowSteady16
	if run.sessions != 16 {
		order = rowSteady128
	}
	x := row(order, fmt.Sprintf("steady turns, %d sessions in flight, throughput", run.sessions), run,
		perSec(r.PerSecond), perSec(b.PerSecond), ratio(r.PerSecond, b.PerSecond), target{AtLeast: true, Value: 1})
	x.NoLogic = ratio(tf.PerSecond, b.PerSecond)
	rows := []tableRow{x}
	if run.sessions == 16 {
		p := row(rowP99, "send → ack p99, 16 in flight", run, msText(r.SendToAck.P99), msText(b.SendToAck.P99),
			ratio(r.SendToAck.P99, b.SendToAck.P99), target{Value: 1.5})
		p.NoLogic = ratio(tf.SendToAck.P99, b.SendToAck.P99)
		rows = append(rows, p)
	}
	return rows
}

// sessionsRows are the rows a sessions run gives: one at a time, Serve's
// handler to handler and a session's open → closed; 50 at a time, turns a
// second.
func sessionsRows(run tableRun, r sessReport) []tableRow {
	b := r.Baseline
	if run.conc == 1 {
		return []tableRow{
			row(rowServe, "one session through agentsdk.Serve, handler → handler p50 (floor: send → ack p50)", run,
				msText(r.HandlerToNext.P50), msText(b.SendToAck.P50), ratio(r.HandlerToNext.P50, b.SendToAck.P50), target{Value: 1.5}),
			row(rowOpenClosed, "sessions one at a time, open → closed p50 (floor: send → ack p50)", run,
				msText(r.OpenToClosed.P50), msText(b.SendToAck.P50), ratio(r.OpenToClosed.P50, b.SendToAck.P50), target{Value: 6}),
		}
	}
	return []tableRow{row(rowSessions50, fmt.Sprintf("sessions %d at a time, turns a second (floor: requests a second)", run.conc), run,
		fmt.Sprintf("%.0f/s", r.TurnsPerS), fmt.Sprintf("%.0f/s", b.PerSecond), ratio(r.TurnsPerS, b.PerSecond), target{AtLeast: true, Value: 0.8})}
}

func msText(v float64) string { return fmt.Sprintf("%.2fms", v) }

// text is the table as hubload prints it.
func (t tableReport) text() string {
	var b strings.Builder
	where := "in hubload's process"
	if t.Apart {
		where = "each served from a process of its own (--floor-apart)"
	}
	fmt.Fprintf(&b, "hubload --table: issue 10's targets, each run against the hub with its floors in the same minute, the floors %s; windows of %v\n",
		where, time.Duration(t.Duration*float64(time.Second)))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\tflags\thubd\tfloor\thubd / floor\ttarget\t\tno session logic")
	for _, r := range t.Rows {
		verdict := "missed"
		if r.Met {
			verdict = "met"
		}
		nl := ""
		if r.NoLogic > 0 {
			nl = fmt.Sprintf("%.2f", r.NoLogic)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\n", r.Measure, r.Flags, r.Hubd, r.Floor, r.Ratio, r.Target, verdict, nl)
	}
	_ = tw.Flush()
	b.WriteString("no session logic: the turn floor's figure over the floor's, the same run; what a hub whose session logic cost nothing would reach.\n")
	b.WriteString("idle agents (≤ 16 KB and ≤ 2 goroutines each) are measured apart: hubload --idle 10000 --conns 100 --hub-pid PID --hub-http ADDR\n")
	return b.String()
}
