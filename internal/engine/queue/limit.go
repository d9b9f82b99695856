package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Claims of jobs a limit governs (migration 013) run docket_claim_limited,
// which grants each key of the limit what its budget allows, and then read
// the hint it leaves when a budget held jobs back, in the same implicit
// transaction.
// The function's rows are named docket_jobs for claimSignal and claimInputs.
var sqlClaimLimited = pgsql.SQL(`SELECT ` + jobColumns + `, ready_seq, ` + claimSignal + `, ` + claimInputs + `
FROM {{schema}}.docket_claim_limited($1, $2::text[], $3::text[], $4, $5, $6,
	$7::text[], $8::smallint[], $9::bigint[], $10::bigint[], $11, $12) AS docket_jobs`)

// jobsPerPlace is how many of a tenant's jobs a worker may hold per place
// of a per-tenant concurrency limit it holds (migration 027): enough that
// a place's next job is at hand when one ends while the claims that top
// the tenants up take a round trip, few enough that a crash strands few
// jobs that never started (they are reaped with their attempt used).
const jobsPerPlace = 4

const (
	sqlLimitWait = `SELECT current_setting('docket.limit_wait_ms', true), current_setting('docket.limit_seen', true),
	current_setting('docket.limit_places', true), current_setting('docket.limit_ahead', true)`

	// sqlLimitedClaimSettings is sqlClaimSettings without the generic
	// plan: the statements inside docket_claim_limited take the limit's
	// columns as parameters, and their generic plans, blind to which
	// branch a limit takes, were measured 100 times slower (240 ms against
	// 2 ms for a per-tenant limit over 3,000 jobs).
	// JIT is off too: with sequential scans off, a statement that has no
	// index path looks costly enough to compile, which took 98 ms.
	sqlLimitedClaimSettings = `SELECT set_config('enable_seqscan', 'off', true),
	set_config('synchronous_commit', 'off', true), set_config('jit', 'off', true)`
)

// LimitedClaimParams selects what a limited claim takes.
type LimitedClaimParams struct {
	// Limit is the name of the limit (docket_limits) whose jobs to claim.
	Limit string
	// Worker, Queues, Kinds, Limit and Lease are as in ClaimParams. Kinds
	// must be kinds the limit governs in those queues: the claim takes any
	// ready job of them, and counts it against the limit.
	Worker uuid.UUID
	Queues []string
	Kinds  []string
	Max    int
	Lease  time.Duration
	// PerTenant says the limit applies per tenant: its claim walks each
	// tenant's jobs, not the claim index from this Queue's cursors.
	PerTenant bool
	// Ahead lets a rate limit without a concurrency cap grant the tokens
	// that fall due within it (migration 029): the jobs claimed for them
	// must not start before LimitedClaim.Due says. Whole milliseconds.
	Ahead time.Duration
}

// LimitedClaim is what a limited claim took and, when the limit's budget
// held ready jobs back, when to try again.
type LimitedClaim struct {
	Jobs []*core.Job
	// Held is true when ready jobs were left for lack of budget, or another
	// worker was claiming for the limit.
	Held bool
	// Wait, when Held, is how long until a rate limit grants its next job;
	// zero means when a running job of the limit ends.
	Wait time.Duration
	// Places, for a per-tenant concurrency limit, is how many of each
	// tenant's places the worker holds now, for the tenants of which it
	// holds jobs (migration 027): it may hold more of a tenant's jobs than
	// places, and must run at most that many of them at once. Tenants not
	// named keep the places an earlier claim gave. Nil for other limits.
	Places map[string]int
	// PlacesSeq orders the claims that returned Places: a later claim's
	// places replace an earlier one's, whatever order they arrive in.
	PlacesSeq int64
	// Due, when the claim took jobs ahead of their tokens, is for each of
	// Jobs how long after the claim returned its token is due: the job
	// must not start before. Zero for a job whose token was in hand; nil
	// when every job's was.
	Due []time.Duration
}

// limitAhead is how docket_claim_limited reports when the jobs a rate
// limit granted are due (migration 029): a token's time, and per key the
// tokens its bucket held and how long before the claim ended it held
// them.
type limitAhead struct {
	TokenMS float64               `json:"token_ms"`
	Keys    map[string][2]float64 `json:"keys"`
}

