package webui

import (
	"cmp"
	"fmt"
	"slices"
	"unicode"
)

// The layout's measures (SVG user units). Edge labels are set in a
// monospace font stretched to labelRuneW per rune (textLength), so their
// width is known here whatever font the browser picks; labelH is taller
// than the text box of the usual fonts at labelFont (1.15 to 1.35 em).
const (
	margin     = 12.0 // around the drawing
	captionH   = 28.0 // the caption's band at the top
	gapX       = 24.0 // between two nodes of a line
	labelFont  = 10.5 // an edge label's font size
	labelRuneW = 6.3  // an edge label's advance per rune (0.6 em)
	labelH     = 15.0 // an edge label's box height
	labelPadX  = 2.0  // an edge label's box, beyond its text, each side
	labelGapX  = 10.0 // between two labels of a row
	labelGapY  = 6.0  // between two rows of labels
	gapPad     = 22.0 // between a line of nodes and the labels under it, and the labels and the next line
	gapMin     = 40.0 // the height of a gap without labels
	maxLayered = 8    // up to this many ranks, each rank starts a line
	anchorStep = 12.0 // between two edges' ends on a node's side
	baseline   = 0.74 // where in its box a label's baseline sits
	wideRune   = 2    // the width, in runes, of an East Asian wide rune
	sideTop    = 0    // an edge's end on a node's top side
	sideBottom = 1    // or on its bottom side
	spreadMax  = 0.25 // how far from a label's center its two ends may sit, as a share of its width
)

// box is a rectangle: its top-left corner and its size.
type box struct{ x, y, w, h float64 }

// overlaps reports whether two boxes share more than an edge.
func (b box) overlaps(o box) bool {
	return b.x < o.x+o.w && o.x < b.x+b.w && b.y < o.y+o.h && o.y < b.y+b.h
}

// point is a position.
type point struct{ x, y float64 }

// layout is where a graph's parts are drawn: each node's center, each
// edge's label box and path, and the drawing's size.
type layout struct {
	width, height float64
	node          []point  // by node index
	label         []box    // by edge index
	text          []string // by edge index: the label's text
	path          []string // by edge index: the SVG path
}

// placed is an edge's label, once given a gap and a place in it.
type placed struct {
	edge int
	want float64 // the x its center would have, between its ends
	w    float64
	row  int
}

// layoutGraph places a graph's nodes in lines and its edge labels in the
// gaps between them, so that no two labels, and no label and node,
// overlap, however many nodes there are: the nodes are ranked by their
// distance from the initial speaker (see rankNodes);
// up to maxLayered ranks each rank starts a line (a layered drawing, top
// to bottom), past it the ranks flow on in lines; a line holds as many
// nodes as fit the width. Each edge's label sits in the gap under its
// source's line (over it, for an edge that goes up), in rows packed from
// left to right near the middle of its ends, and the edge is drawn from
// its source to the label and on to its target. It depends on nothing but
// its input, in order.
func layoutGraph(nodes []string, edges []edge, initial string) layout {
	idx := make(map[string]int, len(nodes))
	for i, n := range nodes {
		idx[n] = i
	}
	lines := nodeLines(nodes, edges, idx, initial)
	lay := layout{width: svgWidth, node: make([]point, len(nodes)), label: make([]box, len(edges)),
		text: make([]string, len(edges)), path: make([]string, len(edges))}
	lineOf := make([]int, len(nodes))
	for l, line := range lines {
		for _, n := range line {
			lineOf[n] = l
		}
	}
	gaps := make([][]placed, len(lines))
	for i, e := range edges {
		lay.text[i] = edgeText(e)
		a, b := lineOf[idx[e.from]], lineOf[idx[e.to]]
		g := a
		if b < a {
			g = a - 1
		}
		gaps[g] = append(gaps[g], placed{edge: i, w: labelWidth(lay.text[i]) + 2*labelPadX})
	}
	for _, line := range lines {
		placeLine(&lay, line)
	}
	y := captionH
	for l, line := range lines {
		for _, n := range line {
			lay.node[n].y = y + nodeH/2
		}
		y += nodeH
		for k := range gaps[l] {
			e := edges[gaps[l][k].edge]
			gaps[l][k].want = (lay.node[idx[e.from]].x + lay.node[idx[e.to]].x) / 2
		}
		if l < len(lines)-1 || len(gaps[l]) > 0 {
			y = placeGap(&lay, gaps[l], y)
		}
	}
	lay.height = y + margin
	routeEdges(&lay, edges, idx)
	return lay
}

