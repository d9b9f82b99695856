package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// MaxGraphSteps bounds the steps Workflows.Graph reads: a larger workflow
// shows that many (WorkflowGraph.More says so).
const MaxGraphSteps = 300

// WorkflowGraph is a workflow's steps and the dependencies between them,
// wherever each step is now (live, dead or in history).
type WorkflowGraph struct {
	Steps []WorkflowStep
	// Edges are the dependencies between Steps: Child runs after Parent.
	Edges []WorkflowEdge
	// More says the workflow has more steps or dependencies than were
	// read (MaxGraphSteps).
	More bool
	// Signals are the signals sent to the workflow, oldest first.
	Signals []WorkflowSignal
}

// WorkflowStep is one job of a workflow.
type WorkflowStep struct {
	ID    int64
	Kind  string
	Queue string
	// State is the job's live state, StateDead, StateCompleted for a job
	// in history, or "" for one in neither (history off, or removed).
	State string
	// Reason is a dead job's reason.
	Reason string
	// WaitFor is the signal the step waits for (docket.WorkflowJob.WaitFor),
	// empty if none; Signalled says it was sent.
	WaitFor   string
	Signalled bool
	// WaitUntil is a waiting step's deadline for its signal (zero: none,
	// or not waiting for its signal yet); Timeout and OnTimeout are how it
	// was enqueued ("fail" or "run").
	WaitUntil time.Time
	Timeout   time.Duration
	OnTimeout string
	// Delay holds the step back once released (docket.WorkflowJob.Delay);
	// RunAt is when a live step is due.
	Delay time.Duration
	RunAt time.Time
	// ChildWorkflowID is the child workflow the step started, 0 if none.
	ChildWorkflowID int64
}

// WorkflowEdge is one dependency: Child runs after Parent completed (or
// also when it failed, with RunAnyway).
type WorkflowEdge struct {
	Parent, Child int64
	RunAnyway     bool
}

// WorkflowSignal is a signal sent to a workflow (docket.Client.Signal).
type WorkflowSignal struct {
	Name   string
	SentAt time.Time
	// Payload is nil unless Workflows.Graph was asked for payloads (or the
	// signal has none).
	Payload json.RawMessage
}

var (
	// sqlWorkflowGraph reads at most $2 steps of workflow $1: the ids come
	// from the workflow_id indexes of the jobs and dead-letter tables and
	// the dependency table (a completed step is in history, which has no
	// such index, and is found through its dependencies), each branch
	// bounded before the union. A step in neither live table is looked up
	// in history by id, in the partitions that finished after the
	// workflow was created ($3).
	sqlWorkflowGraph = pgsql.SQL(`WITH ids AS (
	SELECT DISTINCT id FROM (
		(SELECT j.id FROM {{schema}}.docket_jobs j WHERE j.workflow_id = $1 LIMIT $2)
		UNION ALL (SELECT d.id FROM {{schema}}.docket_jobs_dead d WHERE d.workflow_id = $1 LIMIT $2)
		UNION ALL (SELECT p.parent_id FROM {{schema}}.docket_workflow_deps p WHERE p.workflow_id = $1 LIMIT $2)
		UNION ALL (SELECT p.child_id FROM {{schema}}.docket_workflow_deps p WHERE p.workflow_id = $1 LIMIT $2)
	) u
)
SELECT i.id, COALESCE(j.kind, d.kind, h.kind, ''), COALESCE(j.queue, d.queue, h.queue, ''),
	CASE WHEN j.id IS NOT NULL THEN j.state::text WHEN d.id IS NOT NULL THEN 'dead'
		WHEN h.kind IS NOT NULL THEN 'completed' ELSE '' END,
	COALESCE(d.reason, ''), COALESCE(w.signal, ''),
	w.signal IS NOT NULL AND EXISTS (SELECT 1 FROM {{schema}}.docket_workflow_signals s
		WHERE s.workflow_id = $1 AND s.name = w.signal),
	CASE WHEN j.state = 'waiting' AND j.wait_until < '9999-12-31' THEN j.wait_until END,
	COALESCE(EXTRACT(epoch FROM w.timeout), 0)::float8, COALESCE(w.on_timeout, ''),
	COALESCE(EXTRACT(epoch FROM w.delay), 0)::float8, j.run_at,
	COALESCE((SELECT max(c.id) FROM {{schema}}.docket_workflows c WHERE c.parent_job_id = i.id), 0)
FROM ids i
LEFT JOIN {{schema}}.docket_jobs j ON j.id = i.id
LEFT JOIN {{schema}}.docket_jobs_dead d ON j.id IS NULL AND d.id = i.id
LEFT JOIN LATERAL (SELECT x.kind, x.queue FROM {{schema}}.docket_jobs_done x
	WHERE j.id IS NULL AND d.id IS NULL AND x.id = i.id AND x.finished_at >= $3 LIMIT 1) h ON true
LEFT JOIN {{schema}}.docket_workflow_waits w ON w.job_id = i.id
ORDER BY i.id
LIMIT $2 + 1`)

	// sqlWorkflowEdges reads at most $2 dependencies of workflow $1.
	sqlWorkflowEdges = pgsql.SQL(`SELECT parent_id, child_id, run_anyway
FROM {{schema}}.docket_workflow_deps WHERE workflow_id = $1 LIMIT $2`)

	// sqlWorkflowSignals reads the signals sent to workflow $1 (its
	// primary key), the payloads only when $2.
	sqlWorkflowSignals = pgsql.SQL(`SELECT name, sent_at, CASE WHEN $2 THEN payload END
FROM {{schema}}.docket_workflow_signals WHERE workflow_id = $1 ORDER BY sent_at, name LIMIT 100`)

	// sqlJobWorkflow finds the workflow a job belongs to, wherever the job
	// is, and the newest child workflow it started.
	sqlJobWorkflow = pgsql.SQL(`SELECT COALESCE(
	(SELECT workflow_id FROM {{schema}}.docket_jobs WHERE id = $1),
	(SELECT workflow_id FROM {{schema}}.docket_jobs_dead WHERE id = $1),
	(SELECT workflow_id FROM {{schema}}.docket_jobs_done WHERE id = $1 LIMIT 1), 0),
	COALESCE((SELECT max(id) FROM {{schema}}.docket_workflows WHERE parent_job_id = $1), 0)`)
)

