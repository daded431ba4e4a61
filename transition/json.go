package transition

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

type graphJSONIn struct {
	Version        *int               `json:"version"`
	InitialSpeaker string             `json:"initial_speaker"`
	Transitions    []transitionJSONIn `json:"transitions"`
	DefaultTarget  json.RawMessage    `json:"default_target"`
	MaxTurns       *int               `json:"max_turns"`
	Supervisor     string             `json:"supervisor"`
}

type transitionJSONIn struct {
	When     json.RawMessage `json:"when"`
	Then     json.RawMessage `json:"then"`
	Priority int             `json:"priority"`
}

type nodeJSONIn struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type graphJSONOut struct {
	Version        int                 `json:"version"`
	InitialSpeaker string              `json:"initial_speaker"`
	Transitions    []transitionJSONOut `json:"transitions"`
	DefaultTarget  nodeJSONOut         `json:"default_target"`
	MaxTurns       *int                `json:"max_turns"`
	Supervisor     string              `json:"supervisor,omitempty"`
}

type transitionJSONOut struct {
	When     nodeJSONOut `json:"when"`
	Then     nodeJSONOut `json:"then"`
	Priority int         `json:"priority"`
}

type nodeJSONOut struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

type named interface {
	Name() string
	Args() map[string]any
}

func node(n named) nodeJSONOut {
	args := n.Args()
	if args == nil {
		args = map[string]any{}
	}
	return nodeJSONOut{Name: n.Name(), Args: args}
}

func nodes(cs []Condition) []nodeJSONOut {
	out := make([]nodeJSONOut, len(cs))
	for i, c := range cs {
		out[i] = node(c)
	}
	return out
}

func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return plainTypeError(err)
	}
	// Decoder.More alone would let a stray ']' or '}' after the value pass.
	if rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"); len(rest) != 0 {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

// plainTypeError says what JSON was expected where encoding/json would name
// a Go type ("cannot unmarshal string into Go value of type ...").
func plainTypeError(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err
	}
	want := "a value of another kind"
	switch te.Type.Kind() {
	case reflect.Struct, reflect.Map:
		want = "an object"
	case reflect.Slice, reflect.Array:
		want = "a list"
	case reflect.String:
		want = "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "an integer"
	case reflect.Float32, reflect.Float64:
		want = "a number"
	case reflect.Bool:
		want = "true or false"
	}
	if te.Field == "" {
		return fmt.Errorf("want %s, got a JSON %s", want, te.Value)
	}
	return fmt.Errorf("%s: want %s, got a JSON %s", te.Field, want, te.Value)
}

// Decode parses a graph from its JSON form and checks its shape: known
// condition and target names, exact args, priorities, max_turns >= 1 when
// given, a supported version. It does not check agent names against
// participants; call [Graph.Validate] for that. Errors wrap ErrInvalid and
// name the offending node.
func (r *Registry) Decode(data []byte) (*Graph, error) {
	var in graphJSONIn
	if err := strictDecode(data, &in); err != nil {
		return nil, fmt.Errorf("graph: %v: %w", err, ErrInvalid)
	}
	g := &Graph{Version: FormatVersion, InitialSpeaker: in.InitialSpeaker, Supervisor: in.Supervisor}
	if in.Version != nil && *in.Version != FormatVersion && *in.Version != 0 {
		return nil, fmt.Errorf("version: %d is not supported (this hub reads version %d): %w", *in.Version, FormatVersion, ErrInvalid)
	}
	if in.MaxTurns != nil {
		if *in.MaxTurns < 1 {
			return nil, fmt.Errorf("max_turns: %d must be at least 1 (omit it or use null for no cap): %w", *in.MaxTurns, ErrInvalid)
		}
		g.MaxTurns = *in.MaxTurns
	}
	for i, t := range in.Transitions {
		path := fmt.Sprintf("transitions[%d]", i)
		if len(t.When) == 0 || string(t.When) == "null" {
			return nil, fmt.Errorf("%s: missing \"when\": %w", path, ErrInvalid)
		}
		if len(t.Then) == 0 || string(t.Then) == "null" {
			return nil, fmt.Errorf("%s: missing \"then\": %w", path, ErrInvalid)
		}
		when, err := r.decodeCondition(path+".when", t.When)
		if err != nil {
			return nil, err
		}
		then, err := r.decodeTarget(path+".then", t.Then)
		if err != nil {
			return nil, err
		}
		g.Transitions = append(g.Transitions, Transition{When: when, Then: then, Priority: t.Priority})
	}
	if len(in.DefaultTarget) > 0 && string(in.DefaultTarget) != "null" {
		d, err := r.decodeTarget("default_target", in.DefaultTarget)
		if err != nil {
			return nil, err
		}
		g.DefaultTarget = d
	}
	return g, nil
}

