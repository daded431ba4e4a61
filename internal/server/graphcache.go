package server

import (
	"encoding/json"
	"sync"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/transition"
)

// GraphCache decodes graphs with its registry and keeps the result by the
// graph's exact bytes: a decoded Graph is immutable, so every session with
// the same graph shares one (decoding is the costly part of opening and of
// hydrating a workflow session). It also keeps each graph by the knob
// value it was decoded from (DecodeValue): the hub shares one value
// between the sessions with equal knobs, and the value of a session's
// metadata never changes, so a session opened or hydrated with a shared
// value finds its graph without writing the value's JSON (a memo of a pure
// function of an unchanging value). Failed decodes are not kept. When
// either holds Max graphs it starts afresh. Safe for concurrent use.
type GraphCache struct {
	Registry *transition.Registry
	Max      int

	mu      sync.RWMutex
	graphs  map[string]*transition.Graph
	byValue map[*structpb.Value]*transition.Graph
}

// Decode implements workflow.Decoder.
func (c *GraphCache) Decode(data []byte) (*transition.Graph, error) {
	c.mu.RLock()
	g, ok := c.graphs[string(data)]
	c.mu.RUnlock()
	if ok {
		return g, nil
	}
	g, err := c.Registry.Decode(data)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.graphs == nil || len(c.graphs) >= c.Max {
		c.graphs = make(map[string]*transition.Graph)
	}
	c.graphs[string(data)] = g
	c.mu.Unlock()
	return g, nil
}

// DecodeValue implements workflow.ValueDecoder: v must never change once
// given (the adapter gives the values of sessions' metadata only).
func (c *GraphCache) DecodeValue(v *structpb.Value, raw func() (json.RawMessage, error)) (*transition.Graph, error) {
	c.mu.RLock()
	g, ok := c.byValue[v]
	c.mu.RUnlock()
	if ok {
		return g, nil
	}
	data, err := raw()
	if err != nil {
		return nil, err
	}
	if g, err = c.Decode(data); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.byValue == nil || len(c.byValue) >= c.Max {
		c.byValue = make(map[*structpb.Value]*transition.Graph)
	}
	c.byValue[v] = g
	c.mu.Unlock()
	return g, nil
}