// nodeLines ranks the nodes and cuts the ranks into lines of node
// indexes.
func nodeLines(nodes []string, edges []edge, idx map[string]int, initial string) [][]int {
	rank := rankNodes(nodes, edges, idx, initial)
	top := 0
	for _, r := range rank {
		top = max(top, r)
	}
	byRank := make([][]int, top+1)
	for i, r := range rank {
		byRank[r] = append(byRank[r], i)
	}
	orderRanks(byRank, edges, idx)
	room := float64(svgWidth) - 2*margin + gapX
	perLine := max(1, int(room/(nodeW+gapX)))
	var lines [][]int
	var cur []int
	for _, ranked := range byRank {
		if len(byRank) <= maxLayered && len(cur) > 0 {
			lines, cur = append(lines, cur), nil
		}
		for _, n := range ranked {
			if len(cur) == perLine {
				lines, cur = append(lines, cur), nil
			}
			cur = append(cur, n)
		}
	}
	if len(cur) > 0 {
		lines = append(lines, cur)
	}
	return lines
}

// rankNodes returns each node's rank: its distance from the initial
// speaker along the edges, then from "any speaker" (rank 0) for the nodes
// only it leads to; nodes neither reaches are ranked from themselves, in
// order; the end is the last.
func rankNodes(nodes []string, edges []edge, idx map[string]int, initial string) []int {
	next := make([][]int, len(nodes))
	for _, e := range edges {
		a, b := idx[e.from], idx[e.to]
		if !slices.Contains(next[a], b) {
			next[a] = append(next[a], b)
		}
	}
	rank := make([]int, len(nodes))
	for i := range rank {
		rank[i] = -1
	}
	bfs := func(root int) {
		rank[root] = 0
		for queue := []int{root}; len(queue) > 0; queue = queue[1:] {
			for _, n := range next[queue[0]] {
				if rank[n] < 0 && nodes[n] != endNode {
					rank[n] = rank[queue[0]] + 1
					queue = append(queue, n)
				}
			}
		}
	}
	roots := []string{initial, anySpeaker}
	for _, r := range roots {
		if i, ok := idx[r]; ok && rank[i] < 0 && r != endNode {
			bfs(i)
		}
	}
	top := 0
	for i := range nodes {
		if rank[i] < 0 && nodes[i] != endNode {
			bfs(i)
		}
		top = max(top, rank[i])
	}
	if i, ok := idx[endNode]; ok {
		rank[i] = top + 1
	}
	return rank
}

// orderRanks orders each rank after the first by where its nodes'
// predecessors in the rank above are (the barycenter heuristic, which
// uncrosses edges), keeping the order of nodes without one.
func orderRanks(byRank [][]int, edges []edge, idx map[string]int) {
	for r := 1; r < len(byRank); r++ {
		above := make(map[int]float64, len(byRank[r-1]))
		for i, n := range byRank[r-1] {
			above[n] = float64(i) / float64(len(byRank[r-1]))
		}
		key := make(map[int]float64, len(byRank[r]))
		for i, n := range byRank[r] {
			sum, count := 0.0, 0
			for _, e := range edges {
				if p, ok := above[idx[e.from]]; ok && idx[e.to] == n {
					sum, count = sum+p, count+1
				}
			}
			key[n] = float64(i) / float64(len(byRank[r]))
			if count > 0 {
				key[n] = sum / float64(count)
			}
		}
		slices.SortStableFunc(byRank[r], func(a, b int) int { return cmp.Compare(key[a], key[b]) })
	}
}

// placeLine centers a line of nodes across the drawing.
func placeLine(lay *layout, line []int) {
	total := float64(len(line))*nodeW + float64(len(line)-1)*gapX
	x := (lay.width-total)/2 + nodeW/2
	for _, n := range line {
		lay.node[n].x = x
		x += nodeW + gapX
	}
}

// placeGap places a gap's labels, which starts at y, and returns where
// the gap ends. The labels, in the order of where they want to be, are
// dealt to as few rows as hold them, each row packed.
func placeGap(lay *layout, labels []placed, y float64) float64 {
	if len(labels) == 0 {
		return y + gapMin
	}
	slices.SortStableFunc(labels, func(a, b placed) int { return cmp.Compare(a.want, b.want) })
	avail := lay.width - 2*margin
	rows := 1
	for !dealt(labels, rows, avail) {
		rows++
	}
	for r := range rows {
		var row []placed
		for _, p := range labels {
			if p.row == r {
				row = append(row, p)
			}
		}
		top := y + gapPad + float64(r)*(labelH+labelGapY)
		for i, x := range packRow(row, margin, lay.width-margin) {
			lay.label[row[i].edge] = box{x, top, row[i].w, labelH}
		}
	}
	return y + gapPad + float64(rows)*(labelH+labelGapY) + gapPad
}

// dealt deals the labels to rows in turn and reports whether each row
// fits in avail.
func dealt(labels []placed, rows int, avail float64) bool {
	used := make([]float64, rows)
	for i := range labels {
		labels[i].row = i % rows
		used[i%rows] += labels[i].w + labelGapX
	}
	for _, u := range used {
		if u-labelGapX > avail {
			return false
		}
	}
	return true
}

