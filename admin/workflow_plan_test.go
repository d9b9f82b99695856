package admin_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/testkit/jobfill"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestWorkflowPagePlans runs the statements of the dashboard's workflows
// and limits pages against 200,000 live jobs with 10,000 workflows of 10
// steps and three limits (jobfill.Workflows): none reads a table
// sequentially, each uses the index it was written for, and each reads a
// bounded number of pages.
func TestWorkflowPagePlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, c := workflowSchema(t, 200_000, 10_000)
	page := make([]int64, 50)
	for i := range page {
		page[i] = int64(2_500 + i)
	}
	// The index each statement must use, and its page bound.
	want := map[string]struct {
		indexes []string
		pages   int64
	}{
		// 1,000 workflows, two probes each.
		"scan":  {[]string{"docket_workflows_pkey", "docket_jobs_workflow_idx", "docket_jobs_dead_workflow_idx"}, 8_000},
		"steps": {[]string{"docket_jobs_workflow_idx", "docket_jobs_dead_workflow_idx"}, 1_000},
		"graph": {[]string{"docket_jobs_workflow_idx", "docket_jobs_dead_workflow_idx", "docket_workflow_deps_workflow_idx",
			"docket_jobs_pkey", "docket_workflows_parent_job_idx"}, 1_000},
		"edges":     {[]string{"docket_workflow_deps_workflow_idx"}, 100},
		"signals":   {[]string{"docket_workflow_signals_pkey"}, 100},
		"job":       {[]string{"docket_jobs_pkey", "docket_workflows_parent_job_idx"}, 100},
		"cancelled": {[]string{"docket_workflows_pkey"}, 100},
		// Every running job (2,000 here, one in a hundred), by the running
		// index: bounded by the workers' slots, not by the backlog.
		"usage": {[]string{"docket_jobs_running_idx"}, 12_000},
	}
	for name, q := range c.WorkflowPagesSQL(5, 100, time.Now().Add(-3*time.Hour), page) {
		plan := explainAnalyze(t, ctx, pool, "force_custom_plan", q[0].(string), q[1:]...)
		var used []string
		plan.walk(func(n analyzed) {
			if n.IndexName != "" && !slices.Contains(used, n.IndexName) {
				used = append(used, n.IndexName)
			}
			if n.NodeType == "Seq Scan" && strings.HasPrefix(n.RelationName, "docket_workflow") && n.SharedHit+n.SharedRead > 0 {
				t.Errorf("%s: sequential scan of %s", name, n.RelationName)
			}
		})
		t.Logf("%s: %d pages, indexes %v", name, plan.SharedHit+plan.SharedRead, used)
		checkReadPlan(t, name, plan, want[name].pages)
		for _, idx := range want[name].indexes {
			if !slices.Contains(used, idx) {
				t.Errorf("%s: does not use %s; uses %v", name, idx, used)
			}
		}
	}
}

// workflowSchema is a schema of its own for t with jobs live jobs and
// workflows workflows of 10 steps (jobfill.Create, jobfill.Workflows), and
// an admin client on it.
func workflowSchema(t *testing.T, jobs, workflows int) (*pgxpool.Pool, *admin.Client) {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t)
	if _, err := pool.Exec(ctx, "DROP SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	if err := jobfill.Create(ctx, pool, schema, jobs); err != nil {
		t.Fatal(err)
	}
	if err := jobfill.Workflows(ctx, pool, schema, workflows); err != nil {
		t.Fatal(err)
	}
	c, err := admin.New(admin.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	return pool, c
}
