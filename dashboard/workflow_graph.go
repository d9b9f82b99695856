package dashboard

import (
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/docketq/docket/admin"
)

// A workflow's graph is drawn on the server as SVG: no script, no library.
// Steps stand in columns by depth (the longest chain of dependencies that
// leads to them), left to right, and by id within a column; each
// dependency is a curve from its parent's right edge to its child's left
// edge. A step's box has the class of its state (wf-ready, wf-dead, …),
// which the stylesheet colours.

// Sizes of the layout, in SVG units (pixels at 100%).
const (
	nodeW, nodeH = 180, 44
	colGap       = 56
	rowGap       = 14
	margin       = 8
)

// graphView is the laid-out graph the template draws.
type graphView struct {
	Width, Height int
	Nodes         []graphNode
	Edges         []graphEdge
}

// graphNode is a step's box.
type graphNode struct {
	X, Y, W, H int
	ID         int64
	Kind       string // cut to fit the box
	State      string // "" for a step found nowhere (shown as "gone")
	Title      string // the tooltip: the whole kind and what it waits for
	Child      int64  // child workflow, 0 if none
}

// graphEdge is a dependency's curve (an SVG path).
type graphEdge struct {
	D         string
	RunAnyway bool
}

// layoutGraph places g's steps by depth. Edges between steps that are not
// both in g are left out; a cycle (which EnqueueWorkflow refuses) cannot
// hang it: a step reached through one keeps depth 0.
func layoutGraph(g admin.WorkflowGraph) graphView {
	shown := map[int64]bool{}
	for _, s := range g.Steps {
		shown[s.ID] = true
	}
	parents := map[int64][]int64{}
	for _, e := range g.Edges {
		if shown[e.Parent] && shown[e.Child] {
			parents[e.Child] = append(parents[e.Child], e.Parent)
		}
	}
	depth := map[int64]int{}
	const visiting = -1
	var depthOf func(id int64) int
	depthOf = func(id int64) int {
		if d, ok := depth[id]; ok {
			return max(d, 0)
		}
		depth[id] = visiting
		d := 0
		for _, p := range parents[id] {
			d = max(d, depthOf(p)+1)
		}
		depth[id] = d
		return d
	}
	cols := [][]admin.WorkflowStep{}
	for _, s := range g.Steps { // by id: the columns come out ordered
		d := depthOf(s.ID)
		for len(cols) <= d {
			cols = append(cols, nil)
		}
		cols[d] = append(cols[d], s)
	}
	var v graphView
	at := map[int64]graphNode{}
	rows := 0
	for c, col := range cols {
		rows = max(rows, len(col))
		for r, s := range col {
			n := graphNode{X: margin + c*(nodeW+colGap), Y: margin + r*(nodeH+rowGap), W: nodeW, H: nodeH,
				ID: s.ID, Kind: cut(s.Kind, 22), State: s.State, Title: stepTitle(s), Child: s.ChildWorkflowID}
			at[s.ID] = n
			v.Nodes = append(v.Nodes, n)
		}
	}
	edges := slices.Clone(g.Edges)
	slices.SortFunc(edges, func(a, b admin.WorkflowEdge) int {
		if a.Parent != b.Parent {
			return int(a.Parent - b.Parent)
		}
		return int(a.Child - b.Child)
	})
	for _, e := range edges {
		p, okP := at[e.Parent]
		ch, okC := at[e.Child]
		if !okP || !okC {
			continue
		}
		x1, y1 := p.X+p.W, p.Y+p.H/2
		x2, y2 := ch.X-4, ch.Y+ch.H/2 // short of the box: room for the arrow
		mid := (x1 + x2) / 2
		v.Edges = append(v.Edges, graphEdge{D: fmt.Sprintf("M%d %d C%d %d %d %d %d %d", x1, y1, mid, y1, mid, y2, x2, y2), RunAnyway: e.RunAnyway})
	}
	v.Width = 2*margin + len(cols)*nodeW + max(len(cols)-1, 0)*colGap
	v.Height = 2*margin + rows*nodeH + max(rows-1, 0)*rowGap
	return v
}

// stepTitle says in a line what a step is and what it waits for.
func stepTitle(s admin.WorkflowStep) string {
	t := "job " + strconv.FormatInt(s.ID, 10) + " · " + s.Kind + " · " + stateName(s.State)
	if s.Reason != "" {
		t += " (" + s.Reason + ")"
	}
	if s.WaitFor != "" {
		t += " · signal " + s.WaitFor
		if s.Signalled {
			t += " received"
		}
	}
	if s.ChildWorkflowID != 0 {
		t += " · child workflow " + strconv.FormatInt(s.ChildWorkflowID, 10)
	}
	return t
}

// stateName is how a step's state reads: "gone" for one found nowhere.
func stateName(s string) string {
	if s == "" {
		return "gone"
	}
	return s
}

// cut shortens s to n characters, with "…" when cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
