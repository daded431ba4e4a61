package webui

import (
	"bytes"
	"fmt"
	"html"
	"slices"
	"strings"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

// The drawing's width and its nodes' boxes.
const (
	svgWidth     = 640
	nodeW, nodeH = 116, 34
	labelMax     = 30 // runes of an edge's label; its title has all
)

// The nodes a graph draws besides its participants.
const (
	anySpeaker = "*"   // a transition that does not depend on the speaker
	endNode    = "end" // terminate targets
)

// edge is one transition as drawn.
type edge struct {
	key      string // "transitions[N]" or "default_target": what a rule names
	from, to string
	label    string
	fired    bool
}

// graphOf returns the nodes and edges of a session's graph: its
// participants, then the other nodes its transitions need, and an edge
// per transition and source speaker. A session with no graph (not a
// workflow, or one that does not decode) has its participants only.
func graphOf(info *hubpb.SessionInfo) (nodes []string, edges []edge, initial string, err error) {
	meta := info.GetMeta()
	nodes = session.Names(meta)
	gv := meta.GetKnobs()["graph"]
	if gv == nil {
		return nodes, nil, "", nil
	}
	data, err := gv.MarshalJSON()
	if err != nil {
		return nodes, nil, "", err
	}
	g, err := transition.NewRegistry().Decode(data)
	if err != nil {
		return nodes, nil, "", err
	}
	add := func(n string) {
		if !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	last := info.GetLastRule()
	fired := func(key string) bool { return last == key || strings.HasPrefix(last, key+" ") }
	for i, t := range g.Transitions {
		key := fmt.Sprintf("transitions[%d]", i)
		to := targetNode(t.Then, info)
		add(to)
		for _, from := range speakers(t.When) {
			add(from)
			edges = append(edges, edge{key: key, from: from, to: to, label: conditionLabel(t.When), fired: fired(key)})
		}
	}
	def := endNode
	if g.DefaultTarget != nil {
		def = targetNode(g.DefaultTarget, info)
	}
	add(anySpeaker)
	add(def)
	edges = append(edges, edge{key: "default_target", from: anySpeaker, to: def, label: "otherwise", fired: fired("default_target")})
	return nodes, edges, g.InitialSpeaker, nil
}

// speakers returns who a condition lets a transition fire after: the
// agents of its from_speaker conditions, or anySpeaker.
func speakers(c transition.Condition) []string {
	switch c := c.(type) {
	case transition.FromSpeaker:
		return []string{c.Agent}
	case transition.AllOf:
		for _, x := range c.Conditions {
			if s := speakers(x); !slices.Contains(s, anySpeaker) {
				return s
			}
		}
	case transition.AnyOf:
		var out []string
		for _, x := range c.Conditions {
			for _, s := range speakers(x) {
				if s == anySpeaker {
					return []string{anySpeaker}
				}
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return []string{anySpeaker}
}

// conditionLabel is a condition in words, without the from_speaker part
// the edge's source already says.
func conditionLabel(c transition.Condition) string {
	switch c := c.(type) {
	case transition.FromSpeaker:
		return ""
	case transition.AllOf:
		var parts []string
		for _, x := range c.Conditions {
			if _, ok := x.(transition.FromSpeaker); !ok {
				parts = append(parts, transition.Describe(x))
			}
		}
		return strings.Join(parts, " ∧ ")
	}
	return transition.Describe(c)
}

// targetNode is the node a target leads to: the agent it names, the
// session's supervisor, the end, or the target in words.
func targetNode(t transition.Target, info *hubpb.SessionInfo) string {
	switch t := t.(type) {
	case transition.AgentTarget:
		return t.Agent
	case transition.TerminateTarget:
		return endNode
	case transition.SupervisorTarget:
		if s := info.GetSupervisor(); s != "" {
			return s
		}
	}
	return transition.Describe(t)
}

// RenderGraph draws a session's graph as SVG (layoutGraph places its
// parts): an edge per transition, through its label, the expected
// speakers' nodes marked "current", the edge of the rule that decided the
// last turn marked "fired", and the end node marked "current" once the
// session has ended. The package doc says how its parts are named.
func RenderGraph(info *hubpb.SessionInfo) []byte {
	nodes, edges, initial, gerr := graphOf(info)
	state := info.GetState()
	current := map[string]bool{}
	for _, n := range info.GetExpected() {
		current[n] = true
	}
	if state == "CLOSED" || state == "EXPIRED" {
		current = map[string]bool{endNode: true}
	}
	lay := layoutGraph(nodes, edges, initial)
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="graph" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="workflow graph">`,
		lay.width, lay.height, lay.width, lay.height)
	b.WriteString(`<style>.graph{font:12px system-ui,sans-serif}.graph .node rect{fill:#fff;stroke:#667;stroke-width:1.5}` +
		`.graph .node.current rect{fill:#ffe9a8;stroke:#c77700;stroke-width:3}.graph .node.pseudo rect{fill:#f2f2f5;stroke-dasharray:4 3}` +
		`.graph .edge path{fill:none;stroke:#99a;stroke-width:1.4}` +
		`.graph .edge text{fill:#556;font-family:ui-monospace,"DejaVu Sans Mono","Liberation Mono",Menlo,Consolas,monospace;` +
		`paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}` +
		`.graph .edge.fired path{stroke:#d2461e;stroke-width:3}.graph .edge.fired text{fill:#d2461e;font-weight:600}` +
		`.graph .caption{fill:#445;font-size:11.5px}</style>`)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="#99a"/></marker>` +
		`<marker id="arrow-fired" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="#d2461e"/></marker></defs>`)
	caption := "type " + info.GetMeta().GetType() + " · " + state
	switch {
	case gerr != nil:
		caption += " · the graph does not decode: " + gerr.Error()
	case len(edges) == 0:
		caption += " · no graph: turns follow the session type"
	}
	if r := info.GetLastRule(); r != "" {
		caption += " · last rule: " + r
	}
	fmt.Fprintf(&b, `<text class="caption" x="8" y="16">%s</text>`, esc(clip(caption, 95)))
	for i, e := range edges {
		drawEdge(&b, e, lay, i)
	}
	for i, n := range nodes {
		drawNode(&b, n, lay.node[i], current[n])
	}
	b.WriteString(`</svg>`)
	return b.Bytes()
}

// drawNode draws node n centered at p.
func drawNode(b *bytes.Buffer, n string, p point, current bool) {
	class := "node"
	if current {
		class += " current"
	}
	if n == anySpeaker || n == endNode || strings.Contains(n, "(") {
		class += " pseudo"
	}
	label := n
	if n == anySpeaker {
		label = "any speaker"
	}
	fmt.Fprintf(b, `<g class="%s" data-node="%s"><title>%s</title><rect x="%.1f" y="%.1f" width="%d" height="%d" rx="8"/>`+
		`<text x="%.1f" y="%.1f" text-anchor="middle" dominant-baseline="central">%s</text></g>`,
		class, esc(n), esc(n), p.x-nodeW/2, p.y-nodeH/2, nodeW, nodeH, p.x, p.y, esc(clip(label, 16)))
}

// drawEdge draws edge i, e, along its path, and its label in its box,
// the text stretched to the width the layout gave it.
func drawEdge(b *bytes.Buffer, e edge, lay layout, i int) {
	class, marker := "edge", "arrow"
	if e.fired {
		class, marker = "edge fired", "arrow-fired"
	}
	fmt.Fprintf(b, `<g class="%s" data-edge="%s"><title>%s</title>`, class, esc(e.key), esc(e.key+": "+e.from+" → "+e.to+" "+e.label))
	fmt.Fprintf(b, `<path d="%s" marker-end="url(#%s)"/>`, lay.path[i], marker)
	l := lay.label[i]
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="%g" textLength="%.1f" lengthAdjust="spacingAndGlyphs">%s</text></g>`,
		l.x+labelPadX, l.y+baseline*l.h, labelFont, l.w-2*labelPadX, esc(lay.text[i]))
}

// edgeText is the label drawn on an edge: its transition's index (or
// default_target) and its condition, clipped to labelMax runes (its
// title has it all).
func edgeText(e edge) string {
	label := e.key
	if e.label != "" {
		label = e.key + " " + e.label
	}
	return clip(strings.TrimPrefix(label, "transitions"), labelMax)
}

// esc escapes text for SVG (XML) content and attributes.
func esc(s string) string { return html.EscapeString(s) }

// clip shortens s to n runes with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
