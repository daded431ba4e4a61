package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
)

// MaxContextKeyLen bounds the length of a context variable name.
const MaxContextKeyLen = 256

// PayloadFor returns the zero payload of the Go type that carries t, or nil
// for types without data. Custom types are carried as [Custom].
func PayloadFor(t EventType) Payload {
	switch t {
	case EventText:
		return Text{}
	case EventPacket:
		return Packet{}
	case EventContextSet:
		return ContextUpdate{}
	case EventInvite:
		return Invite{}
	case EventInviteReject, EventClosed, EventExpired:
		return Ended{}
	case EventViolation:
		return Violation{}
	case EventQuestion:
		return Question{}
	case EventAnswer:
		return Answer{}
	case EventDelegationResult:
		return DelegationResult{}
	case EventTaskProgress:
		return TaskProgress{}
	case EventInviteAck, EventOpened:
		return nil
	}
	return Custom{}
}

func checkPayload(t EventType, p Payload) error {
	want := PayloadFor(t)
	if want == nil {
		if p != nil {
			return fmt.Errorf("%s carries no data, got %T: %w", t, p, ErrMalformed)
		}
		return nil
	}
	if p == nil {
		if _, ok := want.(Custom); ok {
			return nil
		}
		return fmt.Errorf("%s needs a %T payload, got none: %w", t, want, ErrMalformed)
	}
	if reflect.TypeOf(p) != reflect.TypeOf(want) {
		return fmt.Errorf("%s needs a %T payload, got %T: %w", t, want, p, ErrMalformed)
	}
	switch x := p.(type) {
	case Packet:
		return x.check()
	case ContextUpdate:
		if x.Empty() {
			return fmt.Errorf("context_set sets and deletes nothing: %w", ErrMalformed)
		}
		return x.check()
	case Ended:
		if x.Reason == "" {
			return fmt.Errorf("%s needs a reason: %w", t, ErrMalformed)
		}
	case Question:
		return x.check()
	case Answer:
		if x.QuestionID == "" {
			return fmt.Errorf("answer needs a question_id: %w", ErrMalformed)
		}
		if len(x.OptionIDs) == 0 && x.Text == "" {
			return fmt.Errorf("answer to %q has neither option_ids nor text: %w", x.QuestionID, ErrMalformed)
		}
	}
	return nil
}

func (p Packet) check() error {
	switch p.Routing.Kind {
	case "", RouteText, RouteFinish:
	case RouteHandoff:
		if p.Routing.Tool == "" && p.Routing.Target == "" {
			return fmt.Errorf("handoff needs a tool or a target: %w", ErrMalformed)
		}
		if p.Routing.Target != "" {
			if err := CheckName(p.Routing.Target); err != nil {
				return fmt.Errorf("handoff target: %w", err)
			}
		}
	case RouteEscalate:
	default:
		return fmt.Errorf("routing kind %q is not one of text, handoff, finish, escalate: %w", p.Routing.Kind, ErrMalformed)
	}
	if err := p.Usage.check(); err != nil {
		return err
	}
	return p.Context.check()
}

func (u Usage) check() error {
	if u.InputTokens < 0 || u.OutputTokens < 0 || u.CostUSD < 0 || math.IsNaN(u.CostUSD) || math.IsInf(u.CostUSD, 0) {
		return fmt.Errorf("usage %+v has a negative or non-finite value: %w", u, ErrMalformed)
	}
	return nil
}

func (u ContextUpdate) check() error {
	for _, k := range u.Delete {
		if err := checkContextKey(k); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(u.Set)) {
		if err := checkContextKey(k); err != nil {
			return err
		}
		v := u.Set[k]
		c, err := CanonicalJSON(v)
		if err != nil {
			return fmt.Errorf("context %q: %w", k, err)
		}
		if !bytes.Equal(c, v) {
			return fmt.Errorf("context %q: value %s is not canonical JSON (want %s): %w", k, v, c, ErrMalformed)
		}
	}
	return nil
}

// Canonical returns u with every value in canonical JSON form, or an error
// naming the first key whose value is not JSON.
func (u ContextUpdate) Canonical() (ContextUpdate, error) {
	out := ContextUpdate{Delete: u.Delete}
	if len(u.Delete) == 0 {
		out.Delete = nil // an empty list is no list: one canonical form
	}
	if len(u.Set) > 0 {
		out.Set = make(map[string]json.RawMessage, len(u.Set))
	}
	for _, k := range slices.Sorted(maps.Keys(u.Set)) {
		c, err := CanonicalJSON(u.Set[k])
		if err != nil {
			return ContextUpdate{}, fmt.Errorf("context %q: %w", k, err)
		}
		out.Set[k] = c
	}
	return out, nil
}

func checkContextKey(k string) error {
	if k == "" || len(k) > MaxContextKeyLen {
		return fmt.Errorf("context key %.40q must be 1 to %d bytes: %w", k, MaxContextKeyLen, ErrMalformed)
	}
	return nil
}

func (q Question) check() error {
	if q.QuestionID == "" {
		return fmt.Errorf("question needs a question_id: %w", ErrMalformed)
	}
	seen := make(map[string]bool, len(q.Options))
	for _, o := range q.Options {
		if o.ID == "" {
			return fmt.Errorf("question %q has an option without an id: %w", q.QuestionID, ErrMalformed)
		}
		if seen[o.ID] {
			return fmt.Errorf("question %q has option id %q twice: %w", q.QuestionID, o.ID, ErrMalformed)
		}
		seen[o.ID] = true
	}
	return nil
}
