package webui

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
)

// svgInfo returns a workflow session's info with graph g (JSON).
func svgInfo(t *testing.T, g string, mod func(*hubpb.SessionInfo)) *hubpb.SessionInfo {
	t.Helper()
	info := &hubpb.SessionInfo{State: "OPEN", Meta: &hubpb.SessionMeta{Type: "workflow@1",
		Participants: []*hubpb.Participant{{Name: "alice"}, {Name: "bob"}, {Name: "carol"}}}}
	if g != "" {
		var v structpb.Value
		if err := v.UnmarshalJSON([]byte(g)); err != nil {
			t.Fatal(err)
		}
		info.Meta.Knobs = map[string]*structpb.Value{"graph": &v}
	}
	if mod != nil {
		mod(info)
	}
	return info
}

var (
	nodeRE = regexp.MustCompile(`<g class="([^"]*)" data-node="([^"]*)">`)
	edgeRE = regexp.MustCompile(`<g class="([^"]*)" data-edge="([^"]*)"><title>([^<]*)</title>`)
)

// marked returns the nodes or edges whose class has mark.
func marked(re *regexp.Regexp, svg, mark string) []string {
	var out []string
	for _, m := range re.FindAllStringSubmatch(svg, -1) {
		if slices.Contains(strings.Fields(m[1]), mark) {
			out = append(out, m[2])
		}
	}
	return out
}

const chain = `{"version":1,"initial_speaker":"alice","transitions":[
 {"when":{"name":"from_speaker","args":{"agent_id":"alice"}},"then":{"name":"agent","args":{"agent_id":"bob"}}},
 {"when":{"name":"all_of","args":{"conditions":[{"name":"from_speaker","args":{"agent_id":"bob"}},{"name":"context_equals","args":{"key":"done","value":true}}]}},"then":{"name":"terminate","args":{"reason":"done"}}},
 {"when":{"name":"any_of","args":{"conditions":[{"name":"from_speaker","args":{"agent_id":"bob"}},{"name":"from_speaker","args":{"agent_id":"carol"}}]}},"then":{"name":"round_robin"}},
 {"when":{"name":"turn_count_at_least","args":{"n":9}},"then":{"name":"stay"}}],
 "default_target":{"name":"agent","args":{"agent_id":"alice"}}}`

// TestRenderGraph: the nodes, edges and marks of a drawn graph.
func TestRenderGraph(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		info                   *hubpb.SessionInfo
		nodes, edges           []string // every node; every edge as key:from>to
		current, fired, inText []string
	}{
		{
			name:    "fresh",
			info:    svgInfo(t, chain, func(i *hubpb.SessionInfo) { i.Expected = []string{"alice"} }),
			nodes:   []string{"alice", "bob", "carol", "end", "round_robin()", "stay()", "*"},
			edges:   []string{"transitions[0]:alice>bob", "transitions[1]:bob>end", "transitions[2]:bob>round_robin()", "transitions[2]:carol>round_robin()", "transitions[3]:*>stay()", "default_target:*>alice"},
			current: []string{"alice"},
		},
		{
			name: "after a turn",
			info: svgInfo(t, chain, func(i *hubpb.SessionInfo) {
				i.Expected, i.LastRule = []string{"bob"}, "transitions[0] from_speaker(alice) → agent(bob)"
			}),
			current: []string{"bob"}, fired: []string{"transitions[0]"},
		},
		{
			name: "by default",
			info: svgInfo(t, chain, func(i *hubpb.SessionInfo) {
				i.Expected, i.LastRule = []string{"alice"}, "default_target agent(alice)"
			}),
			current: []string{"alice"}, fired: []string{"default_target"},
		},
		{
			name: "ended",
			info: svgInfo(t, chain, func(i *hubpb.SessionInfo) {
				i.State, i.LastRule = "CLOSED", "transitions[1] all_of(from_speaker(bob), context_equals(key=done, value=true)) → terminate(done)"
			}),
			current: []string{"end"}, fired: []string{"transitions[1]"},
		},
		{
			name: "a handoff fires no edge",
			info: svgInfo(t, chain, func(i *hubpb.SessionInfo) {
				i.Expected, i.LastRule = []string{"carol"}, "handoff → carol"
			}),
			current: []string{"carol"}, inText: []string{"last rule: handoff → carol"},
		},
		{
			name:    "no graph",
			info:    svgInfo(t, "", func(i *hubpb.SessionInfo) { i.Meta.Type, i.Expected = "conversation@1", []string{"bob"} }),
			nodes:   []string{"alice", "bob", "carol"},
			edges:   []string{},
			current: []string{"bob"}, inText: []string{"no graph"},
		},
		{
			name:    "names are escaped",
			info:    svgInfo(t, "", func(i *hubpb.SessionInfo) { i.Meta.Participants[0].Name = `<x y="1">&` }),
			inText:  []string{`data-node="&lt;x y=&#34;1&#34;&gt;&amp;"`},
			current: []string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svg := string(RenderGraph(tc.info))
			if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
				t.Fatalf("not well-formed XML: %v\n%s", err, svg)
			}
			if tc.nodes != nil {
				var got []string
				for _, m := range nodeRE.FindAllStringSubmatch(svg, -1) {
					got = append(got, m[2])
				}
				if !slices.Equal(got, tc.nodes) {
					t.Errorf("nodes %q, want %q", got, tc.nodes)
				}
			}
			if tc.edges != nil {
				got := []string{}
				for _, m := range edgeRE.FindAllStringSubmatch(svg, -1) {
					from, to, _ := strings.Cut(strings.TrimPrefix(m[3], m[2]+": "), " → ")
					to, _, _ = strings.Cut(to, " ")
					got = append(got, m[2]+":"+from+">"+to)
				}
				if !slices.Equal(got, tc.edges) {
					t.Errorf("edges %q, want %q", got, tc.edges)
				}
			}
			if got := marked(nodeRE, svg, "current"); tc.current != nil && !slices.Equal(got, tc.current) {
				t.Errorf("current %q, want %q", got, tc.current)
			}
			if got := marked(edgeRE, svg, "fired"); !slices.Equal(got, tc.fired) {
				t.Errorf("fired %q, want %q", got, tc.fired)
			}
			for _, s := range tc.inText {
				if !strings.Contains(svg, s) {
					t.Errorf("no %q in\n%s", s, svg)
				}
			}
		})
	}
}

