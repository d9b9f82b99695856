package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	docket "github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// ErrInvalidWorkflow wraps every validation failure of EnqueueWorkflow that
// is about the workflow's shape rather than one job's options: no jobs, an
// empty or repeated Ref, a dependency on an unknown Ref, a cycle, a serial
// key. Nothing is sent to the database, so a caller's transaction stays
// usable. (A job whose own options are invalid is reported with
// ErrInvalidJob, naming its Ref.)
var ErrInvalidWorkflow = errors.New("docket: invalid workflow")

// ErrWorkflowNotFound is returned for a workflow id that does not exist.
var ErrWorkflowNotFound = errors.New("docket: workflow not found")

// ErrWorkflowFinished is returned, wrapped with the workflow's id and state,
// by CancelWorkflow for a workflow that already finished: every job of it
// left the jobs table, all completed (succeeded) or some dead-lettered or
// cancelled (failed). The workflow is left as it is.
var ErrWorkflowFinished = errors.New("docket: workflow already finished")

// ErrWorkflowKeyTaken is returned, wrapped with the key and the id of the
// job in flight that holds it, when a job of a workflow has a UniqueKey that
// a job in flight holds. The whole workflow is refused: nothing of it is
// written.
var ErrWorkflowKeyTaken = errors.New("docket: unique key of a workflow job is taken")

// Workflow is a set of jobs enqueued together, with dependencies between
// them: a job runs once every job it comes After has completed. See
// docs/workflows.md.
type Workflow struct {
	// Name says what the workflow is for, for operators (docket workflows).
	// Required; at most MaxNameLen bytes of valid UTF-8 without NUL.
	Name string
	// Jobs are the workflow's jobs, at least one. Order does not matter.
	Jobs []WorkflowJob
}

// WorkflowJob is one job of a workflow.
type WorkflowJob struct {
	// Ref names the job inside the workflow, for the After lists of other
	// jobs and in EnqueueWorkflow's result. Required, unique in the
	// workflow, at most MaxNameLen bytes of valid UTF-8 without NUL.
	Ref string
	// Args and Opts are what Enqueue takes, with two limits: no SerialKey
	// and no MoveOnDuplicate. A UniqueKey is allowed; when a job in flight
	// already holds it, the whole workflow is refused (ErrWorkflowKeyTaken).
	Args docket.Args
	Opts Opts
	// After lists the jobs this one runs after. Empty: it is ready (or
	// scheduled, with RunAt or Delay) as soon as the workflow commits.
	After []Dependency
}

// Dependency is one parent of a workflow job.
type Dependency struct {
	// Ref is the parent's WorkflowJob.Ref.
	Ref string
	// RunAnyway makes the child run also when this parent dead-letters or
	// is cancelled. False (the default): the child, and every job after
	// it, is cancelled then.
	RunAnyway bool
}

// After returns a dependency on each of refs, with the default policy
// (cancel the dependent when the parent fails): a shorthand for
// WorkflowJob.After.
func After(refs ...string) []Dependency {
	deps := make([]Dependency, len(refs))
	for i, r := range refs {
		deps[i] = Dependency{Ref: r}
	}
	return deps
}

// WorkflowEnqueued reports an enqueued workflow.
type WorkflowEnqueued struct {
	// ID is the workflow's id (docket_workflows.id).
	ID int64
	// Jobs maps each WorkflowJob.Ref to its job's id.
	Jobs map[string]int64
}

// Workflow states, as WorkflowState.State and the docket_workflow_status
// view report them.
const (
	WorkflowRunning   = "running"   // some of its jobs are still in the jobs table
	WorkflowSucceeded = "succeeded" // every job completed
	WorkflowFailed    = "failed"    // every job left; some dead-lettered or were cancelled
	WorkflowCancelled = "cancelled" // CancelWorkflow was called
)

