package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	docket "github.com/docketq/docket/internal/core"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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
func (c *Client) Claim(ctx context.Context, db Pgx, p ClaimParams) ([]*docket.Job, error) {
	if p.Worker == uuid.Nil || len(p.Queues) == 0 || len(p.Kinds) == 0 || p.Limit < 1 || p.Lease <= 0 {
		return nil, fmt.Errorf("%w: want a worker id, queues, kinds, a positive limit and lease", errBadClaim)
	}
	lease := p.Lease.Milliseconds()
	if p.TenantCap <= 0 {
		return c.claimByCursor(ctx, db, p, lease)
	}
	var out []*docket.Job
	for _, q := range p.Queues {
		jobs, _, err := c.runClaim(ctx, db, c.q.claimCapped, q, p.Kinds, p.Limit-len(out), p.Worker, lease, p.TenantCap)
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
// from this client's cursor for it, and moves the cursors on.
func (c *Client) claimByCursor(ctx context.Context, db Pgx, p ClaimParams, lease int64) ([]*docket.Job, error) {
	plan := c.cursors.plan(p.Queues, p.Kinds, time.Now())
	c.runSweeps(ctx, db, plan.sweeps)
	jobs, seqs, err := c.runClaim(ctx, db, c.q.claim, plan.queues, p.Kinds, p.Limit, p.Worker, lease,
		plan.priorities, plan.after, plan.upto)
	if err != nil {
		return nil, err
	}
	c.cursors.advance(plan, jobs, seqs, p.Limit, time.Now())
	return jobs, nil
}

// runClaim runs a claim statement with sqlClaimSettings (see run for a
// caller's transaction).
func (c *Client) runClaim(ctx context.Context, db Pgx, sql string, args ...any) ([]*docket.Job, []int64, error) {
	var jobs []*docket.Job
	var seqs []int64
	err := c.run(ctx, db, sqlClaimSettings, sql, args, func(rows pgx.Rows) error {
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
func scanJobs(rows pgx.Rows) ([]*docket.Job, []int64, error) {
	var out []*docket.Job
	var seqs []int64
	for rows.Next() {
		j := &docket.Job{}
		// Payload and meta are read as bytes: into a json.RawMessage pgx
		// would run them through json.Unmarshal, which only checks what
		// jsonb already guarantees.
		var payload, meta []byte
		var lockedAt, leaseUntil *time.Time
		var priority int16
		var seq int64
		if err := rows.Scan(&j.ID, &j.Queue, &j.Kind, &priority, &j.RunAt, &j.CreatedAt, &j.Attempt,
			&j.MaxAttempts, &j.UniqueKey, &j.Tenant, &j.SerialKey, &payload, &meta,
			&lockedAt, &leaseUntil, &j.LastError, &j.ClaimID, &seq); err != nil {
			return nil, nil, err
		}
		j.Priority, j.Payload = int(priority), payload
		if lockedAt != nil {
			j.LockedAt = *lockedAt
		}
		if leaseUntil != nil {
			j.LeaseUntil = *leaseUntil
		}
		if meta != nil {
			if err := json.Unmarshal(meta, &j.Meta); err != nil {
				return nil, nil, fmt.Errorf("docket: job %d kind %s: decode meta: %w", j.ID, j.Kind, err)
			}
		}
		out = append(out, j)
		seqs = append(seqs, seq)
	}
	return out, seqs, rows.Err()
}
