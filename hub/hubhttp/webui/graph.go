package webui

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"slices"
	"strings"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

// The drawing's size and its nodes' boxes.
const (
	svgWidth, svgHeight = 640, 420
	nodeW, nodeH        = 116, 34
	labelMax            = 30 // runes of an edge's label; its title has all
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
func graphOf(info *hubpb.SessionInfo) (nodes []string, edges []edge, err error) {
	meta := info.GetMeta()
	nodes = session.Names(meta)
	gv := meta.GetKnobs()["graph"]
	if gv == nil {
		return nodes, nil, nil
	}
	data, err := gv.MarshalJSON()
	if err != nil {
		return nodes, nil, err
	}
	g, err := transition.NewRegistry().Decode(data)
	if err != nil {
		return nodes, nil, err
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
	return nodes, edges, nil
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

// RenderGraph draws a session's graph as SVG: its nodes on an ellipse,
// an edge per transition (a curve, a loop for stay), the expected
// speakers' nodes marked "current", the edge of the rule that decided the
// last turn marked "fired", and the end node marked "current" once the
// session has ended. The package doc says how its parts are named.
func RenderGraph(info *hubpb.SessionInfo) []byte {
	nodes, edges, gerr := graphOf(info)
	state := info.GetState()
	ended := state == "CLOSED" || state == "EXPIRED"
	current := map[string]bool{}
	for _, n := range info.GetExpected() {
		current[n] = true
	}
	if ended {
		current = map[string]bool{endNode: true}
	}
	pos := map[string][2]float64{}
	cx, cy := float64(svgWidth)/2, float64(svgHeight)/2+10
	rx, ry := cx-nodeW/2-14, cy-nodeH/2-34
	for i, n := range nodes {
		a := -math.Pi/2 + 2*math.Pi*float64(i)/float64(len(nodes))
		if len(nodes) == 1 {
			a = 0
			rx = 0
		}
		pos[n] = [2]float64{cx + rx*math.Cos(a), cy + ry*math.Sin(a)}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="graph" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="workflow graph">`, svgWidth, svgHeight, svgWidth, svgHeight)
	b.WriteString(`<style>.graph{font:12px system-ui,sans-serif}.graph .node rect{fill:#fff;stroke:#667;stroke-width:1.5}` +
		`.graph .node.current rect{fill:#ffe9a8;stroke:#c77700;stroke-width:3}.graph .node.pseudo rect{fill:#f2f2f5;stroke-dasharray:4 3}` +
		`.graph .edge path{fill:none;stroke:#99a;stroke-width:1.4}.graph .edge text{fill:#556;font-size:10.5px}` +
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
	fmt.Fprintf(&b, `<text class="caption" x="8" y="16">%s</text>`, esc(clip(caption, 110)))
	pair := map[[2]string]int{}
	for _, e := range edges {
		k := pair[[2]string{e.from, e.to}]
		pair[[2]string{e.from, e.to}]++
		drawEdge(&b, e, pos[e.from], pos[e.to], k)
	}
	for _, n := range nodes {
		class := "node"
		if current[n] {
			class += " current"
		}
		if n == anySpeaker || n == endNode || strings.Contains(n, "(") {
			class += " pseudo"
		}
		p := pos[n]
		label := n
		if n == anySpeaker {
			label = "any speaker"
		}
		fmt.Fprintf(&b, `<g class="%s" data-node="%s"><title>%s</title><rect x="%.1f" y="%.1f" width="%d" height="%d" rx="8"/>`+
			`<text x="%.1f" y="%.1f" text-anchor="middle" dominant-baseline="central">%s</text></g>`,
			class, esc(n), esc(n), p[0]-nodeW/2, p[1]-nodeH/2, nodeW, nodeH, p[0], p[1], esc(clip(label, 16)))
	}
	b.WriteString(`</svg>`)
	return b.Bytes()
}

// drawEdge draws e from a to b, the k-th edge between them, as a curve
// bent to one side (so the way back bends to the other), or a loop above
// the node when it leads back to its source.
func drawEdge(b *bytes.Buffer, e edge, a, c [2]float64, k int) {
	class, marker := "edge", "arrow"
	if e.fired {
		class, marker = "edge fired", "arrow-fired"
	}
	fmt.Fprintf(b, `<g class="%s" data-edge="%s"><title>%s</title>`, class, esc(e.key), esc(e.key+": "+e.from+" → "+e.to+" "+e.label))
	var lx, ly float64
	if e.from == e.to {
		h := 30 + 14*float64(k)
		x0, y0 := a[0]-20, a[1]-nodeH/2
		x1 := a[0] + 20
		fmt.Fprintf(b, `<path d="M%.1f,%.1f C%.1f,%.1f %.1f,%.1f %.1f,%.1f" marker-end="url(#%s)"/>`,
			x0, y0, x0-18, y0-h, x1+18, y0-h, x1, y0, marker)
		lx, ly = a[0], y0-h*0.75-3
	} else {
		dx, dy := c[0]-a[0], c[1]-a[1]
		d := math.Hypot(dx, dy)
		nx, ny := -dy/d, dx/d
		bend := 22 + 20*float64(k)
		mx, my := (a[0]+c[0])/2+nx*bend, (a[1]+c[1])/2+ny*bend
		sx, sy := boxExit(a, mx, my)
		ex, ey := boxExit(c, mx, my)
		fmt.Fprintf(b, `<path d="M%.1f,%.1f Q%.1f,%.1f %.1f,%.1f" marker-end="url(#%s)"/>`, sx, sy, mx, my, ex, ey, marker)
		lx, ly = 0.25*sx+0.5*mx+0.25*ex, 0.25*sy+0.5*my+0.25*ey
	}
	label := e.key
	if e.label != "" {
		label = e.key + " " + e.label
	}
	label = strings.TrimPrefix(label, "transitions")
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text></g>`, lx, ly, esc(clip(label, labelMax)))
}

// boxExit is where the line from the center of a node's box toward (x, y)
// leaves the box.
func boxExit(c [2]float64, x, y float64) (float64, float64) {
	dx, dy := x-c[0], y-c[1]
	t := math.Inf(1)
	if dx != 0 {
		t = math.Min(t, (nodeW/2+2)/math.Abs(dx))
	}
	if dy != 0 {
		t = math.Min(t, (nodeH/2+2)/math.Abs(dy))
	}
	if math.IsInf(t, 1) || t > 1 {
		t = 1
	}
	return c[0] + dx*t, c[1] + dy*t
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