// WorkflowState is one row of the docket_workflow_status view.
type WorkflowState struct {
	ID          int64
	Name        string
	CreatedAt   time.Time
	CancelledAt time.Time // zero unless cancelled
	// Jobs is how many jobs the workflow was enqueued with.
	Jobs int
	// Remaining is how many are still in the jobs table: waiting for
	// parents, scheduled, ready or running.
	Remaining int
	// Failed is how many are in the dead-letter table: dead-lettered, or
	// cancelled (by CancelJob, by a failed parent, by CancelWorkflow).
	Failed int
	// State is one of the Workflow* constants.
	State string
}

// WorkflowJobState is a job of a workflow that is still live or dead.
type WorkflowJobState struct {
	ID    int64
	Kind  string
	Queue string
	// State is the job's state in the jobs table ("waiting" means: for a
	// parent), or "dead".
	State string
	// Reason and LastError are those of a dead job.
	Reason    string
	LastError string
}

const (
	sqlInsertWorkflow = `INSERT INTO {{schema}}.docket_workflows (name, jobs) VALUES ($1, $2) RETURNING id`

	// sqlWorkflowJobs inserts a workflow's jobs (a JSON array, preallocated
	// ids; see pgsql.JSONRows): those with parents waiting, the others ready
	// or scheduled as any enqueue makes them. A taken unique key fails the
	// statement. It returns the queues that received ready jobs.
	sqlWorkflowJobs = `WITH ins AS (
	INSERT INTO {{schema}}.docket_jobs
		(id, ready_seq, state, queue, kind, priority, run_at, max_attempts, unique_key, tenant, payload, meta, workflow_id)
	SELECT r.id, r.id,
		CASE WHEN r.waiting THEN 'waiting' WHEN t.at > now() THEN 'scheduled' ELSE 'ready' END,
		r.queue, r.kind, r.priority, t.at, r.max_attempts, r.unique_key, r.tenant, r.payload, r.meta, $2
	FROM json_to_recordset($1::json) AS r(id bigint, queue text, kind text, priority smallint,
		run_at timestamptz, delay_ms bigint, max_attempts integer, unique_key text, tenant text,
		payload jsonb, meta jsonb, waiting boolean)
	CROSS JOIN LATERAL (SELECT COALESCE(r.run_at, now() + r.delay_ms * interval '1 millisecond') AS at) t
	RETURNING queue, state
)
SELECT DISTINCT queue FROM ins WHERE state = 'ready'`

	sqlWorkflowDeps = `INSERT INTO {{schema}}.docket_workflow_deps (workflow_id, parent_id, child_id, run_anyway)
SELECT $1, d.p, d.c, d.a FROM jsonb_to_recordset($2::jsonb) AS d(p bigint, c bigint, a boolean)`

	// sqlCancelWorkflow marks the workflow cancelled, unless it finished
	// (no job of it left in the jobs table; cancelling a cancelled one
	// again is allowed), and moves its jobs that are not running to the
	// dead-letter table. Running ones finish their run; the triggers of
	// migration 014 cancel their dependents and stop them if they come
	// back to the queue (a retry, an expired lease). The job found live is
	// share-locked, so the workflow's last job cannot complete unseen
	// between the check and the mark: its completion waits for the cancel
	// and then sees the workflow cancelled. It returns whether the
	// workflow exists, whether it was marked, how many jobs were cancelled
	// and whether any job of it is dead (a finished workflow failed).
	sqlCancelWorkflow = `WITH live AS (
	SELECT 1 FROM {{schema}}.docket_jobs WHERE workflow_id = $1 LIMIT 1 FOR KEY SHARE
), wf AS (
	UPDATE {{schema}}.docket_workflows SET cancelled_at = COALESCE(cancelled_at, now())
	WHERE id = $1 AND (cancelled_at IS NOT NULL OR EXISTS (SELECT 1 FROM live))
	RETURNING id
), gone AS (
	DELETE FROM {{schema}}.docket_jobs j USING wf
	WHERE j.workflow_id = wf.id AND j.state <> 'running'
	RETURNING j.*, 'cancelled'::text AS reason, format('workflow %s cancelled', wf.id) AS err
), dead AS (` + pgsql.DeadInsert + `
)
SELECT EXISTS (SELECT 1 FROM {{schema}}.docket_workflows WHERE id = $1),
	EXISTS (SELECT 1 FROM wf), (SELECT count(*) FROM dead),
	EXISTS (SELECT 1 FROM {{schema}}.docket_jobs_dead WHERE workflow_id = $1)`

	sqlWorkflowStatus = `SELECT id, name, created_at, cancelled_at, jobs, remaining, failed, state
FROM {{schema}}.docket_workflow_status`

	sqlWorkflowJobStates = `SELECT id, kind, queue, state, '', '' FROM {{schema}}.docket_jobs WHERE workflow_id = $1
UNION ALL
SELECT id, kind, queue, 'dead', reason, COALESCE(last_error, '') FROM {{schema}}.docket_jobs_dead WHERE workflow_id = $1
ORDER BY 1`
)

