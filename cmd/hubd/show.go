package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hubd/hubd/hubpb"
)

// writeSummary writes a session as "sessions show" prints it for people:
// one "name: value" line per fact, aligned, in the order of its life (who
// and how, then where its turns stand, then what it used and when it
// began); the facts a session may lack (labels, a parent, knobs, holds,
// children, context) only when it has them.
func writeSummary(w io.Writer, s *hubpb.SessionInfo, now time.Time) error {
	m := s.GetMeta()
	r := &summaryLines{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	r.row("session", m.GetSessionId())
	r.row("type", m.GetType())
	state := s.GetState()
	if s.GetCloseReason() != "" {
		state += " (" + s.GetCloseReason() + ")"
	}
	r.row("state", state)
	r.row("creator", m.GetCreator())
	r.row("participants", participantsLine(m.GetParticipants()))
	r.some("labels", pairs(m.GetLabels()))
	if m.GetParentSessionId() != "" {
		r.row("parent", fmt.Sprintf("%s (depth %d, root %s)", m.GetParentSessionId(), m.GetDepth(), m.GetRootSessionId()))
	}
	r.some("responder", s.GetResponder())
	r.some("knobs", strings.Join(slices.Sorted(maps.Keys(m.GetKnobs())), ", "))
	r.some("timers", timersLine(m.GetExpectations()))
	if ttl := m.GetTtl(); ttl != nil {
		r.row("ttl", ttl.AsDuration().String())
	}
	r.turns(s, now)
	r.some("context", strings.Join(slices.Sorted(maps.Keys(s.GetContext())), ", "))
	r.row("usage", usageLine(s.GetUsage()))
	if len(s.GetOpenChildren()) > 0 || !sameUsage(s.GetUsage(), s.GetTreeUsage()) {
		r.row("tree usage", usageLine(s.GetTreeUsage()))
	}
	r.row("created", fmt.Sprintf("%s (%s ago)", timeCell(m.GetCreatedAt()), ageCell(m.GetCreatedAt(), now)))
	return r.tw.Flush()
}

// summaryLines are the aligned lines of writeSummary.
type summaryLines struct{ tw *tabwriter.Writer }

// row writes "name: value"; an empty name continues the line before.
func (r *summaryLines) row(name, value string) {
	if name != "" {
		name += ":"
	}
	fmt.Fprintf(r.tw, "%s\t%s\n", name, value)
}

// some writes a row with a value, none without.
func (r *summaryLines) some(name, value string) {
	if value != "" {
		r.row(name, value)
	}
}

// turns writes where the session's turns stand: who is expected, the held
// turns, the open children, the seq and the turns taken, the last rule.
func (r *summaryLines) turns(s *hubpb.SessionInfo, now time.Time) {
	r.row("expected", cell(strings.Join(s.GetExpected(), ", ")))
	r.some("active agent", s.GetActiveAgent())
	r.some("supervisor", s.GetSupervisor())
	name := "holds" // then a line of its own for each further hold
	for _, h := range s.GetHolds() {
		r.row(name, holdLine(h, now))
		name = ""
	}
	r.some("open children", strings.Join(s.GetOpenChildren(), ", "))
	seq := fmt.Sprintf("%d (%d turns", s.GetSeq(), s.GetTurn())
	if s.GetHandoffs() > 0 {
		seq += fmt.Sprintf(", %d handoffs", s.GetHandoffs())
	}
	r.row("seq", seq+")")
	r.some("last rule", s.GetLastRule())
}

// participantsLine is "alice (creator), bob (member, auto-accept)".
func participantsLine(ps []*hubpb.Participant) string {
	var out []string
	for _, p := range ps {
		accept := ""
		if p.GetAutoAccept() {
			accept = "auto-accept"
		}
		notes := joinNonEmpty(", ", p.GetRole(), accept)
		if notes != "" {
			notes = " (" + notes + ")"
		}
		out = append(out, p.GetName()+notes)
	}
	return cell(strings.Join(out, ", "))
}

// holdLine describes a held turn: "alice waits for question q1 (bob
// answers) since ... (4m)", "planner waits for all of a, b (done: a)
// since ...".
func holdLine(h *hubpb.Hold, now time.Time) string {
	since := fmt.Sprintf(" since %s (%s)", timeCell(h.GetSince()), ageCell(h.GetSince(), now))
	switch h.GetKind() {
	case "question":
		return fmt.Sprintf("%s waits for question %s (%s answers)%s", h.GetHolder(), h.GetQuestionId(), h.GetAnswerer(), since)
	case "children":
		done := ""
		if len(h.GetDone()) > 0 {
			done = " (done: " + strings.Join(h.GetDone(), ", ") + ")"
		}
		return fmt.Sprintf("%s waits for %s of %s%s%s", h.GetHolder(), cell(h.GetAwait()), strings.Join(h.GetChildren(), ", "), done, since)
	}
	return fmt.Sprintf("%s waits (%s)%s", h.GetHolder(), h.GetKind(), since)
}

// timersLine is the session's expectations as --expect takes them:
// "turn_within=5m0s:auto_close".
func timersLine(xs []*hubpb.Expectation) string {
	var out []string
	for _, x := range xs {
		out = append(out, fmt.Sprintf("%s=%s:%s", x.GetName(), x.GetWithin().AsDuration(), x.GetAction()))
	}
	return strings.Join(out, ", ")
}

// pairs is a map as "k=v, k2=v2", in key order.
func pairs(m map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return strings.Join(out, ", ")
}

// joinNonEmpty joins the non-empty strings of parts with sep.
func joinNonEmpty(sep string, parts ...string) string {
	return strings.Join(slices.DeleteFunc(parts, func(s string) bool { return s == "" }), sep)
}

// sameUsage reports whether two usages count the same.
func sameUsage(a, b *hubpb.Usage) bool {
	return a.GetInputTokens() == b.GetInputTokens() && a.GetOutputTokens() == b.GetOutputTokens() &&
		a.GetCostUsd() == b.GetCostUsd() && a.GetToolCalls() == b.GetToolCalls()
}