func (r *Registry) args(path string, raw []byte) (nodeJSONIn, *Args, error) {
	var n nodeJSONIn
	if err := strictDecode(raw, &n); err != nil {
		return n, nil, fmt.Errorf("%s: %v: %w", path, err, ErrInvalid)
	}
	a := &Args{reg: r, path: path, name: n.Name, used: map[string]bool{}}
	if len(n.Args) > 0 && string(n.Args) != "null" {
		if err := json.Unmarshal(n.Args, &a.raw); err != nil {
			return n, nil, fmt.Errorf("%s (%s): args must be a JSON object: %w", path, n.Name, ErrInvalid)
		}
	}
	return n, a, nil
}

func (r *Registry) decodeCondition(path string, raw []byte) (Condition, error) {
	n, a, err := r.args(path, raw)
	if err != nil {
		return nil, err
	}
	f, ok := r.conditions[n.Name]
	if !ok {
		return nil, fmt.Errorf("%s: unknown condition %q (known: %s): %w", path, n.Name, strings.Join(r.ConditionNames(), ", "), ErrInvalid)
	}
	c, err := f(a)
	if err == nil {
		err = a.done()
	}
	if err != nil {
		return nil, wrapInvalid(a, err)
	}
	return c, nil
}

func (r *Registry) decodeTarget(path string, raw []byte) (Target, error) {
	n, a, err := r.args(path, raw)
	if err != nil {
		return nil, err
	}
	f, ok := r.targets[n.Name]
	if !ok {
		return nil, fmt.Errorf("%s: unknown target %q (known: %s): %w", path, n.Name, strings.Join(r.TargetNames(), ", "), ErrInvalid)
	}
	t, err := f(a)
	if err == nil {
		err = a.done()
	}
	if err != nil {
		return nil, wrapInvalid(a, err)
	}
	return t, nil
}

// wrapInvalid makes sure a custom factory's error names the node and wraps
// ErrInvalid.
func wrapInvalid(a *Args, err error) error {
	if strings.HasPrefix(err.Error(), a.path) {
		if errors.Is(err, ErrInvalid) {
			return err
		}
		return fmt.Errorf("%w: %w", err, ErrInvalid)
	}
	return a.Errorf("%v", err)
}

// MarshalJSON encodes the graph in its JSON form. The output is canonical:
// decoding it and encoding again gives the same bytes.
func (g Graph) MarshalJSON() ([]byte, error) {
	out := graphJSONOut{Version: FormatVersion, InitialSpeaker: g.InitialSpeaker, Transitions: []transitionJSONOut{}, Supervisor: g.Supervisor}
	for _, t := range g.Transitions {
		out.Transitions = append(out.Transitions, transitionJSONOut{When: node(t.When), Then: node(t.Then), Priority: t.Priority})
	}
	if g.DefaultTarget == nil {
		out.DefaultTarget = node(TerminateTarget{Reason: "after_work"})
	} else {
		out.DefaultTarget = node(g.DefaultTarget)
	}
	if g.MaxTurns > 0 {
		m := g.MaxTurns
		out.MaxTurns = &m
	}
	return json.Marshal(out)
}
