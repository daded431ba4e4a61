package main

import (
	"crypto/rand"
	"encoding/json"
	"strconv"
	"strings"
)

// assign spreads agents over sessions, each session with at least two
// distinct agents, and returns each session's agent indexes in speaking
// order. With agents >= 2*sessions, agent i joins session i mod sessions
// (every agent in exactly one session); otherwise session j has agents 2j
// and 2j+1 modulo agents, so agents are reused across sessions.
func assign(agents, sessions int) [][]int {
	out := make([][]int, sessions)
	if agents >= 2*sessions {
		for i := range agents {
			out[i%sessions] = append(out[i%sessions], i)
		}
		return out
	}
	for j := range out {
		out[j] = []int{(2 * j) % agents, (2*j + 1) % agents}
	}
	return out
}

// newRunID returns a short random id that keeps the agent names of one
// run apart from every other run's.
func newRunID() string {
	return strings.ToLower(rand.Text()[:8])
}

// agentName is the name of agent i of run id in kind ("a" for load, "i"
// for idle).
func agentName(run, kind string, i int) string {
	return "hl-" + run + "-" + kind + strconv.Itoa(i)
}

// graphJSON is the round-robin workflow graph of a session whose first
// speaker is first, capped at maxTurns turns when maxTurns > 0.
func graphJSON(first string, maxTurns int) string {
	type fn struct {
		Name string         `json:"name"`
		Args map[string]any `json:"args"`
	}
	type rule struct {
		When     fn  `json:"when"`
		Then     fn  `json:"then"`
		Priority int `json:"priority"`
	}
	g := struct {
		Version        int    `json:"version"`
		InitialSpeaker string `json:"initial_speaker"`
		Transitions    []rule `json:"transitions"`
		DefaultTarget  fn     `json:"default_target"`
		MaxTurns       *int   `json:"max_turns"`
	}{
		Version:        1,
		InitialSpeaker: first,
		Transitions:    []rule{{When: fn{"always", map[string]any{}}, Then: fn{"round_robin", map[string]any{}}}},
		DefaultTarget:  fn{"terminate", map[string]any{"reason": "after_work"}},
	}
	if maxTurns > 0 {
		g.MaxTurns = &maxTurns
	}
	b, err := json.Marshal(g)
	if err != nil {
		panic(err) // plain structs of strings and ints always marshal
	}
	return string(b)
}
