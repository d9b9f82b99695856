package admin

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// WorkflowScan bounds how many workflows one WorkflowPage examines to fill
// a page when a state is asked for: a state that matches a few of many
// workflows does not walk the whole table in one request, and the page says
// where to go on (WorkflowPage.Next).
const WorkflowScan = 1000

// WorkflowStepCap bounds how many of a workflow's jobs WorkflowPage counts
// per table (live, dead): a workflow of a million steps costs what one of
// WorkflowStepCap does, and its counts say they stopped (Capped).
const WorkflowStepCap = 10_000

// WorkflowFilter selects a page of workflows, newest first.
type WorkflowFilter struct {
	// State is one of the Workflow* constants; empty means any.
	State string
	// Before is the keyset bound: only workflows with a lower id are
	// listed. Zero means from the newest.
	Before int64
	// Limit is the page size, 1 to 200; zero means 50.
	Limit int
}

// Check reports what is wrong with f, or nil.
func (f WorkflowFilter) Check() error {
	switch f.State {
	case "", WorkflowRunning, WorkflowSucceeded, WorkflowFailed, WorkflowCancelled:
	default:
		return fmt.Errorf("state %q: want %s, %s, %s or %s", f.State, WorkflowRunning, WorkflowSucceeded, WorkflowFailed, WorkflowCancelled)
	}
	if f.Before < 0 {
		return fmt.Errorf("before: want a workflow id")
	}
	if f.Limit < 0 || f.Limit > 200 {
		return fmt.Errorf("limit: want a page size of 1 to 200")
	}
	return nil
}

// WorkflowSummary is a workflow of a WorkflowPage with its jobs counted
// by state.
type WorkflowSummary struct {
	WorkflowState
	// Steps counts the workflow's live jobs by state (docket_jobs' states)
	// and its dead ones under StateDead; Completed is the rest of Jobs
	// (completed, or removed from history and dead letters since).
	Steps     map[string]int
	Completed int
	// Capped says a count stopped at WorkflowStepCap: Steps are lower
	// bounds and Completed is not known (-1).
	Capped bool
}

// WorkflowPage is one page of Workflows.Page.
type WorkflowPage struct {
	Workflows []WorkflowSummary
	// Next is the Before of the next page; zero when the list ended.
	Next int64
	// Scanned says the page stopped after WorkflowScan workflows without
	// filling up: more may match below Next.
	Scanned bool
}

var (
	// sqlWorkflowScan walks docket_workflows by primary key downwards
	// from $1, at most $2 rows, and derives each one's state as the status
	// view does, with a probe of the workflow_id indexes of the jobs and
	// dead-letter tables instead of two counts. The probes are lateral
	// subqueries with a LIMIT: an EXISTS could be planned as a hashed
	// subplan that reads the whole jobs table.
	sqlWorkflowScan = pgsql.SQL(`SELECT w.id, w.name, w.created_at, w.cancelled_at, w.jobs,
	COALESCE(w.parent_job_id, 0), COALESCE(w.parent_workflow_id, 0), w.depth,
	CASE
		WHEN w.cancelled_at IS NOT NULL THEN 'cancelled'
		WHEN l.live THEN 'running'
		WHEN d.dead THEN 'failed'
		ELSE 'succeeded'
	END
FROM {{schema}}.docket_workflows w
LEFT JOIN LATERAL (SELECT true AS live FROM {{schema}}.docket_jobs j WHERE j.workflow_id = w.id LIMIT 1) l ON true
LEFT JOIN LATERAL (SELECT true AS dead FROM {{schema}}.docket_jobs_dead x WHERE x.workflow_id = w.id LIMIT 1) d ON true
WHERE w.id < $1
ORDER BY w.id DESC
LIMIT $2`)

	// sqlWorkflowSteps counts the live jobs of each workflow of $1 by
	// state and its dead ones, each at most $2, through the workflow_id
	// indexes.
	sqlWorkflowSteps = pgsql.SQL(`SELECT w.id, c.state, c.n FROM unnest($1::bigint[]) w(id)
CROSS JOIN LATERAL (
	SELECT x.state::text, count(*) AS n
	FROM (SELECT j.state FROM {{schema}}.docket_jobs j WHERE j.workflow_id = w.id LIMIT $2) x GROUP BY 1
	UNION ALL
	SELECT 'dead', count(*) FROM (SELECT 1 FROM {{schema}}.docket_jobs_dead d WHERE d.workflow_id = w.id LIMIT $2) y
) c`)
)

