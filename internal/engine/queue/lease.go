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
	"github.com/jackc/pgx/v5"
)

// Run names one claimed run of a job: the job's id and the claim it came
// from. Outcomes and heartbeats act on runs, not on jobs.
type Run struct {
	ID      int64
	ClaimID int64
	// Result is what the run recorded with SetResult (nil: nothing),
	// written by Complete, Fail (when the job dead-letters) and DeadLetter.
	Result json.RawMessage
	// SerialKey is the job's serial key, if any: Complete then hands the
	// key on in its own statement (see completeSerial).
	SerialKey string
}

// RunOf returns the run of a job returned by Claim, with the result its
// handler recorded.
func RunOf(j *core.Job) Run {
	return Run{ID: j.ID, ClaimID: j.ClaimID, Result: core.Result(j), SerialKey: j.SerialKey}
}

var (
	// sqlHeartbeat extends the leases of runs ($1 ids, $4 their claims, see
	// runClaims) of worker $2 by $3 ms. A lease that ran out but was not
	// reaped yet is extended too: the claim is still the run's, nobody else
	// took it. Each run still held comes back with whether an operator
	// asked to cancel its job.
	sqlHeartbeat = pgsql.SQL(`UPDATE {{schema}}.docket_jobs j
SET lease_until = now() + $3::bigint * interval '1 millisecond'
WHERE j.id = ANY($1::bigint[]) AND j.claim_id = ($4::jsonb ->> j.id::text)::bigint AND j.locked_by = $2
RETURNING j.id, j.cancel_requested_at IS NOT NULL`)

	// sqlHeartbeatProgress is sqlHeartbeat that also records the progress
	// in $5, a JSON object from job id to {"v": value, "m": message}, of
	// the runs it names; the others keep theirs. It runs instead of
	// sqlHeartbeat only when some handler reported progress.
	sqlHeartbeatProgress = pgsql.SQL(`UPDATE {{schema}}.docket_jobs j
SET lease_until = now() + $3::bigint * interval '1 millisecond',
	progress = CASE WHEN $5::jsonb ? j.id::text THEN NULLIF($5::jsonb -> j.id::text -> 'v', 'null'::jsonb) ELSE j.progress END,
	progress_message = CASE WHEN $5::jsonb ? j.id::text THEN NULLIF($5::jsonb -> j.id::text ->> 'm', '') ELSE j.progress_message END,
	progress_at = CASE WHEN $5::jsonb ? j.id::text THEN now() ELSE j.progress_at END
WHERE j.id = ANY($1::bigint[]) AND j.claim_id = ($4::jsonb ->> j.id::text)::bigint AND j.locked_by = $2
RETURNING j.id, j.cancel_requested_at IS NOT NULL`)
)

// Progress is the progress a run's handler reported last (see
// handlers.SetProgress), to be written with a heartbeat.
type Progress struct {
	ID      int64
	Value   json.RawMessage // valid JSON; nil: none
	Message string
}

// Beat is what a heartbeat found.
type Beat struct {
	// Held are the ids of the jobs whose run the worker still holds.
	Held []int64
	// Cancel are those of Held whose job an operator asked to cancel.
	Cancel []int64
}

// Heartbeat extends the leases of the worker's runs by lease, records the
// progress of those in progress (of runs it still holds), and returns the
// runs it still holds. A job missing from Held was lost: reaped after its
// lease expired and maybe claimed again, by another worker or by this one
// under a new claim. That run's handler should be cancelled and its outcome
// dropped. A job in Cancel should have its handler cancelled: its run can
// only end cancelled (see Cancelled).
func (q *Queue) Heartbeat(ctx context.Context, db DB, worker uuid.UUID, runs []Run, lease time.Duration, progress []Progress) (Beat, error) {
	var b Beat
	if len(runs) == 0 {
		return b, nil
	}
	ids, claims := runClaims(runs)
	sql, args := sqlHeartbeat.For(q.schema), []any{ids, worker, lease.Milliseconds(), claims}
	if len(progress) > 0 {
		sql, args = sqlHeartbeatProgress.For(q.schema), append(args, progressJSON(progress))
	}
	err := q.run(ctx, db, pgsql.IndexSettings, sql, args, func(rows pgx.Rows) error {
		for rows.Next() {
			var id int64
			var cancel bool
			if err := rows.Scan(&id, &cancel); err != nil {
				return err
			}
			b.Held = append(b.Held, id)
			if cancel {
				b.Cancel = append(b.Cancel, id)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return Beat{}, err
	}
	return b, nil
}

// progressJSON encodes progress as sqlHeartbeatProgress takes it: a
// string, not bytes (see runClaims).
func progressJSON(progress []Progress) string {
	type entry struct {
		V json.RawMessage `json:"v"`
		M string          `json:"m"`
	}
	m := make(map[string]entry, len(progress))
	for _, p := range progress {
		m[strconv.FormatInt(p.ID, 10)] = entry{V: p.Value, M: p.Message}
	}
	b, _ := json.Marshal(m) // values are valid JSON (checked by SetProgress)
	return string(b)
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
