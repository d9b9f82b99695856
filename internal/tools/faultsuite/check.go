package faultsuite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Counts is what Check found in a schema after a run.
type Counts struct {
	Enqueued int `json:"enqueued"` // jobs in committed batches
	Doomed   int `json:"doomed"`   // of which meant to end dead

	Finished    int `json:"finished"`     // rows in history and dead letters
	FinishedIDs int `json:"finished_ids"` // distinct job ids among them
	FinishedNs  int `json:"finished_ns"`  // distinct job numbers among them
	MinN        int `json:"min_n"`
	MaxN        int `json:"max_n"`
	Done        int `json:"done"`
	Dead        int `json:"dead"`
	DeadNotDoom int `json:"dead_not_doomed"` // dead jobs that were not meant to be
	Left        int `json:"left"`            // still in the jobs table
	Running     int `json:"running"`         // of which running
	Retried     int `json:"retried"`         // done after more than one attempt

	TxDone     int `json:"tx_done"`
	TxEffects  int `json:"tx_effects"`
	TxMissing  int `json:"tx_missing"`  // done transactional jobs without an effect
	TxDoubled  int `json:"tx_doubled"`  // transactional jobs with more than one
	TxOrphaned int `json:"tx_orphaned"` // effects of transactional jobs not done

	PlainDone    int `json:"plain_done"`
	PlainEffects int `json:"plain_effects"`
	PlainMissing int `json:"plain_missing"` // done plain jobs without an effect
}

// sqlCheck counts, for the harness's Work kinds, what Counts holds.
const sqlCheck = `WITH f AS (
	SELECT id, (payload->>'n')::int AS n, kind, false AS dead, attempts, payload->>'mode' AS mode
	FROM {{s}}.docket_jobs_done WHERE kind IN ('` + KindPlain + `', '` + KindTx + `')
	UNION ALL
	SELECT id, (payload->>'n')::int, kind, true, attempts, payload->>'mode'
	FROM {{s}}.docket_jobs_dead WHERE kind IN ('` + KindPlain + `', '` + KindTx + `')
), e AS (
	SELECT job_id, kind, count(*) AS runs FROM {{s}}.effects GROUP BY job_id, kind
)
SELECT
	(SELECT COALESCE(sum(jobs), 0) FROM {{s}}.batches),
	(SELECT COALESCE(sum(doomed), 0) FROM {{s}}.batches),
	(SELECT count(*) FROM f), (SELECT count(DISTINCT id) FROM f), (SELECT count(DISTINCT n) FROM f),
	(SELECT COALESCE(min(n), 0) FROM f), (SELECT COALESCE(max(n), -1) FROM f),
	(SELECT count(*) FROM f WHERE NOT dead), (SELECT count(*) FROM f WHERE dead),
	(SELECT count(*) FROM f WHERE dead AND mode IS DISTINCT FROM '` + ModeDoomed + `'),
	(SELECT count(*) FROM {{s}}.docket_jobs WHERE kind IN ('` + KindPlain + `', '` + KindTx + `')),
	(SELECT count(*) FROM {{s}}.docket_jobs WHERE state = 'running'),
	(SELECT count(*) FROM f WHERE NOT dead AND attempts > 1),
	(SELECT count(*) FROM f WHERE NOT dead AND kind = '` + KindTx + `'),
	(SELECT COALESCE(sum(runs), 0) FROM e WHERE kind = '` + KindTx + `'),
	(SELECT count(DISTINCT f.id) FROM f LEFT JOIN e ON e.job_id = f.id WHERE NOT f.dead AND f.kind = '` + KindTx + `' AND e.job_id IS NULL),
	(SELECT count(*) FROM e WHERE kind = '` + KindTx + `' AND runs > 1),
	(SELECT count(*) FROM e LEFT JOIN f ON f.id = e.job_id AND NOT f.dead WHERE e.kind = '` + KindTx + `' AND f.id IS NULL),
	(SELECT count(*) FROM f WHERE NOT dead AND kind = '` + KindPlain + `'),
	(SELECT COALESCE(sum(runs), 0) FROM e WHERE kind = '` + KindPlain + `'),
	(SELECT count(DISTINCT f.id) FROM f LEFT JOIN e ON e.job_id = f.id WHERE NOT f.dead AND f.kind = '` + KindPlain + `' AND e.job_id IS NULL)`

