package hub

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/session"
)

// interner shares equal knob values between sessions: a session's
// metadata never changes, so every session opened with the same graph can
// hold one copy of it instead of its own (a workflow graph is most of a
// session's metadata). Values are keyed by their canonical JSON. It holds
// at most internMax values and starts afresh when full. Safe for
// concurrent use.
type interner struct {
	mu   sync.Mutex
	vals map[string]*structpb.Value
}

// internMax bounds the interner.
const internMax = 4096

// value returns the shared copy of v, a checked value whose canonical
// JSON is raw (nil: computed here), storing a clone of v if it is new. The
// result must never be changed.
func (in *interner) value(v *structpb.Value, raw json.RawMessage) (*structpb.Value, error) {
	if raw == nil {
		var err error
		if raw, err = session.ValueJSON(v); err != nil {
			return nil, err
		}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if got, ok := in.vals[string(raw)]; ok {
		return got, nil
	}
	if in.vals == nil || len(in.vals) >= internMax {
		in.vals = make(map[string]*structpb.Value)
	}
	c := proto.CloneOf(v)
	in.vals[string(raw)] = c
	return c, nil
}

// knobs returns a copy of knobs whose values are the interner's shared
// copies; an invalid value is an ErrMalformed error naming its knob (the
// first in key order). raws, when not nil, holds the canonical JSON of
// every value (see checkKnobSizes).
func (in *interner) knobs(knobs map[string]*structpb.Value, raws knobJSON) (map[string]*structpb.Value, error) {
	if len(knobs) == 0 {
		return nil, nil
	}
	out := make(map[string]*structpb.Value, len(knobs))
	for k, v := range knobs { //hubd:orderless a map of its own; on an error, the first bad knob is named in key order below
		r, ok := raws[k]
		if ok && r.err != nil {
			return nil, firstBadKnob(knobs)
		}
		v, err := in.value(v, r.raw)
		if err != nil {
			return nil, firstBadKnob(knobs)
		}
		out[k] = v
	}
	return out, nil
}

// firstBadKnob names the first knob, in key order, whose value is not one
// the hub stores.
func firstBadKnob(knobs map[string]*structpb.Value) error {
	for _, k := range slices.Sorted(maps.Keys(knobs)) {
		if _, err := session.ValueJSON(knobs[k]); err != nil {
			return fmt.Errorf("knobs[%q]: %w", k, err)
		}
	}
	return fmt.Errorf("knobs: a value has no JSON: %w", session.ErrMalformed) // not reached
}
