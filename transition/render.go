package transition

import (
	"fmt"
	"strings"
)

// Mermaid renders the graph as a Mermaid flowchart: agents as boxes, an edge
// per transition from the speaker its condition names (or from "any
// speaker") to its target, labelled with its evaluation rank, priority and
// condition; terminate targets as end nodes with their reason; the default
// target and the max_turns cap as edges from "any speaker".
func (g *Graph) Mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	// Node ids are numbered (n1, n2, ...): a name such as "end" would be a
	// Mermaid keyword.
	ids := map[string]string{}
	declare := func(key, shape string) string {
		id, ok := ids[key]
		if !ok {
			id = fmt.Sprintf("n%d", len(ids)+1)
			ids[key] = id
			fmt.Fprintf(&b, "    %s%s\n", id, shape)
		}
		return id
	}
	agent := func(name string) string { return declare(mermaidID("a", name), `["`+mermaidText(name)+`"]`) }
	anyNode := func() string { return declare("*any", `{{"any speaker"}}`) }
	target := func(t Target) string {
		switch x := t.(type) {
		case AgentTarget:
			return agent(x.Agent)
		case TerminateTarget:
			r, _ := x.Resolve(nil)
			return declare(mermaidID("end", r.Reason), `(["end: `+mermaidText(r.Reason)+`"])`)
		}
		return declare(mermaidID("t", Describe(t)), `[/"`+mermaidText(Describe(t))+`"/]`)
	}
	fmt.Fprintf(&b, "    start((start)) --> %s\n", agent(g.InitialSpeaker))
	for rank, i := range g.Order() {
		t := g.Transitions[i]
		from := anyNode
		if s := speakerOf(t.When); s != "" {
			from = func() string { return agent(s) }
		}
		label := fmt.Sprintf("%d. %s", rank+1, Describe(t.When))
		if t.Priority != 0 {
			label = fmt.Sprintf("%d. [p%d] %s", rank+1, t.Priority, Describe(t.When))
		}
		src, dst := from(), target(t.Then)
		fmt.Fprintf(&b, "    %s -->|\"%s\"| %s\n", src, mermaidText(label), dst)
	}
	def := Target(TerminateTarget{Reason: "after_work"})
	if g.DefaultTarget != nil {
		def = g.DefaultTarget
	}
	src, dst := anyNode(), target(def)
	fmt.Fprintf(&b, "    %s -->|\"otherwise\"| %s\n", src, dst)
	if g.MaxTurns > 0 {
		src, dst := anyNode(), target(TerminateTarget{Reason: "max_turns"})
		fmt.Fprintf(&b, "    %s -.->|\"turn %d reached\"| %s\n", src, g.MaxTurns, dst)
	}
	return b.String()
}

// speakerOf returns the agent a condition requires to be the speaker, if it
// names exactly one through from_speaker (alone or in an all_of).
func speakerOf(c Condition) string {
	switch x := c.(type) {
	case FromSpeaker:
		return x.Agent
	case AllOf:
		for _, k := range x.Conditions {
			if s := speakerOf(k); s != "" {
				return s
			}
		}
	}
	return ""
}

func mermaidID(prefix, s string) string { return prefix + ":" + s }

func mermaidText(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;").Replace(s)
}