// bigGraph is a workflow graph of n agents a00, a01, ... (JSON) and its
// participants, in one of three shapes: "chain" (each agent hands on to
// the next when a context key says so, or jumps ahead, and the last ends
// it), "star" (a router hands to each agent, each hands back), "dense"
// (each agent may lead to three others, by conditions of every length).
func bigGraph(t *testing.T, shape string, n int) *hubpb.SessionInfo {
	t.Helper()
	name := func(i int) string { return fmt.Sprintf("a%02d", i%n) }
	from := func(i int) string {
		return fmt.Sprintf(`{"name":"from_speaker","args":{"agent_id":%q}}`, name(i))
	}
	and := func(i int, c string) string {
		return fmt.Sprintf(`{"name":"all_of","args":{"conditions":[%s,%s]}}`, from(i), c)
	}
	to := func(i int) string { return fmt.Sprintf(`{"name":"agent","args":{"agent_id":%q}}`, name(i)) }
	var ts []string
	add := func(when, then string) { ts = append(ts, fmt.Sprintf(`{"when":%s,"then":%s}`, when, then)) }
	for i := range n {
		switch shape {
		case "chain":
			add(and(i, fmt.Sprintf(`{"name":"context_equals","args":{"key":"step","value":%d}}`, i)), to(i+1))
			add(from(i), to(i*7+3))
		case "star":
			if i > 0 {
				add(and(0, fmt.Sprintf(`{"name":"mentions","args":{"agent_id":%q}}`, name(i))), to(i))
				add(from(i), to(0))
			}
		case "dense":
			add(from(i), to(i+1))
			add(and(i, `{"name":"turn_count_at_least","args":{"n":3}}`), to(i*5+2))
			add(and(i, fmt.Sprintf(`{"name":"context_in","args":{"key":"k%d","values":["x","y","z"]}}`, i)), to(i*11+7))
		}
	}
	add(from(n-1), `{"name":"terminate","args":{"reason":"done"}}`)
	g := fmt.Sprintf(`{"version":1,"initial_speaker":%q,"transitions":[%s],"default_target":{"name":"stay"}}`, name(0), strings.Join(ts, ","))
	return svgInfo(t, g, func(info *hubpb.SessionInfo) {
		info.Meta.Participants = nil
		for i := range n {
			info.Meta.Participants = append(info.Meta.Participants, &hubpb.Participant{Name: name(i)})
		}
	})
}

// svgDoc is the part of a drawn graph the layout checks read.
type svgDoc struct {
	Width  float64 `xml:"width,attr"`
	Height float64 `xml:"height,attr"`
	Groups []struct {
		Class string `xml:"class,attr"`
		Key   string `xml:"data-edge,attr"`
		Rects []struct {
			X float64 `xml:"x,attr"`
			Y float64 `xml:"y,attr"`
			W float64 `xml:"width,attr"`
			H float64 `xml:"height,attr"`
		} `xml:"rect"`
		Texts []struct {
			X      float64 `xml:"x,attr"`
			Y      float64 `xml:"y,attr"`
			Anchor string  `xml:"text-anchor,attr"`
			Length float64 `xml:"textLength,attr"`
			Text   string  `xml:",chardata"`
		} `xml:"text"`
	} `xml:"g"`
}

