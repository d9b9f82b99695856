package docket

import (
	"context"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/pgsql"
)

// DB is a pgx database handle: pgx.Tx, *pgx.Conn and *pgxpool.Pool satisfy
// it (Exec, Query and QueryRow as pgx has them). Enqueue takes one: pass
// the caller's pgx.Tx to write atomically with the caller's own writes.
type DB = pgsql.DB

// SQLDB is a database/sql handle: *sql.Tx, *sql.DB and *sql.Conn satisfy
// it (ExecContext and QueryContext), and so does an Ent transaction built
// with the sql/execquery feature (use package ent for that). EnqueueSQL
// takes one: pass the caller's *sql.Tx to write atomically with the
// caller's own writes.
type SQLDB = pgsql.SQLDB

// Limits and defaults of a job's options, so that a bad value is rejected
// before it reaches the database rather than bloating indexes.
const (
	MaxNameLen         = core.MaxNameLen  // queue, kind and tenant names, in bytes
	MaxKeyLen          = core.MaxKeyLen   // unique and serial keys, in bytes
	MinPriority        = core.MinPriority // lowest priority
	MaxPriority        = core.MaxPriority // highest priority
	DefaultMaxAttempts = core.DefaultMaxAttempts
	DefaultQueue       = core.DefaultQueue
)

// Opts are the per-job enqueue options. The zero value means: queue
// "default", priority 0, due now, 25 attempts, no unique key, no tenant, no
// serial key, no meta; with Config.Registry, the kind's registered queue,
// priority and attempts instead of the built-in three. The resolved values
// are stored with the job and govern it from then on: workers and the
// reaper read the job's own queue, priority and max attempts, never the
// kind's.
//
// Every string must be valid UTF-8 without NUL bytes, which PostgreSQL's
// text and jsonb cannot store; Enqueue and EnqueueMany reject other values
// with ErrInvalidJob before sending anything.
type Opts struct {
	// Queue routes the job to the worker pools that serve it. Empty means
	// the kind's registered queue, else "default". At most MaxNameLen
	// bytes, no spaces or control characters.
	Queue string
	// Priority orders jobs inside a queue: higher runs first. Range -10..10;
	// zero means unset: the args' own Opts' priority, else the kind's
	// registered priority, else 0. So an explicit 0 cannot lower a kind
	// registered with a higher priority; give such jobs -1 instead.
	Priority int
	// RunAt schedules the job; zero means now. Takes precedence over Delay.
	// It must fall in the years 1 to 9999 (UTC), inside what PostgreSQL's
	// timestamptz stores.
	RunAt time.Time
	// Delay schedules the job this long after the enqueue, by the
	// database's clock. Zero means now; it must not be negative.
	Delay time.Duration
	// MaxAttempts is how many runs the job gets before it is dead-lettered,
	// more or fewer than its kind's. Zero means the kind's registered max
	// attempts, else 25; otherwise it must be 1..math.MaxInt32.
	MaxAttempts int
	// UniqueKey, when set, makes the enqueue idempotent: while a job with
	// the same key is in flight (in docket_jobs, whatever its state) no
	// second one is inserted and the existing job's id is returned. At most
	// MaxKeyLen bytes.
	UniqueKey string
	// MoveOnDuplicate makes a duplicate UniqueKey move the existing job's
	// run_at to this job's instead of leaving it (not if it is running, or
	// waiting in its serial key's line or for its workflow parents).
	// Not supported by EnqueueMany.
	MoveOnDuplicate bool
	// Tenant names who the job belongs to, for per-tenant claim caps.
	// Empty means none; otherwise as Queue.
	Tenant string
	// SerialKey serializes jobs: two jobs with the same key never run at
	// the same time. Empty means none; at most MaxKeyLen bytes.
	SerialKey string
	// Meta is small job metadata. Unlike the payload it may be logged, and
	// errors about it name its keys. Docket writes two kinds of keys here:
	// the W3C trace context of the enqueue's ctx ("traceparent", and
	// "tracestate" when it has one; see Config.Propagator), unless the
	// caller set those keys, and, for a schedule's runs, the keys of
	// package schedule ("schedule", "fire", "trigger"). The caller's map is
	// never modified.
	Meta map[string]string
}

// OptsProvider is implemented by Args types that carry their own default
// options (a unique key derived from the args, a queue). Non-zero fields of
// the Opts passed to Enqueue override them; they override the kind's
// registered defaults (handlers.KindOpts).
type OptsProvider interface {
	Opts() Opts
}

