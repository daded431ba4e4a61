package transition

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hubd/hubd/session"
)

func builtinConditions() map[string]ConditionFactory {
	return map[string]ConditionFactory{
		"always": func(*Args) (Condition, error) { return Always{}, nil },
		"from_speaker": func(a *Args) (Condition, error) {
			return FromSpeaker{Agent: a.String("agent_id", true)}, nil
		},
		"tool_called": func(a *Args) (Condition, error) {
			return ToolCalled{Tool: a.String("tool_name", true)}, nil
		},
		"context_equals": func(a *Args) (Condition, error) {
			return ContextEquals{Key: a.String("key", true), Value: a.Value("value")}, nil
		},
		"all_of": func(a *Args) (Condition, error) { return AllOf{Conditions: a.Conditions("conditions")}, nil },
		"any_of": func(a *Args) (Condition, error) { return AnyOf{Conditions: a.Conditions("conditions")}, nil },
		"not":    func(a *Args) (Condition, error) { return Not{Condition: a.Condition("condition")}, nil },
		"context_in": func(a *Args) (Condition, error) {
			return ContextIn{Key: a.String("key", true), Values: a.Values("values")}, nil
		},
		"context_compare": func(a *Args) (Condition, error) {
			c := ContextCompare{Key: a.String("key", true), Op: a.String("op", true), Value: a.Number("value", true)}
			switch c.Op {
			case "lt", "le", "gt", "ge", "eq", "ne", "":
			default:
				return nil, a.Errorf("op %q is not one of lt, le, gt, ge, eq, ne", c.Op)
			}
			return c, nil
		},
		"mentions": func(a *Args) (Condition, error) {
			return Mentions{Agent: a.String("agent_id", true)}, nil
		},
		"turn_count_at_least": func(a *Args) (Condition, error) {
			n := a.Int("n", true)
			if n < 1 && a.err == nil {
				return nil, a.Errorf("n must be at least 1, got %d", n)
			}
			return TurnCountAtLeast{N: n}, nil
		},
		"event_type": func(a *Args) (Condition, error) {
			s := a.String("type", true)
			if s == "" {
				return EventTypeIs{}, nil
			}
			t, err := session.ParseEventType(s)
			if err != nil {
				return nil, a.Errorf("type: %v", err)
			}
			return EventTypeIs{Type: t}, nil
		},
	}
}

func builtinTargets() map[string]TargetFactory {
	return map[string]TargetFactory{
		"agent":       func(a *Args) (Target, error) { return AgentTarget{Agent: a.String("agent_id", true)}, nil },
		"round_robin": func(*Args) (Target, error) { return RoundRobinTarget{}, nil },
		"stay":        func(*Args) (Target, error) { return StayTarget{}, nil },
		"revert_to_initiator": func(*Args) (Target, error) {
			return RevertToInitiatorTarget{}, nil
		},
		"terminate": func(a *Args) (Target, error) {
			return TerminateTarget{Reason: a.String("reason", false)}, nil
		},
		"supervisor": func(*Args) (Target, error) { return SupervisorTarget{}, nil },
		"mentioned":  func(*Args) (Target, error) { return MentionedTarget{}, nil },
		"active_agent": func(a *Args) (Target, error) {
			return ActiveAgentTarget{Fallback: a.String("fallback", false)}, nil
		},
	}
}

// Describe returns a node in words: its name and its args, e.g.
// "from_speaker(alice)", "context_equals(key=route, value=\"security\")",
// "all_of(from_speaker(alice), not(context_equals(key=done, value=true)))".
func Describe(n interface {
	Name() string
	Args() map[string]any
}) string {
	return n.Name() + "(" + describeArgs(n.Args()) + ")"
}

func describeArgs(args map[string]any) string {
	keys := sortedKeys(args)
	if len(keys) == 1 {
		switch keys[0] {
		case "agent_id", "tool_name", "reason", "n", "type", "conditions", "condition":
			return describeValue(args[keys[0]])
		}
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + describeValue(args[k])
	}
	return strings.Join(parts, ", ")
}

func describeValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.RawMessage:
		return string(x)
	case []json.RawMessage:
		parts := make([]string, len(x))
		for i, r := range x {
			parts[i] = string(r)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case nodeJSONOut:
		return x.Name + "(" + describeArgs(x.Args) + ")"
	case []nodeJSONOut:
		parts := make([]string, len(x))
		for i, n := range x {
			parts[i] = describeValue(n)
		}
		return strings.Join(parts, ", ")
	}
	return fmt.Sprint(v)
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
