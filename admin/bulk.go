package admin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// BulkAction is what Jobs.ApplyMatching does to each job a filter matches.
type BulkAction string

// The bulk actions, as Jobs.Retry, Jobs.Cancel and Jobs.Delete do them to
// one job.
const (
	// BulkRetry makes scheduled jobs due now and replays dead ones; ready
	// and waiting jobs are not matched (they have nothing to hurry).
	BulkRetry BulkAction = "retry"
	// BulkCancel moves scheduled, ready and waiting jobs to the dead-letter
	// table with reason "cancelled".
	BulkCancel BulkAction = "cancel"
	// BulkDelete deletes scheduled, ready, waiting and dead jobs for good.
	BulkDelete BulkAction = "delete"
)

// BulkBatch is how many jobs one statement of a bulk operation touches:
// each batch is its own short statement, so a bulk action over 100,000
// jobs never holds one long transaction (unless the caller passes one).
const BulkBatch = 1000

// MaxMatching bounds the jobs one Jobs.ApplyMatching touches: a filter
// that matches more is applied to the newest MaxMatching.
const MaxMatching = 100_000

// ErrUnsafeFilter is returned by Jobs.Matching and Jobs.ApplyMatching for
// a filter a bulk action refuses: one that names no state, queue, kind,
// tenant, serial key or error (every live job), running or completed jobs
// (a running job is its worker's; history is not acted on), or cancel on
// dead jobs.
var ErrUnsafeFilter = errors.New("docket: filter refused for a bulk action")

// Matching is what a filter matched for a bulk action when Jobs.Matching
// counted it: the preview an operator confirms, and the bound
// Jobs.ApplyMatching keeps to.
type Matching struct {
	// Count is how many jobs the action would touch, at most MaxMatching.
	Count int64
	// More says that more than MaxMatching matched: the action touches the
	// newest MaxMatching of them.
	More bool
	// MaxID is the highest id among them. Jobs with a higher id (enqueued
	// after the count) are never touched.
	MaxID int64
}

// BulkOptions paces Jobs.ApplyMatching.
type BulkOptions struct {
	// Note is the error a cancelled job is given (BulkCancel only).
	Note string
	// Rate, when above zero, is how many jobs per second are acted on, in
	// batches of Rate/20 (at least 1): replaying many dead jobs at once
	// would flood their queue. Zero means batches of BulkBatch, one after
	// the other.
	Rate float64
	// Progress, when set, is called after every batch with the number of
	// jobs acted on so far.
	Progress func(done int64)
}

// checkBulk reports why a bulk action refuses f, if it does.
func checkBulk(f JobFilter, act BulkAction) error {
	if err := f.Check(); err != nil {
		return err
	}
	switch act {
	case BulkRetry, BulkCancel, BulkDelete:
	default:
		return fmt.Errorf("%w: unknown action %q (want retry, cancel or delete)", ErrUnsafeFilter, act)
	}
	switch {
	case f.State == StateCompleted:
		return fmt.Errorf("%w: completed jobs are history: nothing to %s", ErrUnsafeFilter, act)
	case f.State == StateRunning:
		return fmt.Errorf("%w: running jobs are left to their workers", ErrUnsafeFilter)
	case f.State == StateDead && act == BulkCancel:
		return fmt.Errorf("%w: dead jobs cannot be cancelled", ErrUnsafeFilter)
	case f.State == "" && !f.filtered():
		return fmt.Errorf("%w: the filter matches every live job: narrow it by state, queue, kind, tenant, serial key or error", ErrUnsafeFilter)
	}
	return nil
}

