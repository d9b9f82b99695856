package queue

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/google/uuid"
)

// Run names one claimed run of a job: the job's id and the claim it came
// from. Outcomes and heartbeats act on runs, not on jobs.
type Run struct {
	ID      int64
	ClaimID int64
	// Result is what the run recorded with SetResult (nil: nothing),
	// written by Complete, Fail (when the job dead-letters) and DeadLetter.
	Result json.RawMessage
}

// RunOf returns the run of a job returned by Claim, with the result its
// handler recorded.
func RunOf(j *core.Job) Run { return Run{ID: j.ID, ClaimID: j.ClaimID, Result: core.Result(j)} }

var (
	// sqlHeartbeat extends the leases of runs ($1 ids, $4 their claims, see
	// runClaims) of worker $2 by $3 ms. A lease that ran out but was not
	// reaped yet is extended too: the claim is still the run's, nobody else
	// took it.
	sqlHeartbeat = pgsql.SQL(`UPDATE {{schema}}.docket_jobs j
SET lease_until = now() + $3::bigint * interval '1 millisecond'
WHERE j.id = ANY($1::bigint[]) AND j.claim_id = ($4::jsonb ->> j.id::text)::bigint AND j.locked_by = $2
RETURNING j.id`)
)

// Heartbeat extends the leases of the worker's runs by lease and returns the
// ids of the jobs whose run it still holds. A job missing from the result
// was lost: reaped after its lease expired and maybe claimed again, by
// another worker or by this one under a new claim. That run's handler
// should be cancelled and its outcome dropped.
func (q *Queue) Heartbeat(ctx context.Context, db DB, worker uuid.UUID, runs []Run, lease time.Duration) ([]int64, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	ids, claims := runClaims(runs)
	return q.ids(ctx, db, sqlHeartbeat.For(q.schema), ids, worker, lease.Milliseconds(), claims)
}

// runClaims returns the ids of runs, in order, and their claims as the
// JSON object from job id to claim id that heartbeat, complete and release
// match rows against (see the package doc). Of two runs of one job, the later
// claim is kept: the earlier one is stale and would match nothing anyway.
func runClaims(runs []Run) (ids []int64, claims string) {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b Run) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.ClaimID, b.ClaimID))
	})
	ids = make([]int64, 0, len(sorted))
	buf := make([]byte, 0, 24*len(sorted)+2)
	buf = append(buf, '{')
	for i, r := range sorted {
		if i+1 < len(sorted) && sorted[i+1].ID == r.ID {
			continue // a later claim of the same job follows
		}
		if len(ids) > 0 {
			buf = append(buf, ',')
		}
		ids = append(ids, r.ID)
		buf = append(buf, '"')
		buf = strconv.AppendInt(buf, r.ID, 10)
		buf = append(buf, '"', ':')
		buf = strconv.AppendInt(buf, r.ClaimID, 10)
	}
	// A string, not bytes: with pgx's exec and simple-protocol query modes
	// (PgBouncer in transaction mode) a []byte is sent as bytea text, which
	// jsonb cannot read.
	return ids, string(append(buf, '}'))
}

// runResults returns the results recorded by runs as the JSON object from
// job id to result that the outcome statements read ($N::jsonb -> id), or
// nil (SQL NULL) when no run recorded one. Of two runs of one job, the
// later claim's is kept, as in runClaims.
func runResults[R any](runs []R, run func(R) Run) any {
	found := false
	for _, x := range runs {
		if run(x).Result != nil {
			found = true
			break
		}
	}
	if !found {
		return nil // the common case: nothing to build
	}
	latest := make(map[int64]Run, len(runs))
	for _, x := range runs {
		r := run(x)
		if prev, ok := latest[r.ID]; !ok || r.ClaimID > prev.ClaimID {
			latest[r.ID] = r
		}
	}
	buf := []byte{'{'}
	for id, r := range latest {
		if r.Result == nil {
			continue
		}
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		buf = append(buf, '"')
		buf = strconv.AppendInt(buf, id, 10)
		buf = append(buf, '"', ':')
		buf = append(buf, r.Result...)
	}
	return string(append(buf, '}')) // a string: see runClaims
}