// workflowPlan is a validated workflow: its jobs in order and, for each,
// the indexes of its parents.
type workflowPlan struct {
	name    string
	refs    []string
	jobs    []job
	parents [][]int
	anyway  [][]bool
}

// planWorkflow validates w without touching a database.
func (c *Client) planWorkflow(ctx context.Context, w Workflow) (*workflowPlan, error) {
	if w.Name == "" || len(w.Name) > MaxNameLen || badText(w.Name) != "" {
		return nil, fmt.Errorf("%w: name %q: want 1 to %d bytes of valid UTF-8 without NUL", ErrInvalidWorkflow, w.Name, MaxNameLen)
	}
	if len(w.Jobs) == 0 {
		return nil, fmt.Errorf("%w %q: no jobs", ErrInvalidWorkflow, w.Name)
	}
	p := &workflowPlan{name: w.Name, refs: make([]string, len(w.Jobs)), jobs: make([]job, len(w.Jobs)),
		parents: make([][]int, len(w.Jobs)), anyway: make([][]bool, len(w.Jobs))}
	index := make(map[string]int, len(w.Jobs))
	for i, wj := range w.Jobs {
		if wj.Ref == "" || len(wj.Ref) > MaxNameLen || badText(wj.Ref) != "" {
			return nil, fmt.Errorf("%w %q: job %d: ref %q: want 1 to %d bytes of valid UTF-8 without NUL", ErrInvalidWorkflow, w.Name, i, wj.Ref, MaxNameLen)
		}
		if _, dup := index[wj.Ref]; dup {
			return nil, fmt.Errorf("%w %q: two jobs have ref %q", ErrInvalidWorkflow, w.Name, wj.Ref)
		}
		index[wj.Ref] = i
		p.refs[i] = wj.Ref
	}
	keys := map[string]string{}
	for i, wj := range w.Jobs {
		j, err := prepare(ctx, c.kinds, c.prop, wj.Args, wj.Opts)
		if err != nil {
			return nil, fmt.Errorf("workflow %q: job %q: %w", w.Name, wj.Ref, err)
		}
		switch {
		case j.serialKey != "":
			return nil, fmt.Errorf("%w %q: job %q: serial keys are not supported in workflows (order jobs with After instead)", ErrInvalidWorkflow, w.Name, wj.Ref)
		case j.move:
			return nil, fmt.Errorf("%w %q: job %q: MoveOnDuplicate is not supported in workflows", ErrInvalidWorkflow, w.Name, wj.Ref)
		}
		if j.uniqueKey != "" {
			if other, dup := keys[j.uniqueKey]; dup {
				return nil, fmt.Errorf("%w %q: jobs %q and %q have the same unique key", ErrInvalidWorkflow, w.Name, other, wj.Ref)
			}
			keys[j.uniqueKey] = wj.Ref
		}
		p.jobs[i] = j
		seen := map[int]bool{}
		for _, d := range wj.After {
			pi, ok := index[d.Ref]
			switch {
			case !ok:
				return nil, fmt.Errorf("%w %q: job %q runs after %q, which is not a job of the workflow", ErrInvalidWorkflow, w.Name, wj.Ref, d.Ref)
			case seen[pi]:
				return nil, fmt.Errorf("%w %q: job %q lists %q twice in After", ErrInvalidWorkflow, w.Name, wj.Ref, d.Ref)
			}
			seen[pi] = true
			p.parents[i] = append(p.parents[i], pi)
			p.anyway[i] = append(p.anyway[i], d.RunAnyway)
		}
	}
	if cycle := findCycle(p.parents); cycle != nil {
		names := make([]string, len(cycle))
		for i, n := range cycle {
			names[i] = p.refs[n]
		}
		return nil, fmt.Errorf("%w %q: cycle %s", ErrInvalidWorkflow, w.Name, strings.Join(names, " -> "))
	}
	return p, nil
}

