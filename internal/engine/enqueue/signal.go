package enqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// Signal errors; docket re-exports them and documents each.
var (
	ErrInvalidSignal    = errors.New("docket: invalid signal")
	ErrSignalNotAwaited = errors.New("docket: no step of the workflow waits for this signal")
	ErrSignalSent       = errors.New("docket: signal already sent to the workflow")
)

// Signalled reports a signal sent; docket.Signalled documents it.
type Signalled struct {
	Waiting  []int64
	Released []int64
}

var (
	// sqlSignalCheck locks the steps of workflow $1 waiting for signal $2
	// (in id order), then reports whether the workflow exists, is
	// cancelled, has a job left in the jobs table, has a dead job, whether
	// the signal was sent already, and the steps: their ids, and whether
	// each is waiting for the signal now (its parents are done: wait_until
	// set by docket_workflow_gate or at enqueue). The lock orders Signal
	// with a concurrent release of one of the steps (migration 022).
	sqlSignalCheck = pgsql.SQL(`WITH steps AS (
	SELECT j.id, j.wait_until IS NOT NULL AS due
	FROM {{schema}}.docket_workflow_waits w
	JOIN {{schema}}.docket_jobs j ON j.id = w.job_id
	WHERE w.workflow_id = $1 AND w.signal = $2 AND j.state = 'waiting'
	ORDER BY j.id
	FOR UPDATE OF j
)
SELECT EXISTS (SELECT 1 FROM {{schema}}.docket_workflows WHERE id = $1),
	EXISTS (SELECT 1 FROM {{schema}}.docket_workflows WHERE id = $1 AND cancelled_at IS NOT NULL),
	EXISTS (SELECT 1 FROM {{schema}}.docket_jobs WHERE workflow_id = $1),
	EXISTS (SELECT 1 FROM {{schema}}.docket_jobs_dead WHERE workflow_id = $1),
	EXISTS (SELECT 1 FROM {{schema}}.docket_workflow_signals WHERE workflow_id = $1 AND name = $2),
	COALESCE((SELECT json_agg(json_build_array(id, due) ORDER BY id) FROM steps)::text, '[]')`)

	// sqlSignalInsert stores the signal; no row back means another
	// transaction sent it first.
	sqlSignalInsert = pgsql.SQL(`INSERT INTO {{schema}}.docket_workflow_signals (workflow_id, name, payload)
VALUES ($1, $2, $3::jsonb)
ON CONFLICT DO NOTHING
RETURNING true`)

	// sqlSignalRelease releases the steps $1 whose parents are done; the
	// gate trigger of migration 022 sees the signal and lets them go (or
	// schedules them after their Delay). It returns their queues.
	sqlSignalRelease = pgsql.SQL(`UPDATE {{schema}}.docket_jobs
SET state = CASE WHEN run_at > now() THEN 'scheduled' ELSE 'ready' END,
	ready_seq = ` + pgsql.NextReadySeq + `, run_at = greatest(run_at, now())
WHERE id = ANY($1::bigint[]) AND state = 'waiting' AND wait_until IS NOT NULL
RETURNING queue`)
)

// Signal sends signal name with payload to workflow id through db: it
// releases the steps waiting for it whose parents are done and is kept for
// those whose parents still run. A pgx.Tx is used as it is; a pool or
// connection runs it in a transaction of its own.
func (c *Client) Signal(ctx context.Context, db pgsql.DB, id int64, name string, payload any) (Signalled, error) {
	doc, err := signalPayload(id, name, payload)
	if err != nil {
		return Signalled{}, err
	}
	if _, ok := db.(pgx.Tx); !ok {
		if b, ok := db.(pgsql.Beginner); ok {
			var out Signalled
			err := pgx.BeginFunc(ctx, b, func(tx pgx.Tx) error {
				var err error
				out, err = c.signal(ctx, pgsql.OnPgx(tx), id, name, doc)
				return err
			})
			return out, err
		}
	}
	return c.signal(ctx, pgsql.OnPgx(db), id, name, doc)
}

// SignalSQL is Signal through database/sql.
func (c *Client) SignalSQL(ctx context.Context, db pgsql.SQLDB, id int64, name string, payload any) (Signalled, error) {
	doc, err := signalPayload(id, name, payload)
	if err != nil {
		return Signalled{}, err
	}
	b, ok := db.(sqlTxBeginner)
	if !ok {
		return c.signal(ctx, pgsql.OnSQL(db), id, name, doc)
	}
	tx, err := b.BeginTx(ctx, nil)
	if err != nil {
		return Signalled{}, err
	}
	out, err := c.signal(ctx, pgsql.OnSQL(tx), id, name, doc)
	if err != nil {
		_ = tx.Rollback()
		return Signalled{}, err
	}
	return out, tx.Commit()
}

