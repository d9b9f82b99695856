package dashboard

import (
	"strings"
	"testing"

	"github.com/docketq/docket/admin"
)

// layoutGraph puts a step one column right of its deepest parent, keeps
// the steps of a column in id order, dashes run-anyway dependencies, and
// ends on a cycle.
func TestLayoutGraph(t *testing.T) {
	g := admin.WorkflowGraph{
		Steps: []admin.WorkflowStep{{ID: 1, Kind: "a"}, {ID: 2, Kind: "b"}, {ID: 3, Kind: "c"}, {ID: 4, Kind: "a-kind-name-longer-than-a-box-holds"}, {ID: 5}},
		Edges: []admin.WorkflowEdge{{Parent: 1, Child: 2}, {Parent: 2, Child: 4}, {Parent: 1, Child: 4, RunAnyway: true}, {Parent: 1, Child: 3}, {Parent: 9, Child: 5}},
	}
	v := layoutGraph(g)
	col := map[int64]int{}
	row := map[int64]int{}
	for _, n := range v.Nodes {
		col[n.ID] = (n.X - margin) / (nodeW + colGap)
		row[n.ID] = (n.Y - margin) / (nodeH + rowGap)
	}
	want := map[int64][2]int{1: {0, 0}, 5: {0, 1}, 2: {1, 0}, 3: {1, 1}, 4: {2, 0}}
	for id, cr := range want {
		if col[id] != cr[0] || row[id] != cr[1] {
			t.Errorf("step %d at column %d row %d, want %v", id, col[id], row[id], cr)
		}
	}
	if len(v.Edges) != 4 {
		t.Errorf("%d edges, want 4 (the one from a step not shown left out)", len(v.Edges))
	}
	anyway := 0
	for _, e := range v.Edges {
		if e.RunAnyway {
			anyway++
		}
	}
	if anyway != 1 {
		t.Errorf("%d run-anyway edges, want 1", anyway)
	}
	if v.Width != 2*margin+3*nodeW+2*colGap || v.Height != 2*margin+2*nodeH+rowGap {
		t.Errorf("size %dx%d", v.Width, v.Height)
	}
	for _, n := range v.Nodes {
		if n.ID == 4 && (len([]rune(n.Kind)) != 22 || !strings.HasSuffix(n.Kind, "…")) {
			t.Errorf("long kind shown as %q", n.Kind)
		}
	}

	// A cycle (EnqueueWorkflow refuses them) is drawn, not followed for ever.
	cyc := layoutGraph(admin.WorkflowGraph{Steps: []admin.WorkflowStep{{ID: 1}, {ID: 2}},
		Edges: []admin.WorkflowEdge{{Parent: 1, Child: 2}, {Parent: 2, Child: 1}}})
	if len(cyc.Nodes) != 2 || len(cyc.Edges) != 2 {
		t.Errorf("cycle: %+v", cyc)
	}
}
