package hub

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Defaults of the limits on what an open may carry (see Config; each is
// documented in docs/OPERATIONS.md).
const (
	DefaultMaxMetaBytes    = 512 << 10
	DefaultMaxLabels       = 64
	DefaultMaxLabelBytes   = 16 << 10
	DefaultMaxKnobBytes    = 64 << 10
	DefaultMaxGraphBytes   = 256 << 10
	DefaultMaxParticipants = 256
	DefaultMaxExpectations = 32
	DefaultMinExpectation  = session.MinThreshold
	DefaultMaxTTL          = session.MaxDuration
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

// knobJSON is the canonical JSON of an open's knob values by name, the
// graph as "graph" (see knobs): computed once by the size check and used
// again as the values' interning keys. A value without one (see
// session.ValueJSON) has its error instead.
type knobJSON map[string]rawValue

// rawValue is a value's canonical JSON, or why it has none.
type rawValue struct {
	raw json.RawMessage
	err error
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
	return checkOptional("invite_timeout", req.GetInviteTimeout(), session.MaxDuration)
}

// checkOptional checks a duration that may be unset (0 or nil: none).
func checkOptional(field string, d *durationpb.Duration, max time.Duration) error {
	if d == nil || (d.GetSeconds() == 0 && d.GetNanos() == 0) {
		return nil
	}
	return session.CheckDuration(field, d, 1, max)
}

// Defaults of the fan-out limits (see Config; docs/OPERATIONS.md says why
// each).
const (
	DefaultMaxOpenPerAgent    = 10_000
	DefaultMaxTreeSessions    = 1_000
	DefaultMaxChildrenPerTurn = 256
)

// LimitError is a refusal at one of the hub's limits: what was refused,
// the limit's value and the flag of hubd serve that sets it. It wraps
// ErrLimit (counts), ErrTooLarge (sizes) or ErrSlowSubscriber (a stream
// cut off at a buffer bound); its ErrorInfo metadata names the limit
// ("limit": the flag without its dashes, "value").
type LimitError struct {
	// What is what was refused and why: `"alice" has 10000 sessions
	// pending or open`.
	What string
	// Flag is the hubd serve flag that sets the limit:
	// "--max-open-per-agent".
	Flag string
	// Value is the limit's value.
	Value int64
	// Err is ErrLimit, ErrTooLarge or ErrSlowSubscriber.
	Err error
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

// Error implements error: "WHAT, the limit is N (--flag): SENTINEL".
func (e *LimitError) Error() string {
	return fmt.Sprintf("%s, the limit is %d (%s): %v", e.What, e.Value, e.Flag, e.Err)
}

// Unwrap returns Err.
func (e *LimitError) Unwrap() error { return e.Err }

// Limit is the limit's name in metrics and ErrorInfo: the flag without its
// dashes.
func (e *LimitError) Limit() string { return strings.TrimLeft(e.Flag, "-") }

// ErrorMetadata is the ErrorInfo metadata of the refusal: the limit's
// name and value.
func (e *LimitError) ErrorMetadata() map[string]string {
	return map[string]string{"limit": e.Limit(), "value": strconv.FormatInt(e.Value, 10)}
}