// idArray writes ids as a PostgreSQL array literal, which every driver
// sends as text.
func idArray(ids []int64) string {
	b := []byte{'{'}
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, '}'))
}

// signalPayload validates a signal before anything is sent and returns its
// payload as JSON text, or nil for a nil payload. Errors name the workflow
// and the signal, never the payload.
func signalPayload(id int64, name string, payload any) (any, error) {
	if name == "" || len(name) > MaxNameLen || core.BadText(name) != "" {
		return nil, fmt.Errorf("%w: workflow %d: name %q: want 1 to %d bytes of valid UTF-8 without NUL", ErrInvalidSignal, id, name, MaxNameLen)
	}
	if payload == nil {
		return nil, nil
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: workflow %d: signal %q: encode payload: %w", ErrInvalidSignal, id, name, err)
	}
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%w: workflow %d: signal %q: payload is not valid UTF-8", ErrInvalidSignal, id, name)
	}
	size, p := checkJSONB(b)
	switch {
	case p != "":
		return nil, fmt.Errorf("%w: workflow %d: signal %q: payload %s", ErrInvalidSignal, id, name, p)
	case int64(len(b)) > pgsql.MaxRowBytes || size.rendered > pgsql.MaxRowBytes:
		return nil, fmt.Errorf("%w: workflow %d: signal %q: payload over the limit of %d bytes of JSON text", ErrInvalidSignal, id, name, pgsql.MaxRowBytes)
	}
	return string(b), nil
}

func (c *Client) signal(ctx context.Context, cn pgsql.Conn, id int64, name string, doc any) (Signalled, error) {
	if err := c.checkMigrated(ctx, cn); err != nil {
		return Signalled{}, err
	}
	var found, cancelled, live, dead, sent bool
	var steps string
	err := cn.Query(ctx, sqlSignalCheck.For(c.schema), []any{id, name}, func(scan func(...any) error) error {
		return scan(&found, &cancelled, &live, &dead, &sent, &steps)
	})
	if err != nil {
		return Signalled{}, c.wrapErr(err)
	}
	var rows [][2]any
	if err := json.Unmarshal([]byte(steps), &rows); err != nil {
		return Signalled{}, err
	}
	switch {
	case !found:
		return Signalled{}, fmt.Errorf("%w: no workflow %d", core.ErrWorkflowNotFound, id)
	case cancelled:
		return Signalled{}, fmt.Errorf("%w: workflow %d cancelled; signal %q not sent", core.ErrWorkflowFinished, id, name)
	case !live:
		state := "succeeded"
		if dead {
			state = "failed"
		}
		return Signalled{}, fmt.Errorf("%w: workflow %d %s; signal %q not sent", core.ErrWorkflowFinished, id, state, name)
	case sent:
		return Signalled{}, fmt.Errorf("%w: workflow %d, signal %q", ErrSignalSent, id, name)
	case len(rows) == 0:
		return Signalled{}, fmt.Errorf("%w: workflow %d, signal %q: no step waiting for it is left", ErrSignalNotAwaited, id, name)
	}
	var out Signalled
	var due []int64
	for _, r := range rows {
		step, _ := r[0].(float64)
		out.Waiting = append(out.Waiting, int64(step))
		if now, _ := r[1].(bool); now {
			due = append(due, int64(step))
		}
	}
	var inserted bool
	err = cn.Query(ctx, sqlSignalInsert.For(c.schema), []any{id, name, doc}, func(scan func(...any) error) error {
		return scan(&inserted)
	})
	if err != nil {
		return Signalled{}, c.wrapErr(err)
	}
	if !inserted {
		return Signalled{}, fmt.Errorf("%w: workflow %d, signal %q", ErrSignalSent, id, name)
	}
	if len(due) == 0 {
		return out, nil
	}
	var queues []string
	err = cn.Query(ctx, sqlSignalRelease.For(c.schema), []any{idArray(due)}, func(scan func(...any) error) error {
		var q string
		err := scan(&q)
		queues = append(queues, q)
		return err
	})
	if err != nil {
		return Signalled{}, c.wrapErr(err)
	}
	out.Released = due
	return out, c.notify(ctx, cn, queues)
}