// findCycle returns the nodes of a cycle in the graph given by each node's
// parents, parent first, the first node repeated at the end; nil when there
// is none. Iterative, so a long chain cannot exhaust the stack.
func findCycle(parents [][]int) []int {
	const (
		unseen = iota
		open
		closed
	)
	color := make([]int, len(parents))
	for root := range parents {
		if color[root] != unseen {
			continue
		}
		// path holds the nodes being visited and how many of each node's
		// parents were walked already.
		type frame struct{ node, next int }
		path := []frame{{root, 0}}
		color[root] = open
		for len(path) > 0 {
			top := &path[len(path)-1]
			if top.next == len(parents[top.node]) {
				color[top.node] = closed
				path = path[:len(path)-1]
				continue
			}
			p := parents[top.node][top.next]
			top.next++
			switch color[p] {
			case open:
				// p is on the path: each node of the path is a parent of
				// the one before it, so from top back to p the path runs
				// in run order (parent before child), and p's parent is
				// top, which closes the cycle.
				var cycle []int
				for i := len(path) - 1; i >= 0; i-- {
					cycle = append(cycle, path[i].node)
					if path[i].node == p {
						break
					}
				}
				return append(cycle, cycle[0])
			case unseen:
				color[p] = open
				path = append(path, frame{p, 0})
			}
		}
	}
	return nil
}

// EnqueueWorkflow writes a workflow: its jobs, their dependencies and the
// workflow's row, all or nothing. A job without parents is ready (or
// scheduled) at once; the others wait until every parent completed, then
// become ready in the transaction that removed the last one (or within one
// sweep of a worker when two parents finish at once; see
// docs/workflows.md).
//
// Pass the caller's pgx.Tx to commit the workflow with the caller's own
// writes; the workflow is written under a savepoint, so a refusal leaves
// the caller's transaction usable. With a pool or connection it is written
// in a transaction of its own. db must be able to begin a transaction
// (pgx.Tx, *pgx.Conn and *pgxpool.Pool can).
//
// Validation happens before anything is sent: an ErrInvalidWorkflow error
// for the workflow's shape (see there), an ErrInvalidJob or ErrUnknownKind
// error naming the job's Ref for a job Enqueue would refuse. A UniqueKey
// held by a job in flight refuses the whole workflow with
// ErrWorkflowKeyTaken, having written nothing.
func (c *Client) EnqueueWorkflow(ctx context.Context, db Pgx, w Workflow) (WorkflowEnqueued, error) {
	p, err := c.planWorkflow(ctx, w)
	if err != nil {
		return WorkflowEnqueued{}, err
	}
	b, ok := db.(TxBeginner)
	if !ok {
		return WorkflowEnqueued{}, fmt.Errorf("docket: workflow %q: EnqueueWorkflow needs a handle that begins transactions (pgx.Tx, *pgx.Conn, *pgxpool.Pool), got %T", w.Name, db)
	}
	if err := c.checkMigrated(ctx, pgxConn{db}); err != nil {
		return WorkflowEnqueued{}, err
	}
	var out WorkflowEnqueued
	err = pgx.BeginFunc(ctx, b, func(tx pgx.Tx) error {
		var err error
		out, err = c.insertWorkflow(ctx, pgxConn{tx}, p)
		return err
	})
	if err != nil {
		return WorkflowEnqueued{}, c.wrapErr(err)
	}
	return out, nil
}

