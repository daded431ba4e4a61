package hub

import (
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

// value returns the shared copy of v, a checked value, storing a clone of
// v if it is new. The result must never be changed.
func (in *interner) value(v *structpb.Value) (*structpb.Value, error) {
	key, err := session.ValueJSON(v)
	if err != nil {
		return nil, err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if got, ok := in.vals[string(key)]; ok {
		return got, nil
	}
	if in.vals == nil || len(in.vals) >= internMax {
		in.vals = make(map[string]*structpb.Value)
	}
	c := proto.CloneOf(v)
	in.vals[string(key)] = c
	return c, nil
}

// knobs returns a copy of knobs whose values are the interner's shared
// copies; an invalid value is an ErrMalformed error naming its knob.
func (in *interner) knobs(knobs map[string]*structpb.Value) (map[string]*structpb.Value, error) {
	if len(knobs) == 0 {
		return nil, nil
	}
	out := make(map[string]*structpb.Value, len(knobs))
	for _, k := range slices.Sorted(maps.Keys(knobs)) {
		v, err := in.value(knobs[k])
		if err != nil {
			return nil, fmt.Errorf("knobs[%q]: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}
