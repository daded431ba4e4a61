package session_test

import (
	"testing"

	"github.com/hubd/hubd/session"
)

// BenchmarkValueJSON measures the canonical JSON of a workflow graph's
// value, as an open computes it for its size check and interning key.
func BenchmarkValueJSON(b *testing.B) {
	v := session.MustValue(map[string]any{"version": 1, "initial_speaker": "s0", "max_turns": 3,
		"transitions": []any{map[string]any{"when": map[string]any{"always": map[string]any{}}, "then": map[string]any{"round_robin": map[string]any{}}}}})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := session.ValueJSON(v); err != nil {
			b.Fatal(err)
		}
	}
}
