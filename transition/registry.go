package transition

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// ErrInvalid is wrapped by every error about a graph that cannot be decoded
// or does not validate; the message names the offending node by its path,
// e.g. "transitions[2].when.args.conditions[0]".
var ErrInvalid = session.NewError(hubpb.Reason_INVALID_GRAPH, "transition: invalid graph")

// ConditionFactory builds a condition from its JSON args.
type ConditionFactory func(a *Args) (Condition, error)

// TargetFactory builds a target from its JSON args.
type TargetFactory func(a *Args) (Target, error)

// Registry maps condition and target names to their factories. Each hub (or
// tool) owns its registry; there is no global table. NewRegistry returns one
// with every built-in registered; custom names are added with
// RegisterCondition and RegisterTarget before graphs that use them are
// decoded.
type Registry struct {
	conditions map[string]ConditionFactory
	targets    map[string]TargetFactory
}

// NewRegistry returns a registry with the built-in conditions and targets.
func NewRegistry() *Registry {
	return &Registry{conditions: builtinConditions(), targets: builtinTargets()}
}

// RegisterCondition adds a custom condition. A name already taken is an
// error.
func (r *Registry) RegisterCondition(name string, f ConditionFactory) error {
	if name == "" || f == nil {
		return errors.New("transition: register condition: empty name or nil factory")
	}
	if _, dup := r.conditions[name]; dup {
		return fmt.Errorf("transition: condition %q is already registered", name)
	}
	r.conditions[name] = f
	return nil
}

// RegisterTarget adds a custom target. A name already taken is an error.
func (r *Registry) RegisterTarget(name string, f TargetFactory) error {
	if name == "" || f == nil {
		return errors.New("transition: register target: empty name or nil factory")
	}
	if _, dup := r.targets[name]; dup {
		return fmt.Errorf("transition: target %q is already registered", name)
	}
	r.targets[name] = f
	return nil
}

// ConditionNames returns the registered condition names, sorted.
func (r *Registry) ConditionNames() []string { return slices.Sorted(maps.Keys(r.conditions)) }

// TargetNames returns the registered target names, sorted.
func (r *Registry) TargetNames() []string { return slices.Sorted(maps.Keys(r.targets)) }

// Args is a node's JSON args as a factory reads them: strictly (a missing
// required arg or an unknown one is an error naming the node's path).
type Args struct {
	reg  *Registry
	path string
	name string
	raw  map[string]json.RawMessage
	used map[string]bool
	err  error
}

// Path returns the path of the node these args belong to, for messages.
func (a *Args) Path() string { return a.path }

// Errorf returns an ErrInvalid error prefixed with the node's path and name.
func (a *Args) Errorf(format string, args ...any) error {
	return fmt.Errorf("%s (%s): %s: %w", a.path, a.name, fmt.Sprintf(format, args...), ErrInvalid)
}

func (a *Args) fail(format string, args ...any) {
	if a.err == nil {
		a.err = a.Errorf(format, args...)
	}
}

func (a *Args) get(key string, required bool) (json.RawMessage, bool) {
	a.used[key] = true
	v, ok := a.raw[key]
	if !ok || string(v) == "null" {
		if required {
			a.fail("missing arg %q", key)
		}
		return nil, false
	}
	return v, true
}

// String reads a string arg. A required arg must also be non-empty.
func (a *Args) String(key string, required bool) string {
	v, ok := a.get(key, required)
	if !ok {
		return ""
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		a.fail("arg %q must be a string, got %s", key, v)
		return ""
	}
	if required && s == "" {
		a.fail("arg %q must not be empty", key)
	}
	return s
}

// Int reads an integer arg.
func (a *Args) Int(key string, required bool) int {
	v, ok := a.get(key, required)
	if !ok {
		return 0
	}
	var n int
	if err := json.Unmarshal(v, &n); err != nil {
		a.fail("arg %q must be an integer, got %s", key, v)
	}
	return n
}

// Number reads a numeric arg.
func (a *Args) Number(key string, required bool) float64 {
	v, ok := a.get(key, required)
	if !ok {
		return 0
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		a.fail("arg %q must be a number, got %s", key, v)
	}
	return f
}

// Value reads any JSON value in canonical form; a missing or null arg is
// JSON null.
func (a *Args) Value(key string) json.RawMessage {
	v, ok := a.get(key, false)
	if !ok {
		return session.Null()
	}
	c, err := session.CanonicalJSON(v)
	if err != nil {
		a.fail("arg %q: %v", key, err)
	}
	return c
}

// Values reads a required non-empty JSON array of values, each canonical.
func (a *Args) Values(key string) []json.RawMessage {
	v, ok := a.get(key, true)
	if !ok {
		return nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(v, &list); err != nil || len(list) == 0 {
		a.fail("arg %q must be a non-empty array", key)
		return nil
	}
	for i, x := range list {
		c, err := session.CanonicalJSON(x)
		if err != nil {
			a.fail("arg %q[%d]: %v", key, i, err)
			return nil
		}
		list[i] = c
	}
	return list
}

// Condition reads a required nested condition.
func (a *Args) Condition(key string) Condition {
	v, ok := a.get(key, true)
	if !ok || a.err != nil {
		return nil
	}
	c, err := a.reg.decodeCondition(a.path+".args."+key, v)
	if err != nil && a.err == nil {
		a.err = err
	}
	return c
}

// Conditions reads a required non-empty list of nested conditions.
func (a *Args) Conditions(key string) []Condition {
	v, ok := a.get(key, true)
	if !ok || a.err != nil {
		return nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(v, &list); err != nil || len(list) == 0 {
		a.fail("arg %q must be a non-empty array of conditions", key)
		return nil
	}
	out := make([]Condition, 0, len(list))
	for i, raw := range list {
		c, err := a.reg.decodeCondition(fmt.Sprintf("%s.args.%s[%d]", a.path, key, i), raw)
		if err != nil {
			a.err = err
			return nil
		}
		out = append(out, c)
	}
	return out
}

// done reports the first error, or an unknown arg.
func (a *Args) done() error {
	if a.err != nil {
		return a.err
	}
	var unknown []string
	for _, k := range slices.Sorted(maps.Keys(a.raw)) {
		if !a.used[k] {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		return a.Errorf("unknown arg %s", strings.Join(unknown, ", "))
	}
	return nil
}