// due spreads the tokens a claim took ahead over its jobs, in the order
// it returned them: the j-th job of a key (from 1) is due (j - tokens)
// tokens' time after the key's bucket held tokens, age before the claim
// ended. The jobs of a key are alike to its bucket, so which of them gets
// which token does not matter.
func (a limitAhead) due(jobs []*core.Job, perTenant bool) []time.Duration {
	out := make([]time.Duration, len(jobs))
	early := false
	nth := map[string]float64{}
	for i, j := range jobs {
		key := ""
		if perTenant {
			key = j.Tenant
		}
		k, ok := a.Keys[key]
		if !ok {
			continue
		}
		nth[key]++
		if ms := (nth[key]-k[0])*a.TokenMS - k[1]; ms > 0 {
			// Rounded up: a job is never started early by the rounding.
			out[i] = time.Duration(math.Ceil(ms * float64(time.Millisecond)))
			early = true
		}
	}
	if !early {
		return nil
	}
	return out
}

// limitPlaces is how docket_claim_limited reports the places it gave.
type limitPlaces struct {
	Seq    int64          `json:"seq"`
	Places map[string]int `json:"places"`
}

// batchSender is a pool or connection: what sends several statements in one
// round trip.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// ClaimLimited takes up to p.Max ready jobs that limit p.Limit governs, as
// many as its budgets allow, in a transaction of its own (db must not be a
// caller's transaction: a claim's settings would outlive it there).
func (q *Queue) ClaimLimited(ctx context.Context, db DB, p LimitedClaimParams) (LimitedClaim, error) {
	if p.Limit == "" || p.Worker == uuid.Nil || len(p.Queues) == 0 || len(p.Kinds) == 0 || p.Max < 1 || p.Lease <= 0 {
		return LimitedClaim{}, fmt.Errorf("%w: want a limit, worker id, queues, kinds, a positive max and lease", errBadClaim)
	}
	b, ok := db.(batchSender)
	if !ok || pgsql.IsTx(db) {
		return LimitedClaim{}, fmt.Errorf("%w: a limited claim needs a pool or connection of its own", errBadClaim)
	}
	// A limit over the claim index claims from cursors of its own (its
	// kinds are its key), as the ordinary claim does (see cursor.go).
	var plan claimPlan
	if !p.PerTenant {
		plan = q.cursors.plan(p.Queues, p.Kinds, time.Now())
		q.runSweeps(ctx, db, plan.sweeps)
	}
	batch := &pgx.Batch{}
	batch.Queue(sqlLimitedClaimSettings)
	batch.Queue(sqlClaimLimited.For(q.schema), p.Limit, p.Queues, p.Kinds, p.Max, p.Worker, p.Lease.Milliseconds(),
		plan.queues, plan.priorities, plan.after, plan.upto, jobsPerPlace, p.Ahead.Milliseconds())
	batch.Queue(sqlLimitWait)
	res := b.SendBatch(ctx, batch)
	var out LimitedClaim
	var seqs []int64
	_, err := res.Exec()
	if err == nil {
		var rows pgx.Rows
		if rows, err = res.Query(); err == nil {
			out.Jobs, seqs, err = scanJobs(rows)
			rows.Close()
		}
	}
	var wait, seen, places, ahead string
	if err == nil {
		err = res.QueryRow().Scan(&wait, &seen, &places, &ahead)
	}
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return LimitedClaim{}, q.wrapErr(err) // a failed commit took nothing either
	}
	if ahead != "" {
		var a limitAhead
		if perr := json.Unmarshal([]byte(ahead), &a); perr != nil {
			// The jobs are the worker's, and none may start before its
			// token: hold them all the longest any could wait.
			out.Due = make([]time.Duration, len(out.Jobs))
			for i := range out.Due {
				out.Due[i] = p.Ahead
			}
			return out, fmt.Errorf("docket: limited claim left ahead %q: %w", ahead, perr)
		}
		out.Due = a.due(out.Jobs, p.PerTenant)
	}
	if wait != "" {
		ms, perr := strconv.ParseInt(wait, 10, 64)
		if perr != nil {
			return out, fmt.Errorf("docket: limited claim left wait %q: %w", wait, perr)
		}
		out.Held, out.Wait = true, time.Duration(ms)*time.Millisecond
	}
	if places != "" {
		var lp limitPlaces
		if perr := json.Unmarshal([]byte(places), &lp); perr != nil {
			// The jobs are the worker's: none may run until a later
			// claim says which places it holds.
			out.Places = map[string]int{}
			return out, fmt.Errorf("docket: limited claim left places %q: %w", places, perr)
		}
		out.Places, out.PlacesSeq = lp.Places, lp.Seq
	}
	if !p.PerTenant {
		now := time.Now()
		q.cursors.advance(plan, out.Jobs, seqs, p.Max, now)
		// Ranges that held no job at all: none visible then lies at or
		// below seen, so the next claims need not step over them again
		// (a limited kind with nothing ready, behind other kinds' backlog).
		if len(out.Jobs) == 0 && !out.Held && seen != "" {
			if seq, perr := strconv.ParseInt(seen, 10, 64); perr == nil {
				q.cursors.passed(plan, seq, now)
			}
		}
	}
	return out, nil
}
