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
// sent.
func (h *Hub) checkOpenLimits(req *hubpb.OpenRequest) error {
	c := &h.cfg
	if err := session.CheckFields(req); err != nil {
		return err
	}
	if n := len(req.GetLabels()); n > c.MaxLabels {
		return fmt.Errorf("%d labels, the limit is %d (MaxLabels): %w", n, c.MaxLabels, ErrTooLarge)
	}
	size := 0
	for _, k := range slices.Sorted(maps.Keys(req.GetLabels())) {
		v := req.GetLabels()[k]
		if err := session.CheckText("label key", k); err != nil {
			return err
		}
		if err := session.CheckText(fmt.Sprintf("labels[%q]", k), v); err != nil {
			return err
		}
		size += len(k) + len(v)
	}
	if size > c.MaxLabelBytes {
		return fmt.Errorf("labels are %d bytes (keys and values), the limit is %d (MaxLabelBytes): %w", size, c.MaxLabelBytes, ErrTooLarge)
	}
	if n := len(req.GetParticipants()); n > c.MaxParticipants {
		return fmt.Errorf("%d participants, the limit is %d (MaxParticipants): %w", n, c.MaxParticipants, ErrTooLarge)
	}
	if err := h.checkKnobSizes(req); err != nil {
		return err
	}
	return h.checkTimes(req)
}

// checkKnobSizes bounds the knobs' and the graph's JSON.
func (h *Hub) checkKnobSizes(req *hubpb.OpenRequest) error {
	graph, knobs := 0, 0
	if g := req.GetGraph(); g != nil {
		graph = jsonSize(structpb.NewStructValue(g))
	}
	for k, v := range req.GetKnobs() { //hubd:orderless a sum
		n := len(k) + jsonSize(v)
		if k == "graph" {
			graph += n
		} else {
			knobs += n
		}
	}
	if graph > h.cfg.MaxGraphBytes {
		return fmt.Errorf("the graph is %d bytes of JSON, the limit is %d (MaxGraphBytes): %w", graph, h.cfg.MaxGraphBytes, ErrTooLarge)
	}
	if knobs > h.cfg.MaxKnobBytes {
		return fmt.Errorf("the knobs are %d bytes of JSON, the limit is %d (MaxKnobBytes): %w", knobs, h.cfg.MaxKnobBytes, ErrTooLarge)
	}
	return nil
}

// jsonSize is the size of a value's canonical JSON; a value that has none
// counts 0 here (its check refuses it later, with its own message).
func jsonSize(v *structpb.Value) int {
	raw, err := session.ValueJSON(v)
	if err != nil {
		return 0
	}
	return len(raw)
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