// drawnBoxes reads a drawn graph's edge label boxes (from the text's
// position and textLength, or its runes at labelRuneW each when it has
// none) and node boxes.
func drawnBoxes(t *testing.T, svg []byte) (doc svgDoc, labels, nodes []box, keys []string) {
	t.Helper()
	if err := xml.Unmarshal(svg, &doc); err != nil {
		t.Fatalf("not well-formed XML: %v", err)
	}
	for _, g := range doc.Groups {
		classes := strings.Fields(g.Class)
		switch {
		case slices.Contains(classes, "edge") && len(g.Texts) == 1:
			tx := g.Texts[0]
			w := tx.Length
			if w == 0 {
				w = float64(len([]rune(tx.Text))) * labelRuneW
			}
			x := tx.X
			if tx.Anchor == "middle" {
				x -= w / 2
			}
			labels = append(labels, box{x, tx.Y - baseline*labelH, w, labelH})
			keys = append(keys, g.Key+" "+tx.Text)
		case slices.Contains(classes, "node") && len(g.Rects) == 1:
			r := g.Rects[0]
			nodes = append(nodes, box{r.X, r.Y, r.W, r.H})
		}
	}
	return doc, labels, nodes, keys
}

// TestGraphLayout: however many nodes (up to 50 and past), in a chain, a
// star or a dense graph, no two edge labels overlap, no label overlaps a
// node, no two nodes overlap, everything is inside the drawing, and the
// drawing is the same every time.
func TestGraphLayout(t *testing.T) {
	for _, shape := range []string{"chain", "star", "dense"} {
		for _, n := range []int{2, 3, 5, 8, 10, 12, 20, 35, 50, 64} {
			t.Run(fmt.Sprintf("%s of %d", shape, n), func(t *testing.T) {
				info := bigGraph(t, shape, n)
				svg := RenderGraph(info)
				if again := RenderGraph(info); !bytes.Equal(svg, again) {
					t.Fatal("two drawings of one graph differ")
				}
				doc, labels, nodes, keys := drawnBoxes(t, svg)
				_, edges, _, err := graphOf(info)
				if err != nil || len(labels) != len(edges) || len(nodes) < n {
					t.Fatalf("%d labels for %d edges, %d nodes for %d agents (%v)", len(labels), len(edges), len(nodes), n, err)
				}
				inside := box{0, 0, doc.Width, doc.Height}
				for i, a := range labels {
					for j := i + 1; j < len(labels); j++ {
						if a.overlaps(labels[j]) {
							t.Errorf("labels %q %v and %q %v overlap", keys[i], a, keys[j], labels[j])
						}
					}
					for _, nb := range nodes {
						if a.overlaps(nb) {
							t.Errorf("label %q %v overlaps node %v", keys[i], a, nb)
						}
					}
					if !within(a, inside) {
						t.Errorf("label %q %v is outside the drawing %v", keys[i], a, inside)
					}
				}
				for i, a := range nodes {
					for _, b := range nodes[i+1:] {
						if a.overlaps(b) {
							t.Errorf("nodes %v and %v overlap", a, b)
						}
					}
					if !within(a, inside) {
						t.Errorf("node %v is outside the drawing %v", a, inside)
					}
				}
			})
		}
	}
}

// within reports whether a lies inside b.
func within(a, b box) bool {
	return a.x >= b.x && a.y >= b.y && a.x+a.w <= b.x+b.w && a.y+a.h <= b.y+b.h
}

// TestPackRow: a row's labels keep their order, do not overlap, stay
// within the row, and sit where they want to be when there is room.
func TestPackRow(t *testing.T) {
	for _, tc := range []struct {
		name  string
		row   []placed
		lo    float64
		hi    float64
		wants []float64 // the left edges, when they are known exactly
	}{
		{"alone", []placed{{want: 100, w: 20}}, 0, 640, []float64{90}},
		{"apart", []placed{{want: 100, w: 20}, {want: 300, w: 20}}, 0, 640, []float64{90, 290}},
		{"on one spot", []placed{{want: 100, w: 20}, {want: 100, w: 20}}, 0, 640, []float64{75, 105}},
		{"against the left", []placed{{want: 0, w: 40}, {want: 0, w: 40}}, 12, 628, []float64{12, 62}},
		{"against the right", []placed{{want: 640, w: 40}, {want: 640, w: 40}}, 12, 628, []float64{538, 588}},
		{"a crowd", []placed{{want: 300, w: 100}, {want: 310, w: 100}, {want: 320, w: 100}, {want: 330, w: 100}, {want: 600, w: 100}}, 12, 628, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := packRow(tc.row, tc.lo, tc.hi)
			if tc.wants != nil && !slices.Equal(got, tc.wants) {
				t.Errorf("left edges %v, want %v", got, tc.wants)
			}
			for i, x := range got {
				if x < tc.lo || x+tc.row[i].w > tc.hi {
					t.Errorf("label %d at %v..%v, outside %v..%v", i, x, x+tc.row[i].w, tc.lo, tc.hi)
				}
				if i > 0 && got[i-1]+tc.row[i-1].w+labelGapX > x {
					t.Errorf("labels %d and %d closer than %v: %v", i-1, i, labelGapX, got)
				}
			}
		})
	}
}
