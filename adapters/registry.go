package adapters

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hubd/hubd/session"
)

// Registry holds the session types a hub serves. It is built once at start
// (cmd/hubd registers the concrete adapters) and read-only afterwards.
type Registry struct {
	byType map[session.Type]Adapter
}

// NewRegistry returns a registry of the given adapters. Two adapters of the
// same type are an error.
func NewRegistry(list ...Adapter) (*Registry, error) {
	r := &Registry{byType: make(map[session.Type]Adapter, len(list))}
	for _, a := range list {
		t := a.Type()
		if _, dup := r.byType[t]; dup {
			return nil, fmt.Errorf("adapters: type %v registered twice", t)
		}
		r.byType[t] = a
	}
	return r, nil
}

// Lookup returns the adapter of a session type, or an ErrUnknownType error
// listing the known types.
func (r *Registry) Lookup(t session.Type) (Adapter, error) {
	if a, ok := r.byType[t]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("session type %v is not served here (known: %s): %w", t, strings.Join(r.Names(), ", "), ErrUnknownType)
}

// Names returns the served types as "kind@version", sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.byType))
	for _, t := range r.Types() {
		names = append(names, t.String())
	}
	return names
}

// Types returns the served types sorted by kind then version.
func (r *Registry) Types() []session.Type {
	return slices.SortedFunc(maps.Keys(r.byType), func(a, b session.Type) int {
		if c := strings.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		return a.Version - b.Version
	})
}
