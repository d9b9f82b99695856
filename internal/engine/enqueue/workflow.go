package enqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/docketq/docket/internal/engine/core"
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
	Args core.Args
	Opts Opts
	// After lists the jobs this one runs after. Empty: it is ready (or
	// scheduled, with RunAt or Delay) as soon as the workflow commits.
	After []Dependency
	// WaitFor, WaitTimeout, OnTimeout and Delay are docket.WorkflowJob's:
	// see there.
	WaitFor     string
	WaitTimeout time.Duration
	OnTimeout   TimeoutPolicy
	Delay       time.Duration
}

// TimeoutPolicy is what becomes of a step whose WaitTimeout passed before
// its signal came; docket.TimeoutPolicy documents the values.
type TimeoutPolicy uint8

// The timeout policies.
const (
	TimeoutFail TimeoutPolicy = iota
	TimeoutRun
)

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

var (
	// sqlInsertWorkflow writes a workflow's row; $3 to $6 describe the
	// step that waits for it (NULL, and depth 0, for a top-level one).
	sqlInsertWorkflow = pgsql.SQL(`INSERT INTO {{schema}}.docket_workflows
	(name, jobs, parent_job_id, parent_workflow_id, depth, parent_to_history)
VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`)

	// sqlWorkflowJobs inserts a workflow's jobs (a JSON array, preallocated
	// ids; see pgsql.JSONRows): those with parents waiting, the others ready
	// or scheduled as any enqueue makes them. A taken unique key fails the
	// statement. It returns the queues that received ready jobs.
	sqlWorkflowJobs = pgsql.SQL(`WITH ins AS (
	INSERT INTO {{schema}}.docket_jobs
		(id, ready_seq, state, queue, kind, priority, run_at, max_attempts, unique_key, tenant, payload, meta, workflow_id,
		 wait_until, parent_step_id)
	SELECT r.id, r.id,
		CASE WHEN r.waiting THEN 'waiting' WHEN t.at > now() THEN 'scheduled' ELSE 'ready' END,
		r.queue, r.kind, r.priority, t.at, r.max_attempts, r.unique_key, r.tenant, r.payload, r.meta, $2,
		CASE WHEN r.hold THEN COALESCE(now() + r.timeout_ms * interval '1 millisecond', '9999-12-31 00:00:00+00') END,
		$3::bigint
	FROM json_to_recordset($1::json) AS r(id bigint, queue text, kind text, priority smallint,
		run_at timestamptz, delay_ms bigint, max_attempts integer, unique_key text, tenant text,
		payload jsonb, meta jsonb, waiting boolean, hold boolean, timeout_ms bigint, after_ms bigint)
	CROSS JOIN LATERAL (SELECT greatest(COALESCE(r.run_at, now() + r.delay_ms * interval '1 millisecond'),
		now() + COALESCE(r.after_ms, 0) * interval '1 millisecond') AS at) t
	RETURNING queue, state
)
SELECT DISTINCT queue FROM ins WHERE state = 'ready'`)

	// sqlWorkflowWaits records the waits of the steps that have a signal
	// or a delay (migration 022).
	sqlWorkflowWaits = pgsql.SQL(`INSERT INTO {{schema}}.docket_workflow_waits (job_id, workflow_id, signal, timeout, on_timeout, delay)
SELECT w.id, $1, w.signal, w.timeout_ms * interval '1 millisecond', w.policy, w.after_ms * interval '1 millisecond'
FROM jsonb_to_recordset($2::jsonb) AS w(id bigint, signal text, timeout_ms bigint, policy text, after_ms bigint)`)

	// The parent's ref is what its dependents read its result by (see
	// Job.ParentResult).
	sqlWorkflowDeps = pgsql.SQL(`INSERT INTO {{schema}}.docket_workflow_deps (workflow_id, parent_id, child_id, run_anyway, parent_ref)
SELECT $1, d.p, d.c, d.a, d.r FROM jsonb_to_recordset($2::jsonb) AS d(p bigint, c bigint, a boolean, r text)`)
)