// packRow returns the left edge of each label of a row (in the order of
// where they want to be) within [lo, hi], none overlapping another, each
// run of touching labels centered on where its labels want to be.
func packRow(row []placed, lo, hi float64) []float64 {
	type run struct {
		first, last int
		left, w     float64
		want        float64 // the sum of its labels' wanted left edges
	}
	var runs []run
	for i, p := range row {
		r := run{first: i, last: i, w: p.w, want: p.want - p.w/2}
		r.left = r.want
		for {
			r.left = min(max(r.left, lo), hi-r.w)
			if len(runs) == 0 {
				break
			}
			prev := runs[len(runs)-1]
			if prev.left+prev.w+labelGapX <= r.left {
				break
			}
			// Merge: the run's labels keep their offsets from its left
			// edge, which goes where they want it on average.
			offset := prev.w + labelGapX
			n := float64(r.last - prev.first + 1)
			r = run{first: prev.first, last: r.last, w: prev.w + labelGapX + r.w,
				want: prev.want + r.want - offset*float64(r.last-r.first+1)}
			r.left = r.want / n
			runs = runs[:len(runs)-1]
		}
		runs = append(runs, r)
	}
	out := make([]float64, 0, len(row))
	for _, r := range runs {
		x := r.left
		for i := r.first; i <= r.last; i++ {
			out = append(out, x)
			x += row[i].w + labelGapX
		}
	}
	return out
}

// labelWidth is the width of an edge label's text: labelRuneW a rune,
// twice that for an East Asian wide rune.
func labelWidth(s string) float64 {
	n := 0
	for _, r := range s {
		if unicode.In(r, unicode.Han, unicode.Hangul, unicode.Hiragana, unicode.Katakana) {
			n += wideRune
		} else {
			n++
		}
	}
	return float64(n) * labelRuneW
}

// end is an edge's end on a node's side: the node, the side, where the
// edge goes from there, the edge, and which of its ends (0 the source's,
// 1 the target's).
type end struct {
	node, side  int
	toward      float64
	edge, which int
}

// routeEdges draws each edge from its source's side facing its label to
// the label, and from the label to its target's side facing it, the ends
// on a side spread in the order of where they go.
func routeEdges(lay *layout, edges []edge, idx map[string]int) {
	ends := make([]end, 0, 2*len(edges))
	in, out := make([]point, len(edges)), make([]point, len(edges))
	for i, e := range edges {
		l := lay.label[i]
		s, t := lay.node[idx[e.from]], lay.node[idx[e.to]]
		in[i], out[i] = labelEnds(l, s, t)
		cy := l.y + l.h/2
		ends = append(ends, end{node: idx[e.from], side: sideOf(s.y, cy), toward: in[i].x, edge: i},
			end{node: idx[e.to], side: sideOf(t.y, cy), toward: out[i].x, edge: i, which: 1})
	}
	at := spreadEnds(lay, ends, len(edges))
	for i := range edges {
		lay.path[i] = curve(at[i][0], in[i]) + " " + curve(out[i], at[i][1])
	}
}

// labelEnds returns where an edge from s to t meets its label l: it comes
// in on the side facing s and goes out on the side facing t, a little
// apart when that is the same side (in on s's side).
func labelEnds(l box, s, t point) (in, out point) {
	cx, cy := l.x+l.w/2, l.y+l.h/2
	top, bottom := l.y-2, l.y+l.h+2
	in, out = point{cx, top}, point{cx, bottom}
	if s.y > cy {
		in.y = bottom
	}
	if t.y < cy {
		out.y = top
	}
	if in.y == out.y {
		d := spreadMax * l.w
		if s.x > t.x {
			d = -d
		}
		in.x, out.x = cx-d, cx+d
	}
	return in, out
}

// spreadEnds places the edges' ends on their nodes' sides, those on one
// side spread in the order of where they go, and returns them by edge:
// its source's end, its target's.
func spreadEnds(lay *layout, ends []end, edges int) [][2]point {
	slices.SortStableFunc(ends, func(a, b end) int {
		return cmp.Or(cmp.Compare(a.node, b.node), cmp.Compare(a.side, b.side), cmp.Compare(a.toward, b.toward))
	})
	at := make([][2]point, edges)
	for i := 0; i < len(ends); {
		j := i
		for j < len(ends) && ends[j].node == ends[i].node && ends[j].side == ends[i].side {
			j++
		}
		step := min(anchorStep, (nodeW-16)/float64(max(j-i-1, 1)))
		for k := i; k < j; k++ {
			c := lay.node[ends[k].node]
			p := point{c.x + (float64(k-i)-float64(j-i-1)/2)*step, c.y - nodeH/2 - 2}
			if ends[k].side == sideBottom {
				p.y = c.y + nodeH/2 + 2
			}
			at[ends[k].edge][ends[k].which] = p
		}
		i = j
	}
	return at
}

// sideOf is the side of a node at y that faces something at ty.
func sideOf(y, ty float64) int {
	if ty > y {
		return sideBottom
	}
	return sideTop
}

// curve is an SVG path from a to b, leaving and arriving vertically.
func curve(a, b point) string {
	m := (a.y + b.y) / 2
	return fmt.Sprintf("M%.1f,%.1f C%.1f,%.1f %.1f,%.1f %.1f,%.1f", a.x, a.y, a.x, m, b.x, m, b.x, b.y)
}