// Page returns a page of workflows, newest first, of f.State, with their
// jobs counted by state. It examines at most WorkflowScan workflows and
// counts at most WorkflowStepCap jobs of each per table, so that its cost
// does not grow with the tables.
func (h Workflows) Page(ctx context.Context, db DB, f WorkflowFilter) (WorkflowPage, error) {
	c := h.c
	if err := f.Check(); err != nil {
		return WorkflowPage{}, err
	}
	if f.Limit == 0 {
		f.Limit = 50
	}
	before := f.Before
	if before == 0 {
		before = math.MaxInt64
	}
	scan := f.Limit + 1
	if f.State != "" {
		scan = WorkflowScan
	}
	rows, err := db.Query(ctx, sqlWorkflowScan.For(c.schema), before, scan)
	if err != nil {
		return WorkflowPage{}, c.wrapErr(err)
	}
	all, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (WorkflowState, error) {
		var s WorkflowState
		var cancelled *time.Time
		err := row.Scan(&s.ID, &s.Name, &s.CreatedAt, &cancelled, &s.Jobs, &s.ParentJobID, &s.ParentWorkflowID, &s.Depth, &s.State)
		if cancelled != nil {
			s.CancelledAt = *cancelled
		}
		return s, err
	})
	if err != nil {
		return WorkflowPage{}, c.wrapErr(err)
	}
	var page WorkflowPage
	for _, s := range all {
		if f.State != "" && s.State != f.State {
			continue
		}
		if len(page.Workflows) == f.Limit {
			// One more matches: the next page starts after the last shown.
			page.Next = page.Workflows[len(page.Workflows)-1].ID
			break
		}
		page.Workflows = append(page.Workflows, WorkflowSummary{WorkflowState: s})
	}
	if page.Next == 0 && len(all) == scan && f.State != "" {
		page.Next, page.Scanned = all[len(all)-1].ID, true
	}
	if len(page.Workflows) == 0 {
		return page, nil
	}
	ids := make([]int64, len(page.Workflows))
	at := map[int64]*WorkflowSummary{}
	for i := range page.Workflows {
		w := &page.Workflows[i]
		ids[i], at[w.ID] = w.ID, w
		w.Steps = map[string]int{}
	}
	err = c.each(ctx, db, sqlWorkflowSteps.For(c.schema), []any{ids, WorkflowStepCap}, func(scan func(...any) error) error {
		var id int64
		var state string
		var n int
		if err := scan(&id, &state, &n); err != nil {
			return err
		}
		w := at[id]
		if n > 0 {
			w.Steps[state] = n
		}
		return nil
	})
	if err != nil {
		return WorkflowPage{}, err
	}
	for i := range page.Workflows {
		w := &page.Workflows[i]
		live := 0
		for s, n := range w.Steps {
			if s == StateDead {
				w.Failed = n
				w.Capped = w.Capped || n >= WorkflowStepCap
				continue
			}
			live += n
		}
		w.Remaining = live
		w.Capped = w.Capped || live >= WorkflowStepCap
		w.Completed = w.Jobs - w.Remaining - w.Failed
		if w.Capped || w.Completed < 0 {
			w.Completed = -1
		}
	}
	return page, nil
}

// Summary returns workflow id with its jobs counted by state, as Page
// does (bounded by WorkflowStepCap); an unknown id is ErrWorkflowNotFound.
func (h Workflows) Summary(ctx context.Context, db DB, id int64) (WorkflowSummary, error) {
	if id <= 0 || id == math.MaxInt64 {
		return WorkflowSummary{}, fmt.Errorf("%w: no workflow %d", ErrWorkflowNotFound, id)
	}
	page, err := h.Page(ctx, db, WorkflowFilter{Before: id + 1, Limit: 1})
	if err != nil {
		return WorkflowSummary{}, err
	}
	if len(page.Workflows) == 0 || page.Workflows[0].ID != id {
		return WorkflowSummary{}, fmt.Errorf("%w: no workflow %d", ErrWorkflowNotFound, id)
	}
	return page.Workflows[0], nil
}
