package hub

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// checkOpenLimits refuses an open (or a delegated child) over the hub's
// limits: too many or too large labels, knobs, graph, participants or
// expectations (TOO_LARGE), a threshold under the minimum or a duration
// over the maximum (MALFORMED), text that is not valid UTF-8 or has
// control characters (MALFORMED). Messages name the limit and the value
// sent. It returns the canonical JSON of the knobs it measured, for
// interning them (see knobJSON).
func (h *Hub) checkOpenLimits(req *hubpb.OpenRequest) (knobJSON, error) {
	c := &h.cfg
	if err := session.CheckFields(req); err != nil {
		return nil, err
	}
	if n := len(req.GetLabels()); n > c.MaxLabels {
		return nil, fmt.Errorf("%d labels, the limit is %d (MaxLabels): %w", n, c.MaxLabels, ErrTooLarge)
	}
	size, bad := 0, false
	for k, v := range req.GetLabels() { //hubd:orderless a sum; the first bad label is named in key order below
		bad = bad || session.CheckText("label key", k) != nil || session.CheckText("label", v) != nil
		size += len(k) + len(v)
	}
	if bad {
		return nil, checkLabels(req.GetLabels())
	}
	if size > c.MaxLabelBytes {
		return nil, fmt.Errorf("labels are %d bytes (keys and values), the limit is %d (MaxLabelBytes): %w", size, c.MaxLabelBytes, ErrTooLarge)
	}
	if n := len(req.GetParticipants()); n > c.MaxParticipants {
		return nil, fmt.Errorf("%d participants, the limit is %d (MaxParticipants): %w", n, c.MaxParticipants, ErrTooLarge)
	}
	raws, err := h.checkKnobSizes(req)
	if err != nil {
		return nil, err
	}
	return raws, h.checkTimes(req)
}

// checkLabels names the first label, in key order, whose key or value is
// not a valid text.
func checkLabels(labels map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if err := session.CheckText("label key", k); err != nil {
			return err
		}
		if err := session.CheckText(fmt.Sprintf("labels[%q]", k), labels[k]); err != nil {
			return err
		}
	}
	return nil
}

// checkKnobSizes bounds the knobs' and the graph's JSON, and returns it.
// A value that has none counts 0 here (its check refuses it later, with
// its own message).
func (h *Hub) checkKnobSizes(req *hubpb.OpenRequest) (knobJSON, error) {
	graph, knobs := 0, 0
	var raws knobJSON
	if n := len(req.GetKnobs()); n > 0 || req.GetGraph() != nil {
		raws = make(knobJSON, n+1)
	}
	if g := req.GetGraph(); g != nil {
		raw, err := session.ValueJSON(structpb.NewStructValue(g))
		graph, raws["graph"] = len(raw), rawValue{raw, err}
	}
	for k, v := range req.GetKnobs() { //hubd:orderless a sum, and a set of values
		raw, err := session.ValueJSON(v)
		if k == "graph" {
			graph += len(k) + len(raw)
		} else {
			knobs += len(k) + len(raw)
		}
		if _, dup := raws[k]; !dup { // a graph and a graph knob: refused by knobs, after this check
			raws[k] = rawValue{raw, err}
		}
	}
	if graph > h.cfg.MaxGraphBytes {
		return nil, fmt.Errorf("the graph is %d bytes of JSON, the limit is %d (MaxGraphBytes): %w", graph, h.cfg.MaxGraphBytes, ErrTooLarge)
	}
	if knobs > h.cfg.MaxKnobBytes {
		return nil, fmt.Errorf("the knobs are %d bytes of JSON, the limit is %d (MaxKnobBytes): %w", knobs, h.cfg.MaxKnobBytes, ErrTooLarge)
	}
	return raws, nil
}

// checkTimes bounds the request's durations: expectations (how many, and
// their thresholds), the TTL and the invite timeout.
func (h *Hub) checkTimes(req *hubpb.OpenRequest) error {
	items := req.GetExpectations().GetItems()
	if n := len(items); n > h.cfg.MaxExpectations {
		return fmt.Errorf("%d expectations, the limit is %d (MaxExpectations): %w", n, h.cfg.MaxExpectations, ErrTooLarge)
	}
	for i, e := range items {
		if err := session.CheckExpectation(e); err != nil {
			return fmt.Errorf("expectations[%d]: %w", i, err)
		}
		if err := session.CheckDuration("expectation "+e.GetName()+": within", e.GetWithin(), h.cfg.MinExpectation, session.MaxDuration); err != nil {
			return fmt.Errorf("expectations[%d]: %w", i, err)
		}
	}
	if err := checkOptional("ttl", req.GetTtl(), h.cfg.MaxTTL); err != nil {
		return err
	}
	if r := req.GetRetention(); r != nil {
		if err := session.CheckDuration("retention", r, time.Second, session.MaxDuration); err != nil {
			return err
		}
	}
	return checkOptional("invite_timeout", req.GetInviteTimeout(), session.MaxDuration)
}

// checkOptional checks a duration that may be unset (0 or nil: none).
func checkOptional(field string, d *durationpb.Duration, max time.Duration) error {
	if d == nil || (d.GetSeconds() == 0 && d.GetNanos() == 0) {
		return nil
	}
	return session.CheckDuration(field, d, 1, max)
}

// limitErr returns a refusal at the limit of flag, value v, and tells the
// Limited hook of it.
func (h *Hub) limitErr(flag string, v int, err error, format string, args ...any) *LimitError {
	e := &LimitError{What: fmt.Sprintf(format, args...), Flag: flag, Value: int64(v), Err: err}
	if f := h.cfg.Hooks.Limited; f != nil {
		f(e.Limit())
	}
	return e
}