// Graph returns workflow st's steps (at most MaxGraphSteps), the
// dependencies between them and the signals sent to it; signal payloads
// only with payloads true, as they may hold personal data. Pass the
// workflow's Status.
func (h Workflows) Graph(ctx context.Context, db DB, st WorkflowState, payloads bool) (WorkflowGraph, error) {
	c := h.c
	var g WorkflowGraph
	in := map[int64]bool{}
	err := c.each(ctx, db, sqlWorkflowGraph.For(c.schema), []any{st.ID, MaxGraphSteps, st.CreatedAt.Add(-time.Minute)}, func(scan func(...any) error) error {
		var s WorkflowStep
		var until, runAt *time.Time
		var timeout, delay float64
		if err := scan(&s.ID, &s.Kind, &s.Queue, &s.State, &s.Reason, &s.WaitFor, &s.Signalled, &until, &timeout, &s.OnTimeout, &delay, &runAt, &s.ChildWorkflowID); err != nil {
			return err
		}
		if len(g.Steps) == MaxGraphSteps {
			g.More = true
			return nil
		}
		if until != nil {
			s.WaitUntil = *until
		}
		if runAt != nil {
			s.RunAt = *runAt
		}
		s.Timeout = time.Duration(timeout * float64(time.Second))
		s.Delay = time.Duration(delay * float64(time.Second))
		in[s.ID] = true
		g.Steps = append(g.Steps, s)
		return nil
	})
	if err != nil {
		return g, err
	}
	maxEdges := 4 * MaxGraphSteps
	n := 0
	err = c.each(ctx, db, sqlWorkflowEdges.For(c.schema), []any{st.ID, maxEdges}, func(scan func(...any) error) error {
		var e WorkflowEdge
		if err := scan(&e.Parent, &e.Child, &e.RunAnyway); err != nil {
			return err
		}
		n++
		if in[e.Parent] && in[e.Child] {
			g.Edges = append(g.Edges, e)
		}
		return nil
	})
	if err != nil {
		return g, err
	}
	g.More = g.More || n == maxEdges
	rows, err := db.Query(ctx, sqlWorkflowSignals.For(c.schema), st.ID, payloads)
	if err != nil {
		return g, c.wrapErr(err)
	}
	g.Signals, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (WorkflowSignal, error) {
		var s WorkflowSignal
		var p []byte
		err := row.Scan(&s.Name, &s.SentAt, &p)
		if p != nil {
			s.Payload = json.RawMessage(p)
		}
		return s, err
	})
	return g, c.wrapErr(err)
}

// JobWorkflow says which workflows a job takes part in.
type JobWorkflow struct {
	// WorkflowID is the workflow the job is a step of, 0 if none.
	WorkflowID int64
	// ChildWorkflowID is the newest child workflow the job started
	// (docket.Client.EnqueueChildWorkflow), 0 if none.
	ChildWorkflowID int64
}

// OfJob returns the workflows job id takes part in, wherever the job is
// now (live, dead or in history); an id found nowhere gives zeros.
func (h Workflows) OfJob(ctx context.Context, db DB, id int64) (JobWorkflow, error) {
	c := h.c
	var jw JobWorkflow
	err := db.QueryRow(ctx, sqlJobWorkflow.For(c.schema), id).Scan(&jw.WorkflowID, &jw.ChildWorkflowID)
	if errors.Is(err, pgx.ErrNoRows) {
		return jw, nil
	}
	if err != nil {
		return jw, fmt.Errorf("workflow of job %d: %w", id, c.wrapErr(err))
	}
	return jw, nil
}
