package browsertest_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/dashboard"
)

// TestBrowserWorkflow: from the workflows list to a workflow of steps in
// every state, whose graph's nodes each link to their own job and are
// coloured by state; a node's click opens its job, which links back, and
// the step that started a child workflow links to it, which links to its
// parent step. Cancelling the workflow changes nothing until confirmed.
func TestBrowserWorkflow(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tab := browser(t, ctx)
	b := setup(t, dashboard.Config{})
	wf := b.Workflow(t)
	u := b.Srv.URL
	id := strconv.FormatInt(wf.ID, 10)

	do(t, tab, "workflows", chromedp.Navigate(u+"/workflows?state=running"), chromedp.WaitVisible(css(`#workflows`)),
		chromedp.Click(css(`tr[data-id="`+id+`"] a`)), chromedp.WaitVisible(css(`#wf-graph`)))
	shoot(t, tab, "workflow")
	nodes := value(t, tab, "graph nodes", chromedp.Evaluate[map[string]string](`Object.fromEntries(
		[...document.querySelectorAll('#wf-graph a.wf-step')].map(a => [a.getAttribute('href'), a.dataset.state]))`))
	want := map[string]string{"fetch": "completed", "charge": "running", "pack": "ready", "ship": "waiting",
		"approve": "waiting", "invoice": "waiting", "audit": "dead", "report": "dead", "spawn": "waiting"}
	if len(nodes) != len(want) {
		t.Errorf("graph has %d nodes, want %d: %v", len(nodes), len(want), nodes)
	}
	for name, state := range want {
		if got := nodes[fmt.Sprintf("jobs/%d", wf.Jobs[name])]; got != state {
			t.Errorf("node of %s (job %d): state %q, want %q", name, wf.Jobs[name], got, state)
		}
	}
	// Each state has its own colour, from the stylesheet.
	fills := value(t, tab, "fills", chromedp.Evaluate[map[string]string](`Object.fromEntries(
		[...document.querySelectorAll('#wf-graph a.wf-step')].map(a => [a.dataset.state, getComputedStyle(a.querySelector('rect')).fill]))`))
	seen := map[string]string{}
	for state, fill := range fills {
		if other, ok := seen[fill]; ok {
			t.Errorf("states %s and %s share the fill %s", state, other, fill)
		}
		seen[fill] = state
	}
	if len(fills) != 5 {
		t.Errorf("fills by state: %v, want 5 states", fills)
	}

	// A node opens its job, whose page links back to the workflow.
	audit := strconv.FormatInt(wf.Jobs["audit"], 10)
	do(t, tab, "click audit", chromedp.Click(css(`#wf-graph a[data-job="`+audit+`"] rect`)), chromedp.WaitVisible(css(`#job-state`)))
	if loc := value(t, tab, "location", chromedp.Evaluate[string](`location.pathname`)); loc != "/jobs/"+audit {
		t.Errorf("the audit node led to %s", loc)
	}
	if s := value(t, tab, "state", chromedp.Text(css(`#job-state`))); s != "dead" {
		t.Errorf("audit's job page says %q", s)
	}
	do(t, tab, "back to the workflow", chromedp.Click(css(`#job-workflow`)), chromedp.WaitVisible(css(`#wf-graph`)))
	spawn := strconv.FormatInt(wf.Jobs["spawn"], 10)
	do(t, tab, "click spawn", chromedp.Click(css(`#wf-graph a[data-job="`+spawn+`"] rect`)), chromedp.WaitVisible(css(`#job-child-workflow`)),
		chromedp.Click(css(`#job-child-workflow`)), chromedp.WaitVisible(css(`#wf-parent`)))
	if loc := value(t, tab, "location", chromedp.Evaluate[string](`location.pathname`)); loc != fmt.Sprintf("/workflows/%d", wf.Child) {
		t.Errorf("the child link led to %s", loc)
	}
	do(t, tab, "to the parent step", chromedp.Click(css(`#wf-parent a`)), chromedp.WaitVisible(css(`#job-state`)))
	if loc := value(t, tab, "location", chromedp.Evaluate[string](`location.pathname`)); loc != "/jobs/"+spawn {
		t.Errorf("the child's parent link led to %s", loc)
	}

	// Cancel: declined, nothing changes; accepted, the workflow is cancelled.
	status := func() admin.WorkflowState {
		st, err := b.Ops.Workflows().Status(ctx, b.Pool, wf.ID)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	before := status()
	do(t, tab, "cancel", chromedp.Navigate(u+"/workflows/"+id), chromedp.WaitVisible(css(`#wf-cancel`)),
		chromedp.Click(css(`#wf-cancel`)), chromedp.WaitVisible(css(`#confirm-count`)))
	if n := previewed(t, tab); n != 5 {
		t.Errorf("cancel preview: %d, want the 5 steps not running", n)
	}
	do(t, tab, "decline", chromedp.Click(css(`#confirm-no`)), chromedp.WaitVisible(css(`#wf-graph`)))
	if st := status(); st != before {
		t.Fatalf("declined cancel changed the workflow: %+v, was %+v", st, before)
	}
	do(t, tab, "cancel", chromedp.Click(css(`#wf-cancel`)), chromedp.WaitVisible(css(`#confirm-count`)),
		chromedp.Click(css(`#confirm-yes`)), chromedp.WaitVisible(css(`.msg`)))
	if msg := value(t, tab, "message", chromedp.Text(css(`.msg`))); msg != fmt.Sprintf("workflow %d cancelled: 5 jobs moved to the dead letters", wf.ID) {
		t.Errorf("message %q", msg)
	}
	if st := status(); st.State != admin.WorkflowCancelled || st.Remaining != 1 || st.Failed != before.Failed+5 {
		t.Errorf("after the confirmed cancel: %+v", st)
	}
	if s := value(t, tab, "state", chromedp.Text(css(`#wf-state`))); s != "cancelled" {
		t.Errorf("the page says %q after the cancel", s)
	}
}

// TestBrowserLimits: a limit set from the form shows up with its key; its
// removal changes nothing until confirmed.
func TestBrowserLimits(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tab := browser(t, ctx)
	b := setup(t, dashboard.Config{})
	u := b.Srv.URL
	if err := b.Ops.Limits().Set(ctx, b.Pool, admin.Limit{Name: "bounces", Queue: "bounce", MaxRunning: 2}); err != nil {
		t.Fatal(err)
	}
	do(t, tab, "limits", chromedp.Navigate(u+"/limits"), chromedp.WaitVisible(css(`#limits`)))
	if s := value(t, tab, "running", chromedp.Text(css(`tbody[data-limit="bounces"] .running`))); s != "1 of 2" {
		t.Errorf("bounces running: %q, want 1 of 2", s)
	}
	do(t, tab, "set", chromedp.SetValue(css(`#limit-set input[name=name]`), "reports"),
		chromedp.SetValue(css(`#limit-set select[name=scope]`), "queue"),
		chromedp.SetValue(css(`#limit-set input[name=scope_value]`), "reports"),
		chromedp.SetValue(css(`#limit-set input[name=rate]`), "30"),
		chromedp.SetValue(css(`#limit-set input[name=per]`), "1m"),
		chromedp.Click(css(`#limit-set-button`)), chromedp.WaitVisible(css(`tbody[data-limit="reports"]`)))
	shoot(t, tab, "limits")
	list, err := b.Ops.Limits().List(ctx, b.Pool)
	if err != nil || len(list) != 2 || list[1] != (admin.Limit{Name: "reports", Queue: "reports", Rate: 30, Per: time.Minute, Burst: 30}) {
		t.Fatalf("after set: %+v %v", list, err)
	}
	remove := `tbody[data-limit="bounces"] button.remove`
	do(t, tab, "remove", chromedp.Click(css(remove)), chromedp.WaitVisible(css(`#confirm-count`)))
	if n := previewed(t, tab); n != 1 {
		t.Errorf("remove preview: %d", n)
	}
	do(t, tab, "decline", chromedp.Click(css(`#confirm-no`)), chromedp.WaitVisible(css(`#limits`)))
	if list, _ := b.Ops.Limits().List(ctx, b.Pool); len(list) != 2 {
		t.Fatalf("declined remove: %+v", list)
	}
	do(t, tab, "remove", chromedp.Click(css(remove)), chromedp.WaitVisible(css(`#confirm-count`)),
		chromedp.Click(css(`#confirm-yes`)), chromedp.WaitVisible(css(`.msg`)))
	if list, _ := b.Ops.Limits().List(ctx, b.Pool); len(list) != 1 || list[0].Name != "reports" {
		t.Errorf("confirmed remove: %+v", list)
	}
	if n := value(t, tab, "rows", chromedp.Evaluate[int](`document.querySelectorAll('tbody[data-limit="bounces"]').length`)); n != 0 {
		t.Errorf("the removed limit is still listed")
	}
}
