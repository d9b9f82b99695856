package queue

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// jobColumns is what a claim returns, in the order scanJob reads it.
const jobColumns = `id, queue, kind, priority, run_at, created_at, attempts, max_attempts,
	COALESCE(unique_key, '') AS unique_key, tenant, COALESCE(serial_key, '') AS serial_key,
	payload, meta, locked_at, lease_until, COALESCE(last_error, '') AS last_error, claim_id`

// claimInputs is what a claim reads of a workflow job's workflow: its
// parents by ref, each with its result when it completed with one (see
// core.SetInputs and docket_workflow_inputs, migration 019), NULL for a job
// without parents. Jobs outside workflows never call the function: the
// claim opens neither the dependency nor the result table for them
// (TestClaimReadsNoInputsOutsideWorkflows).
const claimInputs = `CASE WHEN docket_jobs.workflow_id IS NOT NULL
		THEN {{schema}}.docket_workflow_inputs(docket_jobs.id) END AS inputs`

// claimUpdate marks the rows of CTE "c" running under one new claim id
// and returns them in claim order.
const claimUpdate = `, k AS (
	SELECT nextval('{{schema}}.docket_claims_seq') AS next_claim
), u AS (
	UPDATE {{schema}}.docket_jobs
	SET state = 'running', attempts = attempts + 1, locked_by = $4, locked_at = now(),
		lease_until = now() + $5::bigint * interval '1 millisecond', claim_id = k.next_claim
	FROM k
	WHERE id = ANY(ARRAY(SELECT id FROM c))
	RETURNING ` + jobColumns + `, ready_seq, ` + claimSignal + `, ` + claimInputs + `
)
SELECT * FROM u ORDER BY priority DESC, ready_seq`

// sqlClaimSettings is pgsql.IndexSettings for a claim, with two more settings.
// A generic plan spares the claim its planning, about a fifth of its cost,
// which the plan cache would otherwise pay on most claims because it finds
// the custom plans cheaper; TestHotPathPlans checks that generic plans use
// the indexes. And the claim commits without waiting for its WAL flush: a
// claim lost in a database crash only puts its jobs back to ready, which
// at-least-once delivery allows, and the first durable commit after it (an
// outcome, say) flushes it anyway.
const sqlClaimSettings = `SELECT set_config('enable_seqscan', 'off', true),
	set_config('plan_cache_mode', 'force_generic_plan', true),
	set_config('synchronous_commit', 'off', true)`

var (
	// sqlClaim takes up to $3 ready jobs of kinds $2 from the (queue,
	// priority, after, upto) ranges $1, $6, $7, $8 of ready_seq, probing them
	// in that order: per range one descent of docket_jobs_claim_idx to the
	// first entry after the cursor. Entries behind the cursor — jobs already claimed, which a
	// long transaction elsewhere may keep vacuum from removing — are never
	// visited. The outer UPDATE finds rows by id = ANY(array) so no
	// statistics can turn it into a join over the whole table.
	sqlClaim = pgsql.SQL(`WITH c AS (
	SELECT j.id
	FROM unnest($1::text[], $6::smallint[], $7::bigint[], $8::bigint[]) AS p(queue, priority, after, upto)
	CROSS JOIN LATERAL (
		SELECT id FROM {{schema}}.docket_jobs
		WHERE state = 'ready' AND queue = p.queue AND priority = p.priority
			AND ready_seq > p.after AND ready_seq <= p.upto AND kind = ANY($2::text[])
		ORDER BY ready_seq
		LIMIT $3
		FOR NO KEY UPDATE SKIP LOCKED
	) j
	LIMIT $3
)` + claimUpdate)

	// sqlClaimCapped is sqlClaim for one queue $1 where no tenant gets more
	// than $6 of the batch. It walks the queue's distinct tenants with a
	// skip scan over docket_jobs_tenant_idx and takes each tenant's head;
	// "tenant <> ''" is what lets it use that index, which no other
	// statement can. Jobs without a tenant are not in that index (it would
	// cost every insert an entry): they count as one more tenant, looked for
	// among the queue's first 4×$3 ready jobs through the claim index. Of
	// all these heads it keeps the best $3.
	sqlClaimCapped = pgsql.SQL(`WITH RECURSIVE t(tenant) AS (
	SELECT min(tenant) FROM {{schema}}.docket_jobs WHERE state = 'ready' AND tenant <> '' AND queue = $1
	UNION ALL
	SELECT (SELECT min(tenant) FROM {{schema}}.docket_jobs
		WHERE state = 'ready' AND tenant <> '' AND queue = $1 AND tenant > t.tenant)
	FROM t WHERE t.tenant IS NOT NULL
), untenanted AS (
	SELECT id, priority, ready_seq FROM {{schema}}.docket_jobs
	WHERE id = ANY(ARRAY(
		SELECT id FROM {{schema}}.docket_jobs
		WHERE state = 'ready' AND queue = $1 AND kind = ANY($2::text[])
		ORDER BY priority DESC, ready_seq
		LIMIT 4 * $3))
		AND state = 'ready' AND tenant = ''
	ORDER BY priority DESC, ready_seq
	LIMIT $6
	FOR NO KEY UPDATE SKIP LOCKED
), c AS (
	SELECT id FROM (
		SELECT h.id, h.priority, h.ready_seq
		FROM t CROSS JOIN LATERAL (
			SELECT id, priority, ready_seq FROM {{schema}}.docket_jobs
			WHERE state = 'ready' AND tenant <> '' AND queue = $1 AND tenant = t.tenant AND kind = ANY($2::text[])
			ORDER BY priority DESC, ready_seq
			LIMIT $6
			FOR NO KEY UPDATE SKIP LOCKED
		) h
		WHERE t.tenant IS NOT NULL
		UNION ALL
		SELECT id, priority, ready_seq FROM untenanted
	) heads
	ORDER BY priority DESC, ready_seq
	LIMIT $3
)` + claimUpdate)
)