// bulkPicks are the statements that pick the ids a bulk action touches,
// per state filter and action ("state/action"): the list's filter ($1 to
// $5, as sqlJobFilter), ids below $6, newest first, at most $7. A running
// job is never picked.
var bulkPicks = func() map[string]*pgsql.Statement {
	out := map[string]*pgsql.Statement{}
	live := func(state, act string) {
		pred := "j.state <> 'running'"
		if act == string(BulkRetry) {
			pred = "j.state = 'scheduled'"
		}
		if state != "" {
			pred += " AND j.state = '" + state + "'" // a bare lowercase word (core.States)
		}
		out[state+"/"+act] = pgsql.SQL(strings.Replace("SELECT j.id FROM {{schema}}.docket_jobs j"+sqlJobFilter, "{{state}}", pred, 1))
	}
	states := []string{""}
	for _, s := range core.States() {
		if string(s) != StateRunning {
			states = append(states, string(s))
		}
	}
	for _, s := range states {
		for _, act := range []BulkAction{BulkRetry, BulkCancel, BulkDelete} {
			live(s, string(act))
		}
	}
	dead := pgsql.SQL(strings.Replace("SELECT j.id FROM {{schema}}.docket_jobs_dead j"+sqlJobFilter, "{{state}}", "true", 1))
	out[StateDead+"/"+string(BulkRetry)] = dead
	out[StateDead+"/"+string(BulkDelete)] = dead
	return out
}()

// The statements that act on the picked ids ($1). Each re-checks the
// job's state, so a job claimed since it was picked is left alone.
var (
	sqlRetryIDs = pgsql.SQL(`UPDATE {{schema}}.docket_jobs
SET state = 'ready', run_at = now(), ready_seq = ` + pgsql.NextReadySeq + `
WHERE id = ANY($1::bigint[]) AND state = 'scheduled'
RETURNING queue`)

	sqlCancelIDs = pgsql.SQL(`WITH gone AS (
	DELETE FROM {{schema}}.docket_jobs
	WHERE id = ANY($1::bigint[]) AND state <> 'running'
	RETURNING *, 'cancelled'::text AS reason, $2::text AS err
)
` + pgsql.DeadInsert)

	sqlDeleteLiveIDs = pgsql.SQL(`DELETE FROM {{schema}}.docket_jobs
WHERE id = ANY($1::bigint[]) AND state <> 'running'
RETURNING id`)

	sqlDeleteDeadIDs = pgsql.SQL(`WITH dead AS (
	DELETE FROM {{schema}}.docket_jobs_dead WHERE id = ANY($1::bigint[]) RETURNING id, queue, dead_at
), logged AS (
	INSERT INTO {{schema}}.docket_dead_removed (queue, dead_minute, n)
	SELECT queue, date_trunc('minute', dead_at), count(*) FROM dead GROUP BY 1, 2
)
SELECT id FROM dead`)

	sqlJobStates = pgsql.SQL(`SELECT id, state FROM {{schema}}.docket_jobs WHERE id = ANY($1::bigint[])
UNION ALL SELECT id, 'dead' FROM {{schema}}.docket_jobs_dead WHERE id = ANY($1::bigint[])`)
)

// pick returns the ids of up to n jobs below before that f matches for act.
func (c *Client) pick(ctx context.Context, db DB, f JobFilter, act BulkAction, before int64, n int) ([]int64, error) {
	st := bulkPicks[f.State+"/"+string(act)]
	// Planned with its values, as Jobs.List: empty filter fields fold away.
	args := []any{pgx.QueryExecModeExec, f.Queue, f.Kind, f.Tenant, f.SerialKey, f.ErrorContains, before, n}
	var ids []int64
	err := c.each(ctx, db, st.For(c.schema), args, func(scan func(...any) error) error {
		var id int64
		err := scan(&id)
		ids = append(ids, id)
		return err
	})
	return ids, err
}

// Matching counts the jobs act would touch among those f matches (f.After
// and f.Limit are ignored: every page), up to MaxMatching, or returns
// ErrUnsafeFilter (see there) or ErrInvalidFilter. Running jobs are never
// counted; BulkRetry counts scheduled and dead jobs.
func (h Jobs) Matching(ctx context.Context, db DB, f JobFilter, act BulkAction) (Matching, error) {
	f.After, f.Limit = 0, 0
	if err := checkBulk(f, act); err != nil {
		return Matching{}, err
	}
	var m Matching
	before := int64(math.MaxInt64)
	for m.Count <= MaxMatching {
		ids, err := h.c.pick(ctx, db, f, act, before, 10*BulkBatch)
		if err != nil {
			return Matching{}, err
		}
		if len(ids) == 0 {
			break
		}
		if m.MaxID == 0 {
			m.MaxID = ids[0]
		}
		m.Count += int64(len(ids))
		before = ids[len(ids)-1]
		if len(ids) < 10*BulkBatch {
			break
		}
	}
	if m.Count > MaxMatching {
		m.Count, m.More = MaxMatching, true
	}
	return m, nil
}

