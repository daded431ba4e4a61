package server

import (
	"sync"

	"github.com/hubd/hubd/transition"
)

// GraphCache decodes graphs with its registry and keeps the result by the
// graph's exact bytes: a decoded Graph is immutable, so every session with
// the same graph shares one (decoding is the costly part of opening and of
// hydrating a workflow session). Failed decodes are not kept. When it holds
// Max graphs it starts afresh. Safe for concurrent use.
type GraphCache struct {
	Registry *transition.Registry
	Max      int

	mu     sync.Mutex
	graphs map[string]*transition.Graph
}

// Decode implements workflow.Decoder.
func (c *GraphCache) Decode(data []byte) (*transition.Graph, error) {
	c.mu.Lock()
	g, ok := c.graphs[string(data)]
	c.mu.Unlock()
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