func (c *Client) insertWorkflow(ctx context.Context, cn conn, p *workflowPlan) (WorkflowEnqueued, error) {
	if err := c.checkWorkflowKeys(ctx, cn, p); err != nil {
		return WorkflowEnqueued{}, err
	}
	out := WorkflowEnqueued{Jobs: make(map[string]int64, len(p.jobs))}
	err := cn.query(ctx, pgsql.Render(sqlInsertWorkflow, c.schema), []any{p.name, len(p.jobs)}, func(scan func(...any) error) error {
		return scan(&out.ID)
	})
	if err != nil {
		return WorkflowEnqueued{}, err
	}
	ids := make([]int64, 0, len(p.jobs))
	err = cn.query(ctx, c.sql.nextIDs, []any{len(p.jobs)}, func(scan func(...any) error) error {
		var id int64
		err := scan(&id)
		ids = append(ids, id)
		return err
	})
	if err != nil {
		return WorkflowEnqueued{}, err
	}
	rows := make([]map[string]any, len(p.jobs))
	type dep struct {
		P int64 `json:"p"`
		C int64 `json:"c"`
		A bool  `json:"a"`
	}
	var deps []dep
	for i, j := range p.jobs {
		out.Jobs[p.refs[i]] = ids[i]
		row := map[string]any{"id": ids[i], "queue": j.queue, "kind": j.kind, "priority": j.priority,
			"delay_ms": j.delayMS, "max_attempts": j.maxAttempts, "tenant": j.tenant,
			"unique_key": nullable(j.uniqueKey), "payload": json.RawMessage(j.payload), "meta": rawOrNil(j.meta),
			"waiting": len(p.parents[i]) > 0}
		if j.runAt != nil {
			row["run_at"] = j.runAt.Format(time.RFC3339Nano)
		}
		rows[i] = row
		for k, pi := range p.parents[i] {
			deps = append(deps, dep{P: ids[pi], C: ids[i], A: p.anyway[i][k]})
		}
	}
	ready := map[string]bool{}
	err = pgsql.JSONRows(rows, func(doc string) error {
		return cn.query(ctx, pgsql.Render(sqlWorkflowJobs, c.schema), []any{doc, out.ID}, func(scan func(...any) error) error {
			var q string
			err := scan(&q)
			ready[q] = true
			return err
		})
	})
	if err != nil {
		if pgsql.SQLState(err) == "23505" {
			return WorkflowEnqueued{}, fmt.Errorf("%w: workflow %q: a unique key was taken while it was written: %w", ErrWorkflowKeyTaken, p.name, err)
		}
		return WorkflowEnqueued{}, err
	}
	if len(deps) > 0 {
		doc, err := json.Marshal(deps)
		if err != nil {
			return WorkflowEnqueued{}, err
		}
		if _, err := cn.exec(ctx, pgsql.Render(sqlWorkflowDeps, c.schema), out.ID, string(doc)); err != nil {
			return WorkflowEnqueued{}, err
		}
	}
	queues := make([]string, 0, len(ready))
	for q := range ready {
		queues = append(queues, q)
	}
	return out, c.notify(ctx, cn, queues)
}