// ApplyMatching does act to the jobs f matches (f.After and f.Limit are
// ignored), within the bound m that Jobs.Matching returned: only jobs with
// an id up to m.MaxID, newest first, at most m.Count of them, so that it
// never touches more jobs than the operator was shown. It works in batches
// of at most BulkBatch jobs, one statement each (two for a retry that
// makes jobs due now: the update and the wake-up of their queues), and
// returns how many jobs it acted on: fewer than m.Count when some were
// claimed, finished or removed meanwhile. A running job is never touched.
// When ctx ends it stops between batches and returns what it did with
// ctx's error.
func (h Jobs) ApplyMatching(ctx context.Context, db DB, f JobFilter, act BulkAction, m Matching, o BulkOptions) (int64, error) {
	c := h.c
	f.After, f.Limit = 0, 0
	if err := checkBulk(f, act); err != nil {
		return 0, err
	}
	batch := BulkBatch
	if o.Rate > 0 {
		batch = min(BulkBatch, max(1, int(o.Rate/replayBatchPerSecond)))
	}
	var done int64
	before, left := m.MaxID+1, m.Count
	var last time.Time
	for left > 0 {
		if o.Rate > 0 && !last.IsZero() {
			due := last.Add(time.Duration(float64(batch) / o.Rate * float64(time.Second)))
			if err := sleepCtx(ctx, time.Until(due)); err != nil {
				return done, err
			}
		}
		last = time.Now()
		ids, err := c.pick(ctx, db, f, act, before, int(min(int64(batch), left)))
		if err != nil {
			return done, err
		}
		if len(ids) == 0 {
			break
		}
		before, left = ids[len(ids)-1], left-int64(len(ids))
		n, err := c.applyIDs(ctx, db, f.State == StateDead, act, ids, o.Note)
		done += n
		if err != nil {
			return done, err
		}
		if o.Progress != nil {
			o.Progress(done)
		}
	}
	return done, nil
}

// applyIDs does act to the live (or dead) jobs ids in one statement.
func (c *Client) applyIDs(ctx context.Context, db DB, dead bool, act BulkAction, ids []int64, note string) (int64, error) {
	switch {
	case dead && act == BulkRetry:
		res, err := c.replayIDs(ctx, db, ids, ReplayOptions{Rate: -1})
		return int64(len(res.Replayed)), err
	case dead:
		got, err := c.ids(ctx, db, sqlDeleteDeadIDs.For(c.schema), ids)
		return int64(len(got)), err
	case act == BulkRetry:
		queues, err := pgsql.Column[string](ctx, db, sqlRetryIDs.For(c.schema), ids)
		if err != nil {
			return 0, c.wrapErr(err)
		}
		var distinct []string
		seen := map[string]bool{}
		for _, q := range queues {
			if !seen[q] {
				seen[q] = true
				distinct = append(distinct, q)
			}
		}
		return int64(len(queues)), c.notify(ctx, db, distinct)
	case act == BulkCancel:
		got, err := c.ids(ctx, db, sqlCancelIDs.For(c.schema), ids, note)
		return int64(len(got)), err
	default:
		got, err := c.ids(ctx, db, sqlDeleteLiveIDs.For(c.schema), ids)
		return int64(len(got)), err
	}
}

// States returns where each of ids is now: its live state (one of
// core.States) or StateDead. Ids that are neither live nor dead (unknown,
// or finished) are missing from the map. A selection's preview uses it to
// say how many jobs an action would touch.
func (h Jobs) States(ctx context.Context, db DB, ids []int64) (map[int64]string, error) {
	c := h.c
	out := make(map[int64]string, len(ids))
	err := c.each(ctx, db, sqlJobStates.For(c.schema), []any{ids}, func(scan func(...any) error) error {
		var id int64
		var state string
		err := scan(&id, &state)
		out[id] = state
		return err
	})
	return out, err
}
