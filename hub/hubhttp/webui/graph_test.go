package webui

import (
	"encoding/xml"
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