// Check counts what a run left in schema.
func Check(ctx context.Context, db *pgxpool.Pool, schema string) (Counts, error) {
	var c Counts
	sql := strings.ReplaceAll(sqlCheck, "{{s}}", pgx.Identifier{schema}.Sanitize())
	// The CTEs carry no statistics: the planner would join them in nested
	// loops, quadratic in the jobs.
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL enable_nestloop = off"); err != nil {
			return err
		}
		return tx.QueryRow(ctx, sql).Scan(&c.Enqueued, &c.Doomed, &c.Finished, &c.FinishedIDs, &c.FinishedNs,
			&c.MinN, &c.MaxN, &c.Done, &c.Dead, &c.DeadNotDoom, &c.Left, &c.Running, &c.Retried,
			&c.TxDone, &c.TxEffects, &c.TxMissing, &c.TxDoubled, &c.TxOrphaned, &c.PlainDone, &c.PlainEffects, &c.PlainMissing)
	})
	if err != nil {
		return c, fmt.Errorf("faultsuite: check: %w", err)
	}
	return c, nil
}

// Violations returns the invariants c breaks, each as a sentence; none
// means every job enqueued finished exactly once, in history or (if meant
// to) in dead letters, none is left or running, every transactional job's
// effect exists exactly once, and every plain job's effect at least once.
func (c Counts) Violations() []string {
	var v []string
	if c.Finished != c.Enqueued || c.FinishedIDs != c.Enqueued || c.FinishedNs != c.Enqueued ||
		(c.Enqueued > 0 && (c.MinN != 0 || c.MaxN != c.Enqueued-1)) {
		v = append(v, fmt.Sprintf("%d jobs enqueued, but history and dead letters hold %d rows for %d job ids and %d job numbers (%d..%d): not every job exactly once",
			c.Enqueued, c.Finished, c.FinishedIDs, c.FinishedNs, c.MinN, c.MaxN))
	}
	if c.Dead != c.Doomed || c.DeadNotDoom != 0 {
		v = append(v, fmt.Sprintf("%d jobs dead, %d of them not meant to be; want the %d doomed ones", c.Dead, c.DeadNotDoom, c.Doomed))
	}
	if c.Left != 0 || c.Running != 0 {
		v = append(v, fmt.Sprintf("%d jobs left in the jobs table, %d jobs running", c.Left, c.Running))
	}
	if c.TxMissing != 0 || c.TxDoubled != 0 || c.TxOrphaned != 0 {
		v = append(v, fmt.Sprintf("%d transactional jobs done with %d effects: %d have none, %d more than one, %d effects belong to no done job; want exactly one each",
			c.TxDone, c.TxEffects, c.TxMissing, c.TxDoubled, c.TxOrphaned))
	}
	if c.PlainMissing != 0 {
		v = append(v, fmt.Sprintf("%d plain jobs done, %d without an effect: want one at least", c.PlainDone, c.PlainMissing))
	}
	return v
}

// sessions returns how many server sessions the worker processes with ids
// hold, by their application_name.
func sessions(ctx context.Context, db *pgxpool.Pool, ids ...string) (int, error) {
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = appPrefix + id
	}
	var n int
	err := db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = ANY($1)`, names).Scan(&n)
	return n, err
}

// WaitSessionsGone waits up to timeout for the sessions of the worker
// processes with ids to end (a server notices a closed connection within
// moments; one behind a fault proxy as soon as the proxy passes the close
// on), and returns how many are left.
func WaitSessionsGone(ctx context.Context, db *pgxpool.Pool, timeout time.Duration, ids ...string) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		n, err := sessions(ctx, db, ids...)
		if err != nil || n == 0 || time.Now().After(deadline) {
			return n, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