// workflowPlan is a validated workflow: its jobs in order and, for each,
// the indexes of its parents.
type workflowPlan struct {
	name    string
	refs    []string
	jobs    []job
	parents [][]int
	anyway  [][]bool
	waits   []WorkflowJob // each job's WaitFor, WaitTimeout, OnTimeout, Delay
}

// planWorkflow validates w without touching a database.
func (c *Client) planWorkflow(ctx context.Context, w Workflow) (*workflowPlan, error) {
	if w.Name == "" || len(w.Name) > MaxNameLen || core.BadText(w.Name) != "" {
		return nil, fmt.Errorf("%w: name %q: want 1 to %d bytes of valid UTF-8 without NUL", ErrInvalidWorkflow, w.Name, MaxNameLen)
	}
	if len(w.Jobs) == 0 {
		return nil, fmt.Errorf("%w %q: no jobs", ErrInvalidWorkflow, w.Name)
	}
	p := &workflowPlan{name: w.Name, refs: make([]string, len(w.Jobs)), jobs: make([]job, len(w.Jobs)),
		parents: make([][]int, len(w.Jobs)), anyway: make([][]bool, len(w.Jobs)), waits: w.Jobs}
	index := make(map[string]int, len(w.Jobs))
	for i, wj := range w.Jobs {
		if wj.Ref == "" || len(wj.Ref) > MaxNameLen || core.BadText(wj.Ref) != "" {
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
		if err := checkWait(wj); err != nil {
			return nil, fmt.Errorf("%w %q: job %q: %w", ErrInvalidWorkflow, w.Name, wj.Ref, err)
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

// checkWait validates a step's wait: a signal name like a queue name, no
// negative durations, a timeout and its policy only with a signal.
func checkWait(wj WorkflowJob) error {
	switch {
	case wj.WaitFor != "" && (len(wj.WaitFor) > MaxNameLen || core.BadText(wj.WaitFor) != ""):
		return fmt.Errorf("signal name %q: want at most %d bytes of valid UTF-8 without NUL", wj.WaitFor, MaxNameLen)
	case wj.WaitTimeout < 0 || wj.Delay < 0:
		return fmt.Errorf("negative WaitTimeout or Delay (%s, %s)", wj.WaitTimeout, wj.Delay)
	case wj.WaitFor == "" && (wj.WaitTimeout != 0 || wj.OnTimeout != TimeoutFail):
		return errors.New("WaitTimeout and OnTimeout need WaitFor")
	case wj.OnTimeout > TimeoutRun:
		return fmt.Errorf("unknown OnTimeout %d", wj.OnTimeout)
	case wj.WaitTimeout != 0 && wj.WaitTimeout < time.Millisecond:
		return fmt.Errorf("WaitTimeout %s: want 0 (none) or at least 1ms", wj.WaitTimeout)
	}
	return nil
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
func (c *Client) EnqueueWorkflow(ctx context.Context, db pgsql.DB, w Workflow) (WorkflowEnqueued, error) {
	p, err := c.planWorkflow(ctx, w)
	if err != nil {
		return WorkflowEnqueued{}, err
	}
	b, ok := db.(pgsql.Beginner)
	if !ok {
		return WorkflowEnqueued{}, fmt.Errorf("docket: workflow %q: EnqueueWorkflow needs a handle that begins transactions (pgx.Tx, *pgx.Conn, *pgxpool.Pool), got %T", w.Name, db)
	}
	if err := c.checkMigrated(ctx, pgsql.OnPgx(db)); err != nil {
		return WorkflowEnqueued{}, err
	}
	var out WorkflowEnqueued
	err = pgx.BeginFunc(ctx, b, func(tx pgx.Tx) error {
		var err error
		out, err = c.insertWorkflow(ctx, pgsql.OnPgx(tx), p, nil)
		return err
	})
	if err != nil {
		return WorkflowEnqueued{}, c.wrapErr(err)
	}
	return out, nil
}

// insertWorkflow writes p; parent is the step that waits for it, nil for a
// top-level workflow.
func (c *Client) insertWorkflow(ctx context.Context, cn pgsql.Conn, p *workflowPlan, parent *parentStep) (WorkflowEnqueued, error) {
	if err := c.checkWorkflowKeys(ctx, cn, p); err != nil {
		return WorkflowEnqueued{}, err
	}
	out := WorkflowEnqueued{Jobs: make(map[string]int64, len(p.jobs))}
	args := []any{p.name, len(p.jobs), nil, nil, 0, nil}
	var step any
	if parent != nil {
		args[2], args[3], args[4], args[5] = parent.jobID, parent.workflowID, parent.depth+1, c.history
		step = parent.jobID
	}
	err := cn.Query(ctx, sqlInsertWorkflow.For(c.schema), args, func(scan func(...any) error) error {
		return scan(&out.ID)
	})
	if err != nil {
		return WorkflowEnqueued{}, err
	}
	ids := make([]int64, 0, len(p.jobs))
	err = cn.Query(ctx, sqlNextIDs.For(c.schema), []any{len(p.jobs)}, func(scan func(...any) error) error {
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
		P int64  `json:"p"`
		C int64  `json:"c"`
		A bool   `json:"a"`
		R string `json:"r"`
	}
	var deps []dep
	var waits []map[string]any
	for i, j := range p.jobs {
		out.Jobs[p.refs[i]] = ids[i]
		wj := p.waits[i]
		row := map[string]any{"id": ids[i], "queue": j.queue, "kind": j.kind, "priority": j.priority,
			"delay_ms": j.delayMS, "max_attempts": j.maxAttempts, "tenant": j.tenant,
			"unique_key": pgsql.NullString(j.uniqueKey), "payload": json.RawMessage(j.payload), "meta": pgsql.RawJSON(j.meta),
			"waiting": len(p.parents[i]) > 0 || wj.WaitFor != ""}
		if wj.WaitFor != "" || wj.Delay > 0 {
			w := map[string]any{"id": ids[i], "policy": "fail"}
			if wj.OnTimeout == TimeoutRun {
				w["policy"] = "run"
			}
			if wj.WaitFor != "" {
				w["signal"] = wj.WaitFor
			}
			if wj.WaitTimeout > 0 {
				w["timeout_ms"] = wj.WaitTimeout.Milliseconds()
			}
			if wj.Delay > 0 {
				w["after_ms"] = wj.Delay.Milliseconds()
			}
			waits = append(waits, w)
			if len(p.parents[i]) == 0 {
				// Nothing to wait for first: the step waits for its
				// signal from now on, or is delayed from now on.
				if wj.WaitFor != "" {
					row["hold"] = true
					row["timeout_ms"] = w["timeout_ms"]
				} else {
					row["after_ms"] = w["after_ms"]
				}
			}
		}
		if j.runAt != nil {
			row["run_at"] = j.runAt.Format(time.RFC3339Nano)
		}
		rows[i] = row
		for k, pi := range p.parents[i] {
			deps = append(deps, dep{P: ids[pi], C: ids[i], A: p.anyway[i][k], R: p.refs[pi]})
		}
	}
	ready := map[string]bool{}
	err = pgsql.JSONRows(rows, func(doc string) error {
		return cn.Query(ctx, sqlWorkflowJobs.For(c.schema), []any{doc, out.ID, step}, func(scan func(...any) error) error {
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
	if len(waits) > 0 {
		doc, err := json.Marshal(waits)
		if err != nil {
			return WorkflowEnqueued{}, err
		}
		if _, err := cn.Exec(ctx, sqlWorkflowWaits.For(c.schema), out.ID, string(doc)); err != nil {
			return WorkflowEnqueued{}, err
		}
	}
	if len(deps) > 0 {
		doc, err := json.Marshal(deps)
		if err != nil {
			return WorkflowEnqueued{}, err
		}
		if _, err := cn.Exec(ctx, sqlWorkflowDeps.For(c.schema), out.ID, string(doc)); err != nil {
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
func (c *Client) checkWorkflowKeys(ctx context.Context, cn pgsql.Conn, p *workflowPlan) error {
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
	err := cn.Query(ctx, sqlLookupKeys.For(c.schema), []any{string(doc)}, func(scan func(...any) error) error {
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
