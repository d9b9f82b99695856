package admin

import (
	"context"
	"errors"
	"fmt"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/docketq/docket/outbox"
)

// DB is a pgx database handle: pgx.Tx, *pgx.Conn and *pgxpool.Pool satisfy
// it (Exec, Query and QueryRow as pgx has them). Every operation takes the
// handle to run through: a pool, or the caller's transaction to act
// atomically with the caller's own writes.
type DB = pgsql.DB

// Config configures a Client. The zero value reads the tables of schema
// "public".
type Config struct {
	// Schema is the PostgreSQL schema that holds Docket's tables. Empty
	// means "public".
	Schema string
}

// Client runs the operations on Docket's tables in one schema. It holds no
// connection: every method takes the handle to run through. Jobs,
// DeadLetters, Queues, Limits and Workflows group the operations on each.
// A Client is safe for concurrent use.
type Client struct {
	schema string
	list   map[string]string // Jobs.List's statement per state
	floor  map[string]string // and the one that bounds a filtered page
	events *outbox.Client    // the relay's backlog, in Status
}

// New returns a Client for cfg. It fails only on an invalid schema name
// (a plain lower-case identifier of at most 56 bytes).
func New(cfg Config) (*Client, error) {
	schema, err := pgsql.Schema(cfg.Schema)
	if err != nil {
		return nil, err
	}
	events, err := outbox.New(outbox.Config{Schema: schema})
	if err != nil {
		return nil, err
	}
	list, floor := listStatements(schema)
	return &Client{schema: schema, list: list, floor: floor, events: events}, nil
}

// Schema returns the schema that holds the client's tables.
func (c *Client) Schema() string { return c.schema }

// Jobs returns the operations on single live jobs: list, show, cancel,
// delete, retry now.
func (c *Client) Jobs() Jobs { return Jobs{c} }

// DeadLetters returns the operations on the dead-letter table: list,
// group, show, replay, purge.
func (c *Client) DeadLetters() DeadLetters { return DeadLetters{c} }

// Queues returns the queue operations: pause, resume, list the paused.
func (c *Client) Queues() Queues { return Queues{c} }

// Limits returns the rate and concurrency limits: set, remove, list, and
// what each key uses now.
func (c *Client) Limits() Limits { return Limits{c} }

// Workflows returns the workflow operations: status, list, jobs, cancel.
func (c *Client) Workflows() Workflows { return Workflows{c} }

// Jobs are the operations on single jobs of a Client.
type Jobs struct{ c *Client }

// DeadLetters are the operations on the dead-letter table of a Client.
type DeadLetters struct{ c *Client }

// Queues are the queue operations of a Client.
type Queues struct{ c *Client }

// Limits are the rate and concurrency limits of a Client.
type Limits struct{ c *Client }

// Workflows are the workflow operations of a Client.
type Workflows struct{ c *Client }

// wrapErr names the missing migration (ErrNotMigrated) and the PgBouncer
// fix (ErrPgBouncer) where the database's error says so.
func (c *Client) wrapErr(err error) error { return pgsql.Wrap(err, c.schema) }

// each runs a query on db and calls fn for every row.
func (c *Client) each(ctx context.Context, db DB, sql string, args []any, fn func(scan func(...any) error) error) error {
	return c.wrapErr(pgsql.OnPgx(db).Query(ctx, sql, args, fn))
}

// ErrInvalidName is returned, naming the value, for a queue, kind or limit
// name that is empty, too long (128 bytes), not valid UTF-8, or has spaces
// or control characters.
var ErrInvalidName = errors.New("docket: invalid name")

// checkName applies the rules of queue and kind names to v.
func checkName(what, v string, emptyOK bool) error {
	if err := core.CheckName(what, v, emptyOK); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidName, err)
	}
	return nil
}

// notify wakes the workers of queues, which received ready jobs.
func (c *Client) notify(ctx context.Context, db DB, queues []string) error {
	if len(queues) == 0 {
		return nil
	}
	_, err := db.Exec(ctx, pgsql.NotifyQueues, pgsql.NotifyChannel(c.schema), pgsql.QueueList(queues))
	return c.wrapErr(err)
}

// ids runs a statement that returns one id column.
func (c *Client) ids(ctx context.Context, db DB, sql string, args ...any) ([]int64, error) {
	out, err := pgsql.Column[int64](ctx, db, sql, args...)
	return out, c.wrapErr(err)
}