// Item is one job of a bulk enqueue.
type Item struct {
	Args Args
	Opts Opts
}

// Enqueued reports the outcome of one enqueue.
type Enqueued struct {
	ID int64
	// Duplicate is true when nothing was inserted because a job with the
	// same unique key was in flight; ID is that job's id.
	Duplicate bool
	// State is the job's state after the call. A serial-key job reported
	// ready is in its key's line when the call returns (EnqueueMany puts it
	// there at once, Enqueue when its statement ends), and waits there
	// (StateWaiting) while another job holds the key.
	State State
}

// ErrInvalidJob wraps every validation failure of Enqueue and EnqueueMany.
// Such a job is rejected before anything is sent to the database, so a
// caller's transaction stays usable. Its message names the job's kind and
// what is wrong, never the payload's contents.
var ErrInvalidJob = enqueue.ErrInvalidJob

// ErrUnknownKind is returned, wrapped with the kind's name, by every enqueue
// of a Client whose Config.Registry has no handler for the job's kind. Nothing is
// sent to the database, so a caller's transaction stays usable.
var ErrUnknownKind = enqueue.ErrUnknownKind

// ErrNotMigrated is returned when Docket's tables, or the schema that should
// hold them, do not exist.
var ErrNotMigrated = enqueue.ErrNotMigrated

// ErrPgBouncer wraps the PostgreSQL error (SQLSTATE 42P05 or 26000) of a
// statement that met a prepared statement missing or duplicated on its
// server connection: what pgx's default query mode meets behind PgBouncer
// in transaction mode, where each transaction may run on another server
// connection. Its message says what to change: the query mode in the
// connection string (default_query_exec_mode=exec) and a direct ListenURL
// for LISTEN (docs/compatibility.md, "PgBouncer"). Every entry point of
// Docket wraps such errors in it: enqueue, publish, migrations, schedules,
// the worker and the relay, and the docket CLI.
var ErrPgBouncer = enqueue.ErrPgBouncer

// ErrInvalidSchema is returned by NewClient for a Schema that is not a
// plain lower-case identifier of at most 56 bytes.
var ErrInvalidSchema = pgsql.ErrInvalidSchema

// resolve is the options of one enqueue as the engine takes them: opts
// over the args' own Opts.
func resolve(args Args, opts Opts) enqueue.Opts {
	o := enqueue.Opts(opts)
	if p, ok := args.(OptsProvider); ok {
		o = enqueue.Merge(enqueue.Opts(p.Opts()), o)
	}
	return o
}

func items(in []Item) []enqueue.Item {
	out := make([]enqueue.Item, len(in))
	for i, it := range in {
		out[i] = enqueue.Item{Args: it.Args, Opts: resolve(it.Args, it.Opts)}
	}
	return out
}

func enqueuedAll(in []enqueue.Enqueued) []Enqueued {
	out := make([]Enqueued, len(in))
	for i, e := range in {
		out[i] = Enqueued(e)
	}
	return out
}

// Enqueue writes one job through db. Pass the caller's transaction to commit
// the job together with the caller's own writes: a rolled-back transaction
// leaves no job. A job inserted ready is announced by a NOTIFY sent with the
// insert, unless its queue was announced within the debounce window.
//
// Enqueue returns an ErrInvalidJob error, having sent nothing, so that a
// caller's transaction stays usable, for:
//   - nil args, or a payload that does not encode to JSON, is not valid
//     UTF-8, or holds an escaped NUL (\u0000) or a lone UTF-16 surrogate
//     escape such as "\ud800" (which a json.RawMessage or a MarshalJSON
//     method may return): jsonb can store neither. A string holding a
//     backslash followed by u0000, such as C:\u0000dir, holds no NUL and is
//     stored as it is;
//   - a payload or meta PostgreSQL's jsonb cannot store: a number outside
//     numeric's range (more than 131072 digits before the decimal point,
//     as 1e131072, or more than 16383 after it, as 1e-16384 or 1.00e-16382,
//     trailing zeros counted; a json.Number field writes any of these), an
//     array of more than 16777216 elements, an object of more than 8388608
//     members, a jsonb encoding over 268435455 bytes (256 MiB; inside
//     objects Docket counts the up to 3 bytes of alignment jsonb may add
//     before a number or a nested array or object), or arrays and objects
//     nested more than 10000 deep (the most encoding/json decodes);
//   - a payload and meta that together make more than 1 GiB - 1 MiB
//     (1072693248 bytes) of JSON text, as sent or as PostgreSQL would write
//     them back, which spells numbers out in full (1e131071 is 131072
//     digits): one protocol message, each way, carries at most 1 GiB;
//   - an empty kind; a kind, queue or tenant name longer than MaxNameLen,
//     not valid UTF-8, or with spaces or control characters;
//   - a unique or serial key longer than MaxKeyLen; a unique or serial key,
//     meta key or meta value that is not valid UTF-8 or holds a NUL byte;
//   - a priority, max attempts, RunAt or Delay outside what Opts documents.
//
// With Config.Registry set, a kind it has no handler for returns an ErrUnknownKind
// error, also having sent nothing.
//
// When Docket's tables or their schema do not exist, Enqueue returns an
// ErrNotMigrated error. It asks with a statement that cannot fail, so this
// too leaves a caller's transaction usable; the first positive answer is
// kept for the life of the Client.
func (c *Client) Enqueue(ctx context.Context, db DB, args Args, opts Opts) (Enqueued, error) {
	res, err := c.jobs.Enqueue(ctx, db, args, resolve(args, opts))
	return Enqueued(res), err
}