// ClaimParams selects what a claim takes.
type ClaimParams struct {
	// Worker is the claiming process's id, written to locked_by. Required.
	Worker uuid.UUID
	// Queues to claim from, tried in order. At least one.
	Queues []string
	// Kinds the worker has handlers for; jobs of other kinds are left alone.
	// At least one.
	Kinds []string
	// Limit is the most jobs to take, usually the worker's free slots. At least 1.
	Limit int
	// Lease is how long the claim is valid without a heartbeat. Required.
	Lease time.Duration
	// TenantCap, when positive, is the most jobs one tenant gets in this
	// batch; zero means no cap. Jobs without a tenant count as one more
	// tenant, looked for among the queue's first 4×Limit ready jobs only:
	// behind a deeper flood they wait as in an uncapped queue, so give every
	// job of a capped queue a tenant when that matters.
	TenantCap int
}

var errBadClaim = errors.New("docket: invalid claim")

// Claim takes up to p.Limit ready jobs, highest priority first, then oldest
// run_at, then id, marking them running under p.Worker with a lease. Rows
// locked by concurrent claimers are skipped, never waited for. With a
// TenantCap it claims per queue, capping each tenant's share of the batch.
//
// Unless db is a pgx.Tx, the claim is a transaction of its own, planned
// with a generic plan and committed without waiting for its WAL flush (see
// sqlClaimSettings); in a caller's transaction the caller's settings hold,
// but for sequential scans, off for the claim alone.
func (q *Queue) Claim(ctx context.Context, db DB, p ClaimParams) ([]*core.Job, error) {
	if p.Worker == uuid.Nil || len(p.Queues) == 0 || len(p.Kinds) == 0 || p.Limit < 1 || p.Lease <= 0 {
		return nil, fmt.Errorf("%w: want a worker id, queues, kinds, a positive limit and lease", errBadClaim)
	}
	lease := p.Lease.Milliseconds()
	if p.TenantCap <= 0 {
		return q.claimByCursor(ctx, db, p, lease)
	}
	var out []*core.Job
	for _, name := range p.Queues {
		jobs, _, err := q.runClaim(ctx, db, sqlClaimCapped.For(q.schema), name, p.Kinds, p.Limit-len(out), p.Worker, lease, p.TenantCap)
		if err != nil {
			return out, err
		}
		out = append(out, jobs...)
		if len(out) >= p.Limit {
			break
		}
	}
	return out, nil
}

// claimByCursor runs the uncapped claim, each (queue, priority) scanned
// from this Queue's cursor for it, and moves the cursors on.
func (q *Queue) claimByCursor(ctx context.Context, db DB, p ClaimParams, lease int64) ([]*core.Job, error) {
	plan := q.cursors.plan(p.Queues, p.Kinds, time.Now())
	q.runSweeps(ctx, db, plan.sweeps)
	jobs, seqs, err := q.runClaim(ctx, db, sqlClaim.For(q.schema), plan.queues, p.Kinds, p.Limit, p.Worker, lease,
		plan.priorities, plan.after, plan.upto)
	if err != nil {
		return nil, err
	}
	q.cursors.advance(plan, jobs, seqs, p.Limit, time.Now())
	return jobs, nil
}

