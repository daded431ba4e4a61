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

	"github.com/hubd/hubd/cmd/hubload/load"
)

// tableReport is what the table prints: the targets, each row measured
// against its floor in the same minute, and the runs that gave them.
type tableReport struct {
	Apart    bool        `json:"floors_apart"`
	Duration float64     `json:"duration_s"`
	Rows     []tableRow  `json:"rows"`
	Runs     []runReport `json:"runs"`
}

// tableRow is one target: hubd's figure, the floor's, their ratio, and
// whether the ratio meets the target. For the rows of the turns workload,
// ToTurnFloor is hubd's figure over the turn floor's (what the hub's own
// work costs), and NoLogic the turn floor's over the floor's: what a hub
// whose session logic cost nothing would reach (the least a turn does,
// the three messages and the append, against the floor's unary call).
type tableRow struct {
	Measure     string  `json:"measure"`
	Flags       string  `json:"flags"`
	Hubd        string  `json:"hubd"`
	Floor       string  `json:"floor"`
	Ratio       float64 `json:"ratio"`
	Target      target  `json:"target"`
	Met         bool    `json:"met"`
	ToTurnFloor float64 `json:"hubd_over_turn_floor,omitempty"`
	NoLogic     float64 `json:"no_session_logic,omitempty"`
	order       int     // its place among the targets
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

// tableRuns are the runs behind the targets, the one-at-a-time runs
// first, so that the latencies of a single session are measured on a hub
// that no heavier run has left anything to (the rows print in the order
// of the targets, the row constants below).
func tableRuns() []tableRun {
	return []tableRun{
		{workload: load.WorkloadTurns, agents: 3, sessions: 1},
		{workload: load.WorkloadSessions, conc: 1, perSec: 600},
		{workload: load.WorkloadTurns, agents: 32, sessions: 16},
		{workload: load.WorkloadTurns, agents: 128, sessions: 128},
		{workload: load.WorkloadSessions, conc: 50, perSec: 4000},
	}
}

// The rows in the order of the targets (docs/PERFORMANCE.md).
const (
	rowSteady16 = iota
	rowSteady128
	rowTold
	rowServe
	rowOpenClosed
	rowSessions50
	rowP99
)

// measureTable measures every run of the table against the hub, each
// between its floors, writing each run's report to progress (nil: none)
// as it ends, and returns the rows.
func measureTable(ctx context.Context, o options, progress, stderr io.Writer) (tableReport, error) {
	t := tableReport{Apart: o.floorApart, Duration: o.duration.Seconds()}
	for _, run := range tableRuns() {
		rep, err := run.measure(ctx, o, stderr)
		if err != nil {
			return t, fmt.Errorf("hubload %s: %w", run.flags(o), err)
		}
		if progress != nil {
			if _, err := io.WriteString(progress, rep.text()); err != nil {
				return t, err
			}
		}
		t.Runs = append(t.Runs, rep)
		if rep.Sessions != nil {
			t.Rows = append(t.Rows, sessionsRows(run, rep)...)
		} else {
			t.Rows = append(t.Rows, turnsRows(run, rep)...)
		}
	}
	slices.SortStableFunc(t.Rows, func(a, b tableRow) int { return cmp.Compare(a.order, b.order) })
	return t, nil
}

// row makes the row at order of ratio r to target t.
func row(order int, measure string, run runReport, hubd, floor string, r float64, t target) tableRow {
	return tableRow{Measure: measure, Flags: run.Flags, Hubd: hubd, Floor: floor, Ratio: r, Target: t, Met: t.met(r), order: order}
}

// turnsRows are the rows a turns run gives: throughput (and p99 at 16 in
// flight), or one session's send → next speaker told.
func turnsRows(run tableRun, rep runReport) []tableRow {
	r, b, tf := rep.Turns, rep.Floor, rep.TurnFloor
	perSec := func(v float64) string { return fmt.Sprintf("%.0f/s", v) }
	if run.sessions == 1 {
		x := row(rowTold, "one session, send → next speaker told p50 (floor: send → ack p50)", rep,
			msText(r.SendToTold.P50), msText(b.SendToAck.P50), ratio(r.SendToTold.P50, b.SendToAck.P50), target{Value: 1.1})
		x.ToTurnFloor, x.NoLogic = ratio(r.SendToTold.P50, tf.SendToTold.P50), ratio(tf.SendToTold.P50, b.SendToAck.P50)
		return []tableRow{x}
	}
	order := rowSteady16
	if run.sessions != 16 {
		order = rowSteady128
	}
	x := row(order, fmt.Sprintf("steady turns, %d sessions in flight, throughput", run.sessions), rep,
		perSec(r.PerSecond), perSec(b.PerSecond), ratio(r.PerSecond, b.PerSecond), target{AtLeast: true, Value: 1})
	x.ToTurnFloor, x.NoLogic = ratio(r.PerSecond, tf.PerSecond), ratio(tf.PerSecond, b.PerSecond)
	rows := []tableRow{x}
	if run.sessions == 16 {
		p := row(rowP99, "send → ack p99, 16 in flight", rep, msText(r.SendToAck.P99), msText(b.SendToAck.P99),
			ratio(r.SendToAck.P99, b.SendToAck.P99), target{Value: 1.5})
		p.ToTurnFloor, p.NoLogic = ratio(r.SendToAck.P99, tf.SendToAck.P99), ratio(tf.SendToAck.P99, b.SendToAck.P99)
		rows = append(rows, p)
	}
	return rows
}

// sessionsRows are the rows a sessions run gives: one at a time, Serve's
// handler to handler and a session's open → closed; 50 at a time, turns a
// second.
func sessionsRows(run tableRun, rep runReport) []tableRow {
	r, b := rep.Sessions, rep.Floor
	if run.conc == 1 {
		return []tableRow{
			row(rowServe, "one session through agentsdk.Serve, handler → handler p50 (floor: send → ack p50)", rep,
				msText(r.HandlerToNext.P50), msText(b.SendToAck.P50), ratio(r.HandlerToNext.P50, b.SendToAck.P50), target{Value: 1.5}),
			row(rowOpenClosed, "sessions one at a time, open → closed p50 (floor: send → ack p50)", rep,
				msText(r.OpenToClosed.P50), msText(b.SendToAck.P50), ratio(r.OpenToClosed.P50, b.SendToAck.P50), target{Value: 6}),
		}
	}
	return []tableRow{row(rowSessions50, fmt.Sprintf("sessions %d at a time, turns a second (floor: requests a second)", run.conc), rep,
		fmt.Sprintf("%.0f/s", r.TurnsPerS), fmt.Sprintf("%.0f/s", b.PerSecond), ratio(r.TurnsPerS, b.PerSecond), target{AtLeast: true, Value: 0.8})}
}

func msText(v float64) string { return fmt.Sprintf("%.2fms", v) }

// orBlank is v with two decimals, or nothing for 0 (no such figure).
func orBlank(v float64) string {
	if v == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", v)
}

// text is the table as it prints.
func (t tableReport) text() string {
	var b strings.Builder
	where := "in the table's process"
	if t.Apart {
		where = "each served from a process of its own (--floor-apart)"
	}
	fmt.Fprintf(&b, "== the targets of docs/PERFORMANCE.md, each run against the hub with its floors in the same minute, the floors %s; windows of %v\n",
		where, time.Duration(t.Duration*float64(time.Second)))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\thubload flags\thubd\tfloor\thubd / floor\ttarget\t\thubd / turn floor\tno session logic")
	for _, r := range t.Rows {
		verdict := "missed"
		if r.Met {
			verdict = "met"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\n", r.Measure, r.Flags, r.Hubd, r.Floor, r.Ratio, r.Target, verdict, orBlank(r.ToTurnFloor), orBlank(r.NoLogic))
	}
	_ = tw.Flush()
	b.WriteString("hubd / turn floor: hubd's figure over the turn floor's, the same run; what the hub's own work costs.\n")
	b.WriteString("no session logic: the turn floor's figure over the floor's, the same run; what a hub whose session logic cost nothing would reach.\n")
	b.WriteString("idle agents (≤ 16 KB and ≤ 2 goroutines each) are measured apart: hubload --idle 10000 --conns 100 --hub-pid PID --hub-http ADDR (bench/figures.sh idle)\n")
	return b.String()
}