// checkWorkflowKeys refuses p when a job in flight holds one of its unique
// keys, before anything of it is written.
func (c *Client) checkWorkflowKeys(ctx context.Context, cn conn, p *workflowPlan) error {
	byKey := map[string]string{}
	var keys []string
	for i, j := range p.jobs {
		if j.uniqueKey != "" {
			keys = append(keys, j.uniqueKey)
			byKey[j.uniqueKey] = p.refs[i]
		}
	}
	if len(keys) == 0 {
		return nil
	}
	doc, _ := json.Marshal(keys)
	var taken error
	err := cn.query(ctx, c.sql.lookupKeys, []any{string(doc)}, func(scan func(...any) error) error {
		var key, state string
		var id int64
		if err := scan(&key, &id, &state); err != nil {
			return err
		}
		if taken == nil {
			taken = fmt.Errorf("%w: workflow %q: job %q: unique key %q is held by job %d (%s); nothing was written",
				ErrWorkflowKeyTaken, p.name, byKey[key], key, id, state)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return taken
}

// CancelWorkflow cancels workflow id: it is marked cancelled, and its jobs
// that are not running move to the dead-letter table with reason
// "cancelled". A running job finishes its run (a transactional handler's
// effects commit); whatever its outcome, no job of the workflow runs after
// it, and if it comes back to the queue (a retry, an expired lease) it is
// cancelled instead. It returns how many jobs it cancelled now; cancelling
// a cancelled workflow again is no error and cancels what is left.
//
// A workflow that already finished (state succeeded or failed: none of its
// jobs is left in the jobs table) is not changed: the error wraps
// ErrWorkflowFinished and names its state. An unknown id is
// ErrWorkflowNotFound.
func (c *Client) CancelWorkflow(ctx context.Context, db Pgx, id int64) (int64, error) {
	var found, marked, anyDead bool
	var n int64
	err := db.QueryRow(ctx, pgsql.Render(sqlCancelWorkflow, c.schema), id).Scan(&found, &marked, &n, &anyDead)
	switch {
	case err != nil:
		return 0, c.wrapErr(err)
	case !found:
		return 0, fmt.Errorf("%w: no workflow %d", ErrWorkflowNotFound, id)
	case !marked:
		state := WorkflowSucceeded
		if anyDead {
			state = WorkflowFailed
		}
		return 0, fmt.Errorf("%w: workflow %d %s; it was left as it is", ErrWorkflowFinished, id, state)
	}
	return n, nil
}

// WorkflowStatus returns workflow id's row of docket_workflow_status; an
// unknown id is ErrWorkflowNotFound.
func (c *Client) WorkflowStatus(ctx context.Context, db Pgx, id int64) (WorkflowState, error) {
	list, err := c.workflows(ctx, db, ` WHERE id = $1`, id)
	if err != nil {
		return WorkflowState{}, err
	}
	if len(list) == 0 {
		return WorkflowState{}, fmt.Errorf("%w: no workflow %d", ErrWorkflowNotFound, id)
	}
	return list[0], nil
}

// ListWorkflows returns the newest workflows first, at most limit of them
// (zero or less means 50).
func (c *Client) ListWorkflows(ctx context.Context, db Pgx, limit int) ([]WorkflowState, error) {
	if limit <= 0 {
		limit = 50
	}
	return c.workflows(ctx, db, ` ORDER BY id DESC LIMIT $1`, limit)
}

func (c *Client) workflows(ctx context.Context, db Pgx, tail string, args ...any) ([]WorkflowState, error) {
	rows, err := db.Query(ctx, pgsql.Render(sqlWorkflowStatus, c.schema)+tail, args...)
	if err != nil {
		return nil, c.wrapErr(err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (WorkflowState, error) {
		var s WorkflowState
		var cancelled *time.Time
		err := row.Scan(&s.ID, &s.Name, &s.CreatedAt, &cancelled, &s.Jobs, &s.Remaining, &s.Failed, &s.State)
		if cancelled != nil {
			s.CancelledAt = *cancelled
		}
		return s, err
	})
	return list, c.wrapErr(err)
}

// WorkflowJobs returns the jobs of workflow id that are still live or
// dead, by id; completed jobs are in history (docket_jobs_done, column
// workflow_id) and not listed.
func (c *Client) WorkflowJobs(ctx context.Context, db Pgx, id int64) ([]WorkflowJobState, error) {
	rows, err := db.Query(ctx, pgsql.Render(sqlWorkflowJobStates, c.schema), id)
	if err != nil {
		return nil, c.wrapErr(err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (WorkflowJobState, error) {
		var s WorkflowJobState
		err := row.Scan(&s.ID, &s.Kind, &s.Queue, &s.State, &s.Reason, &s.LastError)
		return s, err
	})
	return list, c.wrapErr(err)
}