// runClaim runs a claim statement with sqlClaimSettings (see pgsql.Run for a
// caller's transaction).
func (q *Queue) runClaim(ctx context.Context, db DB, sql string, args ...any) ([]*core.Job, []int64, error) {
	var jobs []*core.Job
	var seqs []int64
	err := q.run(ctx, db, sqlClaimSettings, sql, args, func(rows pgx.Rows) error {
		var err error
		jobs, seqs, err = scanJobs(rows)
		return err
	})
	if err != nil {
		return nil, nil, err // a failed commit took nothing either
	}
	return jobs, seqs, nil
}

// scanJobs reads the jobs a claim statement (ending in claimUpdate) returns,
// with each job's ready_seq.
func scanJobs(rows pgx.Rows) ([]*core.Job, []int64, error) {
	var out []*core.Job
	var seqs []int64
	var s jobScanner
	for rows.Next() {
		j, seq, err := s.scan(rows)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, j)
		seqs = append(seqs, seq)
	}
	return out, seqs, rows.Err()
}

// scanHandOn reads what completeHandOn returns: the completed ids, and the
// jobs it handed on, in claim order (priority, then ready_seq). A row with
// a null queue is a completed run's id alone.
func scanHandOn(rows pgx.Rows) ([]int64, []*core.Job, error) {
	var done []int64
	type handedJob struct {
		job *core.Job
		seq int64
	}
	var handed []handedJob
	var s jobScanner
	var skip []any // a completed run's row: its id, then nothing
	for rows.Next() {
		if raw := rows.RawValues(); len(raw) > 1 && raw[1] == nil {
			var id int64
			if skip == nil {
				skip = make([]any, len(raw))
			}
			skip[0] = &id
			if err := rows.Scan(skip...); err != nil {
				return nil, nil, err
			}
			done = append(done, id)
			continue
		}
		j, seq, err := s.scan(rows)
		if err != nil {
			return nil, nil, err
		}
		handed = append(handed, handedJob{j, seq})
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	slices.SortFunc(handed, func(a, b handedJob) int {
		if c := cmp.Compare(b.job.Priority, a.job.Priority); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	jobs := make([]*core.Job, len(handed))
	for i, h := range handed {
		jobs[i] = h.job
	}
	return done, jobs, nil
}

// jobScanner reads the rows of claimed jobs: jobColumns, ready_seq,
// claimSignal and claimInputs. Its fields are declared once for all rows:
// Scan takes their addresses, which would otherwise cost each row an
// allocation apiece. Every Scan overwrites them (pgx copies a column's
// bytes into a new slice).
type jobScanner struct {
	payload, meta, signal, inputs []byte
	priority                      int16
	seq                           int64
	queue, kind                   repeated
}

// scan reads the current row of rows as a job and its ready_seq.
func (s *jobScanner) scan(rows pgx.Rows) (*core.Job, int64, error) {
	j := &core.Job{}
	// Payload and meta are read as bytes: into a json.RawMessage pgx
	// would run them through json.Unmarshal, which only checks what
	// jsonb already guarantees.
	// A claim sets locked_at and lease_until, so they are never null here.
	s.queue.dst, s.kind.dst = &j.Queue, &j.Kind
	if err := rows.Scan(&j.ID, &s.queue, &s.kind, &s.priority, &j.RunAt, &j.CreatedAt, &j.Attempt,
		&j.MaxAttempts, &j.UniqueKey, &j.Tenant, &j.SerialKey, &s.payload, &s.meta,
		&j.LockedAt, &j.LeaseUntil, &j.LastError, &j.ClaimID, &s.seq, &s.signal, &s.inputs); err != nil {
		return nil, 0, err
	}
	if s.signal != nil {
		if err := scanSignal(j, s.signal); err != nil {
			return nil, 0, err
		}
	}
	j.Priority, j.Payload = int(s.priority), s.payload
	if s.inputs != nil {
		core.SetInputs(j, s.inputs)
	}
	if s.meta != nil {
		if err := json.Unmarshal(s.meta, &j.Meta); err != nil {
			return nil, 0, fmt.Errorf("docket: job %d kind %s: decode meta: %w", j.ID, j.Kind, err)
		}
	}
	return j, s.seq, nil
}

// repeated scans a text column whose value mostly repeats from row to row
// (a job's queue and kind) into dst: a row with the previous row's value
// shares its string instead of allocating one.
type repeated struct {
	dst  *string
	last string
}

// ScanBytes sets *dst to src as a string (pgtype.BytesScanner); src is
// only valid during the call. The column is never null.
func (r *repeated) ScanBytes(src []byte) error {
	if string(src) != r.last { // compared without a conversion
		r.last = string(src)
	}
	*r.dst = r.last
	return nil
}
