package admin_test

import (
	"context"
	"errors"
	"testing"

	"github.com/docketq/docket/admin"
)

// Workflows.Page pages by id, filters by the derived state, stops looking
// after WorkflowScan workflows and says where to go on, and counts steps by
// state. 2,000 workflows (jobfill.Workflows): 1..1,000 running, 1,001..1,500
// failed, the rest succeeded, every 50th cancelled.
func TestWorkflowPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, c := workflowSchema(t, 20_000, 2_000)
	ids := func(p admin.WorkflowPage) []int64 {
		var out []int64
		for _, w := range p.Workflows {
			out = append(out, w.ID)
		}
		return out
	}
	page, err := c.Workflows().Page(ctx, pool, admin.WorkflowFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(page); len(got) != 50 || got[0] != 2000 || got[49] != 1951 || page.Next != 1951 || page.Scanned {
		t.Errorf("first page: %v, next %d, scanned %v", got, page.Next, page.Scanned)
	}
	if s := page.Workflows[0].State; s != admin.WorkflowCancelled {
		t.Errorf("workflow 2000: %s, want cancelled", s)
	}
	if s := page.Workflows[1].State; s != admin.WorkflowSucceeded {
		t.Errorf("workflow 1999: %s, want succeeded", s)
	}

	// No running workflow among the newest 1,000: an empty page that
	// says where to go on.
	page, err = c.Workflows().Page(ctx, pool, admin.WorkflowFilter{State: admin.WorkflowRunning})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Workflows) != 0 || !page.Scanned || page.Next != 1001 {
		t.Fatalf("running, from the newest: %v, next %d, scanned %v", ids(page), page.Next, page.Scanned)
	}
	page, err = c.Workflows().Page(ctx, pool, admin.WorkflowFilter{State: admin.WorkflowRunning, Before: page.Next, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	// 1,000 is cancelled.
	if got := ids(page); len(got) != 3 || got[0] != 999 || got[2] != 997 || page.Next != 997 || page.Scanned {
		t.Fatalf("running, on: %v, next %d, scanned %v", got, page.Next, page.Scanned)
	}
	w := page.Workflows[0]
	// Live jobs 9,981..9,990 of Fill: 9,981 scheduled (i % 20 = 1), 9,990
	// waiting in its serial key's line (i % 10 = 0, a key held before),
	// the rest ready.
	if w.Steps[admin.StateScheduled] != 1 || w.Steps[admin.StateWaiting] != 1 || w.Steps[admin.StateReady] != 8 || w.Remaining != 10 || w.Completed != 0 || w.Capped {
		t.Errorf("workflow 999: %+v", w)
	}
	page, err = c.Workflows().Page(ctx, pool, admin.WorkflowFilter{State: admin.WorkflowFailed, Before: 1501, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	// 1,500 is cancelled; each failed one has one dead job.
	if got := ids(page); len(got) != 2 || got[0] != 1499 || page.Workflows[0].Failed != 1 || page.Workflows[0].Completed != 9 {
		t.Errorf("failed: %v %+v", got, page.Workflows)
	}

	s, err := c.Workflows().Summary(ctx, pool, 999)
	if err != nil || s.ID != 999 || s.State != admin.WorkflowRunning {
		t.Errorf("summary of 999: %+v %v", s, err)
	}
	for _, id := range []int64{0, 2001, 1<<63 - 1} {
		if _, err := c.Workflows().Summary(ctx, pool, id); !errors.Is(err, admin.ErrWorkflowNotFound) {
			t.Errorf("summary of %d: %v, want ErrWorkflowNotFound", id, err)
		}
	}
	for _, f := range []admin.WorkflowFilter{{State: "done"}, {Before: -1}, {Limit: 201}, {Limit: -1}} {
		if _, err := c.Workflows().Page(ctx, pool, f); err == nil {
			t.Errorf("Page(%+v): no error", f)
		}
	}
}

func TestLimitDescribe(t *testing.T) {
	for l, want := range map[admin.Limit]string{
		{Kind: "mail", PerTenant: true, MaxRunning: 5, Rate: 100, Per: 60e9, Burst: 10}: "kind mail, per tenant: 5 running at once, 100 started per 1m0s (burst 10)",
		{Queue: "bulk", Rate: 3, Per: 1e9, Burst: 3}:                                    "queue bulk: 3 started per 1s",
		{MaxRunning: 2}: "every job: 2 running at once",
	} {
		if got := l.Describe(); got != want {
			t.Errorf("%+v: %q, want %q", l, got, want)
		}
	}
}
