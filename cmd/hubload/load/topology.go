package load

import (
	"crypto/rand"
	"strconv"
	"strings"

	"github.com/hubd/hubd/agentsdk"
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

// graph is the round-robin workflow graph of a session of participants
// (the first speaks first), capped at maxTurns turns when maxTurns > 0:
// every turn hands to the next participant, and the default target is
// terminate "after_work".
func graph(participants []string, maxTurns int) *agentsdk.Graph {
	if maxTurns == 0 {
		// No cap asked for: an explicit one no run reaches, since the hub
		// gives a workflow without one a default of 1000 turns.
		maxTurns = 1 << 30
	}
	return agentsdk.RoundRobin(participants, maxTurns)
}