// EnqueueSQL is Enqueue through database/sql: pass the caller's *sql.Tx to
// commit the job with the caller's writes. The payload is sent as JSON text,
// so it is stored as a jsonb object, not as bytea.
func (c *Client) EnqueueSQL(ctx context.Context, db SQLDB, args Args, opts Opts) (Enqueued, error) {
	res, err := c.jobs.EnqueueSQL(ctx, db, args, resolve(args, opts))
	return Enqueued(res), err
}

// EnqueueMany writes many jobs in one call and returns one result per item,
// in order. Jobs without unique key or schedule go in with one COPY; the
// rest with one set-based insert per 64 MiB of their JSON text (a job over
// that goes alone). A taken unique key never fails the batch:
// that item reports the existing job's id as a Duplicate (also when two
// items of the batch share a key: the first wins). Pass the caller's pgx.Tx
// to commit the jobs with the caller's writes; with a pool or connection
// the whole batch is written in one transaction of its own.
//
// Any invalid item (as Enqueue rejects it, or with MoveOnDuplicate) fails
// the call with an ErrInvalidJob error naming the item's index, and an
// item of a kind Config.Registry has no handler for with ErrUnknownKind, before
// anything is sent, so a caller's transaction stays usable. Missing tables
// or schema return ErrNotMigrated, also without aborting a caller's
// transaction (see Enqueue).
func (c *Client) EnqueueMany(ctx context.Context, db DB, batch []Item) ([]Enqueued, error) {
	res, err := c.jobs.EnqueueMany(ctx, db, items(batch))
	return enqueuedAll(res), err
}

// EnqueueManySQL is EnqueueMany through database/sql: the jobs go in with
// set-based inserts (COPY is pgx-only). Pass the caller's *sql.Tx to
// commit them with the caller's writes; with a *sql.DB or *sql.Conn the
// batch is written in a transaction of its own.
func (c *Client) EnqueueManySQL(ctx context.Context, db SQLDB, batch []Item) ([]Enqueued, error) {
	res, err := c.jobs.EnqueueManySQL(ctx, db, items(batch))
	return enqueuedAll(res), err
}

// RemoveQueued deletes the scheduled, ready or waiting job that holds
// uniqueKey, so it never runs, and returns its id; false when no such job
// waits (none holds the key, or it is running). It writes nothing to history or the
// dead-letter table: the job is withdrawn, not finished. A workflow job's
// dependents take the withdrawal as a failure, as for admin.Jobs.Delete.
// A running job is stopped with admin Jobs.Cancel instead.
func (c *Client) RemoveQueued(ctx context.Context, db DB, uniqueKey string) (int64, bool, error) {
	return c.jobs.RemoveQueued(ctx, db, uniqueKey)
}

// Validate returns the ErrInvalidJob error Enqueue would return for args
// and opts (with the args' own Opts, without a registry's defaults), or
// nil, without touching a database: for code that keeps a job to enqueue
// later and rejects it when it is given rather than at every enqueue.
func Validate(args Args, opts Opts) error { return enqueue.Validate(args, resolve(args, opts)) }
