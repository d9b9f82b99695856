package queue

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// DB is the handle the protocol runs on (pgsql.DB): a pool or connection
// runs each statement as a transaction of its own; a pgx.Tx runs it in the
// caller's transaction.
type DB = pgsql.DB

// Config configures a Queue. The zero value keeps history and claims by
// cursor with a lag of 1s.
type Config struct {
	// DisableHistory deletes completed jobs instead of moving them to
	// docket_jobs_done.
	DisableHistory bool
	// CursorLag is how far behind its cursor a claimer looks for jobs whose
	// enqueuing transaction committed after later jobs were claimed (see
	// cursor.go). Zero means 1s; -1 turns cursors off, so every claim scans
	// the claim index from its start.
	CursorLag time.Duration
}

// Queue runs the worker protocol on the tables of one schema. It holds the claim
// cursors and no connection: every method takes the DB to use. A Queue is safe for
// concurrent use; a process should use one per schema, so that its claims
// share their cursors.
type Queue struct {
	schema  string
	history bool
	cursors *cursors
	// resultsSwept is the workflow id the next SweepWorkflowResults goes
	// on after.
	resultsSwept atomic.Int64
}

// New returns a Queue on the tables in schema ("" means "public"). It fails
// only on an invalid schema name.
func New(schema string, cfg Config) (*Queue, error) {
	schema, err := pgsql.Schema(schema)
	if err != nil {
		return nil, err
	}
	lag := cfg.CursorLag
	if lag == 0 {
		lag = time.Second
	}
	return &Queue{
		schema:  schema,
		history: !cfg.DisableHistory,
		cursors: newCursors(lag),
	}, nil
}

// Schema returns the schema that holds the queue's tables.
func (q *Queue) Schema() string { return q.schema }

// History reports whether completed jobs are kept in docket_jobs_done.
func (q *Queue) History() bool { return q.history }

// run runs sql with pgsql.Run and reports missing tables as ErrNotMigrated.
func (q *Queue) run(ctx context.Context, db DB, settings, sql string, args []any, read func(pgx.Rows) error) error {
	return q.wrapErr(pgsql.Run(ctx, db, settings, sql, args, read))
}

// ids runs a statement that returns one id column.
func (q *Queue) ids(ctx context.Context, db DB, sql string, args ...any) ([]int64, error) {
	out, err := pgsql.Column[int64](ctx, db, sql, args...)
	return out, q.wrapErr(err)
}

// wrapErr turns a missing table or schema into pgsql.ErrNotMigrated, naming
// the schema, and prepared statements a transaction pooler moved away into
// pgsql.ErrPgBouncer (package outbox exports both).
func (q *Queue) wrapErr(err error) error {
	return pgsql.Wrap(err, q.schema)
}

// column runs a statement that returns one column (see pgsql.Column).
func column[T any](ctx context.Context, q *Queue, db DB, sql string, args ...any) ([]T, error) {
	out, err := pgsql.Column[T](ctx, db, sql, args...)
	return out, q.wrapErr(err)
}
