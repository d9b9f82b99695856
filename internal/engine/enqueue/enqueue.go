package enqueue

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/propagation"
)

// Limits on names and keys, so a bad value is rejected before it reaches the
// database rather than bloating indexes.
const (
	MaxNameLen         = core.MaxNameLen  // queue, kind and tenant names
	MaxKeyLen          = core.MaxKeyLen   // unique and serial keys
	MinPriority        = core.MinPriority // lowest priority
	MaxPriority        = core.MaxPriority // highest priority
	DefaultMaxAttempts = core.DefaultMaxAttempts
	DefaultQueue       = core.DefaultQueue
)

// Opts are the per-job enqueue options, field for field docket.Opts (which
// converts to it and documents it for users). The zero value means: queue
// "default", priority 0, due now, 25 attempts, no unique key, no tenant, no
// serial key, no meta; with Config.Kinds, the kind's registered queue,
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

// minRunAt and maxRunAt bound Opts.RunAt: years 1 to 9999 UTC, which both
// PostgreSQL's timestamptz (4713 BC to 294276 AD) and RFC 3339 can write.
var (
	minRunAt = time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC)
	maxRunAt = time.Date(9999, time.December, 31, 23, 59, 59, 999999000, time.UTC)
)

// Kinds gives the enqueue defaults of registered job kinds;
// *handlers.Registry implements it. Set as Config.Kinds, it makes every
// enqueue path of the Client apply a kind's defaults and reject kinds it
// does not know.
type Kinds interface {
	// KindOpts returns the options kind was registered with, of which
	// Queue, Priority and MaxAttempts are what jobs of kind get when
	// neither the enqueue options nor the args' own Opts set them (zero
	// fields mean the built-in defaults), and false when kind is not
	// registered.
	KindOpts(kind string) (core.KindOpts, bool)
}

// ErrUnknownKind is returned, wrapped with the kind's name, by every enqueue
// of a Client whose Config.Kinds does not know the job's kind. Nothing is
// sent to the database, so a caller's transaction stays usable.
var ErrUnknownKind = errors.New("docket: unknown job kind")

// Enqueued reports the outcome of one enqueue.
type Enqueued struct {
	ID int64
	// Duplicate is true when nothing was inserted because a job with the
	// same unique key was in flight; ID is that job's id.
	Duplicate bool
	// State is the job's state after the call. A serial-key job reported
	// ready is in its key's line when the call returns (EnqueueMany puts it
	// there at once, Enqueue when its statement ends), and waits there
	// (docket.StateWaiting) while another job holds the key.
	State core.State
}

// Item is one job of a bulk enqueue.
type Item struct {
	Args core.Args
	Opts Opts
}

// ErrInvalidJob wraps every validation failure of Enqueue and EnqueueMany.
// Such a job is rejected before anything is sent to the database, so a
// caller's transaction stays usable. Its message names the job's kind and
// what is wrong, never the payload's contents.
var ErrInvalidJob = errors.New("docket: invalid job")

// ErrNotMigrated is returned when Docket's tables, or the schema that should
// hold them, do not exist.
var ErrNotMigrated = pgsql.ErrNotMigrated

// ErrPgBouncer wraps the PostgreSQL error (SQLSTATE 42P05 or 26000) of a
// statement that met a prepared statement missing or duplicated on its
// server connection: what pgx's default query mode meets behind PgBouncer
// in transaction mode, where each transaction may run on another server
// connection. Its message says what to change: the query mode in the
// connection string (default_query_exec_mode=exec) and a direct ListenURL
// for LISTEN (docs/compatibility.md, "PgBouncer"). Every entry point of
// Docket wraps such errors in it: enqueue, publish, migrations, schedules,
// the worker and the relay, and the docket CLI.
var ErrPgBouncer = pgsql.ErrPgBouncer

// job is a validated, encoded job ready to write.
type job struct {
	kind, queue, tenant   string
	priority, maxAttempts int
	runAt                 *time.Time
	delayMS               int64
	uniqueKey, serialKey  string
	payload, meta         []byte
	move                  bool
}

// prepare validates and encodes one job. It is the one place where a job's
// options are resolved, for every enqueue path: non-zero fields of opts win
// (which the caller merged over the args' own Opts), which win over the queue,
// priority and max attempts kinds registered for the kind, which win over
// the built-in defaults (queue "default", priority 0, 25 attempts). With
// kinds set, a kind it does not know is rejected with ErrUnknownKind.
//
// It is also the one place that fills a job's meta: with ctx carrying a
// span, prop's trace context goes into the keys the caller left unset
// (traceMeta).
func prepare(ctx context.Context, kinds Kinds, prop propagation.TextMapPropagator, args core.Args, opts Opts) (job, error) {
	if args == nil {
		return job{}, fmt.Errorf("%w: nil args", ErrInvalidJob)
	}
	var base Opts
	if kinds != nil {
		def, ok := kinds.KindOpts(args.Kind())
		if !ok {
			return job{}, fmt.Errorf("%w: %q (register a handler for it, or enqueue through a client without a registry)", ErrUnknownKind, args.Kind())
		}
		base = Opts{Queue: def.Queue, Priority: def.Priority, MaxAttempts: def.MaxAttempts}
	}
	opts = Merge(base, opts)
	j := job{
		kind: args.Kind(), queue: opts.Queue, tenant: opts.Tenant, priority: opts.Priority,
		maxAttempts: opts.MaxAttempts, uniqueKey: opts.UniqueKey, serialKey: opts.SerialKey,
		move: opts.MoveOnDuplicate,
	}
	if j.queue == "" {
		j.queue = DefaultQueue
	}
	if j.maxAttempts == 0 {
		j.maxAttempts = DefaultMaxAttempts
	}
	if err := checkName("kind", j.kind, false); err != nil {
		return job{}, err
	}
	if err := checkName("queue", j.queue, false); err != nil {
		return job{}, err
	}
	if err := checkName("tenant", j.tenant, true); err != nil {
		return job{}, err
	}
	if j.maxAttempts < 1 || j.maxAttempts > math.MaxInt32 {
		return job{}, fmt.Errorf("%w: kind %s: max attempts %d outside 1..%d", ErrInvalidJob, j.kind, j.maxAttempts, math.MaxInt32)
	}
	if j.priority < MinPriority || j.priority > MaxPriority {
		return job{}, fmt.Errorf("%w: kind %s: priority %d outside %d..%d", ErrInvalidJob, j.kind, j.priority, MinPriority, MaxPriority)
	}
	if len(j.uniqueKey) > MaxKeyLen || len(j.serialKey) > MaxKeyLen {
		return job{}, fmt.Errorf("%w: kind %s: unique or serial key longer than %d bytes", ErrInvalidJob, j.kind, MaxKeyLen)
	}
	if p := core.BadText(j.uniqueKey); p != "" {
		return job{}, fmt.Errorf("%w: kind %s: unique key %s", ErrInvalidJob, j.kind, p)
	}
	if p := core.BadText(j.serialKey); p != "" {
		return job{}, fmt.Errorf("%w: kind %s: serial key %s", ErrInvalidJob, j.kind, p)
	}
	if opts.Delay < 0 {
		return job{}, fmt.Errorf("%w: kind %s: negative delay", ErrInvalidJob, j.kind)
	}
	if !opts.RunAt.IsZero() {
		t := opts.RunAt.UTC()
		if t.Before(minRunAt) || t.After(maxRunAt) {
			return job{}, fmt.Errorf("%w: kind %s: run at %s outside years %d..%d", ErrInvalidJob, j.kind,
				t.Format(time.RFC3339), minRunAt.Year(), maxRunAt.Year())
		}
		j.runAt = &t
	} else {
		j.delayMS = opts.Delay.Milliseconds()
	}
	opts.Meta = core.TraceMeta(ctx, prop, opts.Meta)
	for k, v := range opts.Meta {
		if p := core.BadText(k); p != "" {
			return job{}, fmt.Errorf("%w: kind %s: meta key %q %s", ErrInvalidJob, j.kind, k, p)
		}
		if p := core.BadText(v); p != "" {
			return job{}, fmt.Errorf("%w: kind %s: meta %q: value %s", ErrInvalidJob, j.kind, k, p)
		}
	}
	// Errors about the payload name the kind only: it may hold personal data.
	payload, err := json.Marshal(args)
	if err != nil {
		return job{}, fmt.Errorf("%w: kind %s: encode payload: %w", ErrInvalidJob, j.kind, err)
	}
	// json.Marshal checks neither the UTF-8 nor the escapes of what a
	// json.RawMessage or a MarshalJSON method returns, nor any limit of
	// PostgreSQL's.
	if !utf8.Valid(payload) {
		return job{}, fmt.Errorf("%w: kind %s: payload is not valid UTF-8", ErrInvalidJob, j.kind)
	}
	size, p := checkJSONB(payload)
	if p != "" {
		return job{}, fmt.Errorf("%w: kind %s: payload %s", ErrInvalidJob, j.kind, p)
	}
	j.payload = payload
	text, rendered := int64(len(payload)), size.rendered
	if len(opts.Meta) > 0 {
		if j.meta, err = json.Marshal(opts.Meta); err != nil {
			return job{}, fmt.Errorf("%w: kind %s: encode meta: %w", ErrInvalidJob, j.kind, err)
		}
		size, p := checkJSONB(j.meta)
		if p != "" {
			return job{}, fmt.Errorf("%w: kind %s: meta %s (its largest value is under key %q)", ErrInvalidJob, j.kind, p, largestKey(opts.Meta))
		}
		text, rendered = text+int64(len(j.meta)), rendered+size.rendered
	}
	if text > pgsql.MaxRowBytes {
		return job{}, fmt.Errorf("%w: kind %s: payload and meta are %d bytes of JSON text, over the limit of %d one statement can send",
			ErrInvalidJob, j.kind, text, pgsql.MaxRowBytes)
	}
	if rendered > pgsql.MaxRowBytes {
		return job{}, fmt.Errorf("%w: kind %s: PostgreSQL would write payload and meta back as up to %d bytes of JSON text (numbers in full), over the limit of %d one row can be read with",
			ErrInvalidJob, j.kind, rendered, pgsql.MaxRowBytes)
	}
	return j, nil
}

// largestKey returns the key of meta's longest value, to name it in an
// error.
func largestKey(meta map[string]string) string {
	var key string
	n := -1
	for k, v := range meta {
		if len(k)+len(v) > n || len(k)+len(v) == n && k < key {
			key, n = k, len(k)+len(v)
		}
	}
	return key
}

// Validate returns the ErrInvalidJob error Enqueue would return for args and
// opts, or nil, without touching a database: for code that keeps a job to
// enqueue later, such as a schedule's template, and rejects it when it is
// given rather than at every enqueue.
func Validate(args core.Args, opts Opts) error {
	_, err := prepare(context.Background(), nil, nil, args, opts)
	return err
}

func checkName(what, v string, emptyOK bool) error {
	if err := core.CheckName(what, v, emptyOK); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidJob, err)
	}
	return nil
}

// Merge returns base with the non-zero fields of over put over it (and
// MoveOnDuplicate when either sets it): the rule by which explicit options
// win over the args' own, which win over a kind's defaults.
func Merge(base, over Opts) Opts {
	if over.Queue != "" {
		base.Queue = over.Queue
	}
	if over.Priority != 0 {
		base.Priority = over.Priority
	}
	if !over.RunAt.IsZero() {
		base.RunAt = over.RunAt
	}
	if over.Delay != 0 {
		base.Delay = over.Delay
	}
	if over.MaxAttempts != 0 {
		base.MaxAttempts = over.MaxAttempts
	}
	if over.UniqueKey != "" {
		base.UniqueKey = over.UniqueKey
	}
	base.MoveOnDuplicate = base.MoveOnDuplicate || over.MoveOnDuplicate
	if over.Tenant != "" {
		base.Tenant = over.Tenant
	}
	if over.SerialKey != "" {
		base.SerialKey = over.SerialKey
	}
	if over.Meta != nil {
		base.Meta = over.Meta
	}
	return base
}

// nullable turns "" and nil into SQL NULL; JSON goes as a string so that
// database/sql drivers do not send it as bytea.
func (j job) params() []any {
	var runAt any
	if j.runAt != nil {
		runAt = *j.runAt
	}
	return []any{j.queue, j.kind, j.priority, j.maxAttempts, pgsql.NullString(j.uniqueKey), j.tenant,
		pgsql.NullString(j.serialKey), string(j.payload), pgsql.NullJSON(j.meta), runAt, j.delayMS}
}

// wrapErr turns a missing table or schema into ErrNotMigrated, naming the
// schema, and makes the next enqueue check for the tables again; it turns
// prepared statements a transaction pooler moved away into ErrPgBouncer.
func (c *Client) wrapErr(err error) error {
	if err == nil {
		return nil
	}
	if pgsql.Missing(err) {
		c.migrated.Store(false)
	}
	return pgsql.Wrap(err, c.schema)
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
// With Config.Kinds set, a kind it does not know returns an ErrUnknownKind
// error, also having sent nothing.
//
// When Docket's tables or their schema do not exist, Enqueue returns an
// ErrNotMigrated error. It asks with a statement that cannot fail, so this
// too leaves a caller's transaction usable; the first positive answer is
// kept for the life of the Client.
func (c *Client) Enqueue(ctx context.Context, db pgsql.DB, args core.Args, opts Opts) (Enqueued, error) {
	return c.enqueue(ctx, pgsql.OnPgx(db), args, opts)
}

// EnqueueSQL is Enqueue through database/sql: pass the caller's *sql.Tx to
// commit the job with the caller's writes. The payload is sent as JSON text,
// so it is stored as a jsonb object, not as bytea.
func (c *Client) EnqueueSQL(ctx context.Context, db pgsql.SQLDB, args core.Args, opts Opts) (Enqueued, error) {
	return c.enqueue(ctx, pgsql.OnSQL(db), args, opts)
}

func (c *Client) enqueue(ctx context.Context, cn pgsql.Conn, args core.Args, opts Opts) (Enqueued, error) {
	j, err := prepare(ctx, c.kinds, c.prop, args, opts)
	if err != nil {
		return Enqueued{}, err
	}
	if err := c.checkMigrated(ctx, cn); err != nil {
		return Enqueued{}, err
	}
	now := time.Now()
	var channel any
	prev, due := c.notified.Take(j.queue, now)
	if due {
		channel = c.NotifyChannel()
	}
	res, notified, err := c.insertOne(ctx, cn, j, channel)
	if due && !notified {
		c.notified.GiveBack(j.queue, now, prev)
	}
	if err != nil {
		return Enqueued{}, c.wrapErr(err)
	}
	return res, nil
}

// insertOne inserts j and reports whether the statement also sent a NOTIFY
// on channel (nil: send none).
func (c *Client) insertOne(ctx context.Context, cn pgsql.Conn, j job, channel any) (Enqueued, bool, error) {
	q := sqlEnqueue.For(c.schema)
	if j.move && j.uniqueKey != "" {
		q = sqlEnqueueMove.For(c.schema)
	}
	params := append(j.params(), channel)
	// A conflicting key may belong to a job that finishes between the insert
	// and the lookup; then the insert is tried again.
	for range 5 {
		var res Enqueued
		var notified bool
		found := false
		err := cn.Query(ctx, q, params, func(scan func(...any) error) error {
			found = true
			var state string
			var inserted bool
			if err := scan(&res.ID, &state, &inserted, &notified); err != nil {
				return err
			}
			res.State, res.Duplicate = core.State(state), !inserted
			return nil
		})
		if err != nil || found {
			return res, notified, err
		}
		err = cn.Query(ctx, sqlLookupKey.For(c.schema), []any{j.uniqueKey}, func(scan func(...any) error) error {
			found = true
			var state string
			err := scan(&res.ID, &state)
			res.State, res.Duplicate = core.State(state), true
			return err
		})
		if err != nil || found {
			return res, false, err
		}
	}
	return Enqueued{}, false, fmt.Errorf("docket: kind %s: unique key %q kept changing hands; try again", j.kind, j.uniqueKey)
}

// notify announces due jobs on queues, skipping a queue notified within the
// debounce window. The notification is delivered when db's transaction commits.
func (c *Client) notify(ctx context.Context, cn pgsql.Conn, queues []string) error {
	now := time.Now()
	var due []string
	for _, q := range queues {
		if _, ok := c.notified.Take(q, now); ok {
			due = append(due, q)
		}
	}
	if len(due) == 0 {
		return nil
	}
	if _, err := cn.Exec(ctx, pgsql.NotifyQueues, c.NotifyChannel(), pgsql.QueueList(due)); err != nil {
		return fmt.Errorf("docket: notify queues %v: %w", due, err)
	}
	return nil
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
// item of a kind Config.Kinds does not know with ErrUnknownKind, before
// anything is sent, so a caller's transaction stays usable. Missing tables
// or schema return ErrNotMigrated, also without aborting a caller's
// transaction (see Enqueue).
func (c *Client) EnqueueMany(ctx context.Context, db pgsql.DB, items []Item) ([]Enqueued, error) {
	return c.enqueueMany(ctx, pgsql.OnPgx(db), func(fn func(pgsql.Conn) error) error {
		switch d := db.(type) {
		case pgx.Tx:
			return fn(pgsql.OnPgx(d))
		case pgsql.Beginner:
			return pgx.BeginFunc(ctx, d, func(tx pgx.Tx) error { return fn(pgsql.OnPgx(tx)) })
		}
		return fn(pgsql.OnPgx(db))
	}, items)
}

// sqlTxBeginner is what *sql.DB and *sql.Conn have to start a transaction.
type sqlTxBeginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// EnqueueManySQL is EnqueueMany through database/sql: the jobs go in with
// set-based inserts (COPY is pgx-only). Pass the caller's *sql.Tx to
// commit them with the caller's writes; with a *sql.DB or *sql.Conn the
// batch is written in a transaction of its own.
func (c *Client) EnqueueManySQL(ctx context.Context, db pgsql.SQLDB, items []Item) ([]Enqueued, error) {
	return c.enqueueMany(ctx, pgsql.OnSQL(db), func(fn func(pgsql.Conn) error) error {
		b, ok := db.(sqlTxBeginner)
		if !ok {
			return fn(pgsql.OnSQL(db))
		}
		tx, err := b.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(pgsql.OnSQL(tx)); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	}, items)
}

// enqueueMany validates items, then writes them through inTx, which runs
// its function in the caller's transaction or in one of its own.
func (c *Client) enqueueMany(ctx context.Context, cn pgsql.Conn, inTx func(func(pgsql.Conn) error) error, items []Item) ([]Enqueued, error) {
	jobs := make([]job, len(items))
	for i, it := range items {
		j, err := prepare(ctx, c.kinds, c.prop, it.Args, it.Opts)
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		if j.move {
			return nil, fmt.Errorf("item %d: %w: MoveOnDuplicate is not supported by EnqueueMany", i, ErrInvalidJob)
		}
		jobs[i] = j
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	if err := c.checkMigrated(ctx, cn); err != nil {
		return nil, err
	}
	var out []Enqueued
	err := inTx(func(cn pgsql.Conn) error {
		var err error
		out, err = c.insertMany(ctx, cn, jobs)
		return err
	})
	return out, c.wrapErr(err)
}

func (c *Client) insertMany(ctx context.Context, cn pgsql.Conn, jobs []job) ([]Enqueued, error) {
	out := make([]Enqueued, len(jobs))
	ids := make([]int64, 0, len(jobs))
	err := cn.Query(ctx, sqlNextIDs.For(c.schema), []any{len(jobs)}, func(scan func(...any) error) error {
		var id int64
		err := scan(&id)
		ids = append(ids, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	cp := cn.Copier()
	copied := &jobCopy{jobs: jobs, ids: ids}
	var setRows []map[string]any
	var setAt []int // the index in jobs of each of setRows
	readyQueues := map[string]bool{}
	var lines []string // the serial keys of jobs inserted waiting, once each
	inLine := map[string]bool{}
	joined := func(key string) {
		if !inLine[key] {
			inLine[key] = true
			lines = append(lines, key)
		}
	}
	for i, j := range jobs {
		if cp != nil && j.uniqueKey == "" && j.runAt == nil && j.delayMS == 0 {
			copied.rows = append(copied.rows, i)
			out[i] = Enqueued{ID: ids[i], State: core.StateReady}
			if j.serialKey != "" {
				joined(j.serialKey)
			} else {
				readyQueues[j.queue] = true
			}
			continue
		}
		row := map[string]any{"id": ids[i], "queue": j.queue, "kind": j.kind, "priority": j.priority,
			"delay_ms": j.delayMS, "max_attempts": j.maxAttempts, "tenant": j.tenant,
			"unique_key": pgsql.NullString(j.uniqueKey), "serial_key": pgsql.NullString(j.serialKey),
			"payload": json.RawMessage(j.payload), "meta": pgsql.RawJSON(j.meta)}
		if j.runAt != nil {
			row["run_at"] = j.runAt.Format(time.RFC3339Nano)
		}
		setRows = append(setRows, row)
		setAt = append(setAt, i)
	}
	if len(copied.rows) > 0 {
		if _, err := cp.CopyFrom(ctx, pgx.Identifier{c.schema, "docket_jobs"}, jobCopyColumns, copied); err != nil {
			return nil, err
		}
	}
	if len(setRows) > 0 {
		index := make(map[int64]int, len(setAt))
		for _, i := range setAt {
			index[ids[i]] = i
		}
		inserted := map[int64]bool{}
		err := pgsql.JSONRows(setRows, func(doc string) error {
			return cn.Query(ctx, sqlEnqueueSet.For(c.schema), []any{doc}, func(scan func(...any) error) error {
				var id int64
				var state string
				if err := scan(&id, &state); err != nil {
					return err
				}
				inserted[id] = true
				j := jobs[index[id]]
				switch state {
				case string(core.StateReady):
					readyQueues[j.queue] = true
				case string(core.StateWaiting):
					joined(j.serialKey)
					state = string(core.StateReady) // see Enqueued.State
				}
				out[index[id]] = Enqueued{ID: id, State: core.State(state)}
				return nil
			})
		})
		if err != nil {
			return nil, err
		}
		if err := c.resolveDuplicates(ctx, cn, jobs, ids, inserted, out); err != nil {
			return nil, err
		}
	}
	if len(lines) > 0 {
		err := cn.Query(ctx, sqlAdvanceLines.For(c.schema), []any{lines}, func(scan func(...any) error) error {
			var q string
			err := scan(&q)
			readyQueues[q] = true
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	queues := make([]string, 0, len(readyQueues))
	for q := range readyQueues {
		queues = append(queues, q)
	}
	return out, c.notify(ctx, cn, queues)
}

// jobCopyColumns are the columns a bulk enqueue's COPY writes, in the
// order of jobCopy's values.
var jobCopyColumns = []string{"id", "ready_seq", "state", "queue", "kind", "priority", "max_attempts", "tenant", "serial_key", "serial_seq", "payload", "meta"}

// jobCopy feeds the ready jobs of a bulk enqueue to COPY (a
// pgx.CopyFromSource), one row at a time from jobs and ids, in one slice
// reused for every row (COPY encodes a row before it asks for the next):
// no table of rows is built first.
type jobCopy struct {
	jobs   []job
	ids    []int64
	rows   []int // indexes into jobs and ids, in copy order
	at     int   // 1 + the index into rows of the current row
	values [12]any
}

func (c *jobCopy) Next() bool {
	c.at++
	return c.at <= len(c.rows)
}

func (c *jobCopy) Values() ([]any, error) {
	i := c.rows[c.at-1]
	j := &c.jobs[i]
	state, seq := string(core.StateReady), any(nil)
	if j.serialKey != "" {
		state, seq = string(core.StateWaiting), c.ids[i] // see sqlEnqueueSet
	}
	c.values = [12]any{c.ids[i], c.ids[i], state, j.queue, j.kind, int16(j.priority),
		int32(j.maxAttempts), j.tenant, pgsql.NullString(j.serialKey), seq, json.RawMessage(j.payload), pgsql.RawJSON(j.meta)}
	return c.values[:], nil
}

func (c *jobCopy) Err() error { return nil }

// resolveDuplicates fills in the existing job ids of items whose unique key
// was taken.
func (c *Client) resolveDuplicates(ctx context.Context, cn pgsql.Conn, jobs []job, ids []int64, inserted map[int64]bool, out []Enqueued) error {
	var keys []string
	for i, j := range jobs {
		if j.uniqueKey != "" && !inserted[ids[i]] {
			keys = append(keys, j.uniqueKey)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	doc, _ := json.Marshal(keys)
	existing := map[string]Enqueued{}
	err := cn.Query(ctx, sqlLookupKeys.For(c.schema), []any{string(doc)}, func(scan func(...any) error) error {
		var key, state string
		var id int64
		err := scan(&key, &id, &state)
		existing[key] = Enqueued{ID: id, Duplicate: true, State: core.State(state)}
		return err
	})
	if err != nil {
		return err
	}
	for i, j := range jobs {
		if j.uniqueKey == "" || inserted[ids[i]] {
			continue
		}
		dup, ok := existing[j.uniqueKey]
		if !ok {
			// The holder finished between insert and lookup.
			res, _, err := c.insertOne(ctx, cn, j, nil)
			if err != nil {
				return err
			}
			out[i] = res
			continue
		}
		out[i] = dup
	}
	return nil
}

// RemoveQueued deletes the scheduled, ready or waiting job that holds
// uniqueKey, so it never runs, and returns its id; false when no such job
// waits (none holds the key, or it is running). It writes nothing to history or the
// dead-letter table: the job is withdrawn, not finished. A workflow job's
// dependents take the withdrawal as a failure, as for admin.Jobs.Delete.
func (c *Client) RemoveQueued(ctx context.Context, db pgsql.DB, uniqueKey string) (int64, bool, error) {
	ids, err := c.ids(ctx, db, sqlRemoveQueued.For(c.schema), uniqueKey)
	if err != nil || len(ids) == 0 {
		return 0, false, err
	}
	return ids[0], true, nil
}

// enqueueResult ends the single-job inserts; CASE guarantees pg_notify runs
// only for a job inserted ready.
const enqueueResult = `
SELECT id, state, inserted,
	CASE WHEN $12::text IS NOT NULL AND state = 'ready' AND inserted THEN pg_notify($12, $1) IS NOT NULL ELSE false END
FROM ins`

var (
	// sqlEnqueue inserts one job and returns its id, its state, whether it
	// was inserted (false: a duplicate key was in flight), and whether it
	// sent the NOTIFY that announces it: when $12 names a channel and the
	// job was inserted ready, in the same round trip.
	sqlEnqueue = pgsql.SQL(`WITH ins AS (
	INSERT INTO {{schema}}.docket_jobs
		(state, queue, kind, priority, run_at, max_attempts, unique_key, tenant, serial_key, payload, meta)
	SELECT CASE WHEN t.at > now() THEN 'scheduled' ELSE 'ready' END,
		$1, $2, $3, t.at, $4, $5, $6, $7, $8::jsonb, $9::jsonb
	FROM (SELECT COALESCE($10::timestamptz, now() + $11::bigint * interval '1 millisecond') AS at) t
	ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING
	RETURNING id, state, true AS inserted
)` + enqueueResult)

	// sqlEnqueueMove is sqlEnqueue where a duplicate key moves the existing
	// job's run_at instead, unless that job is already running or waiting in
	// its serial key's line (where it keeps its place).
	sqlEnqueueMove = pgsql.SQL(`WITH ins AS (
	INSERT INTO {{schema}}.docket_jobs AS j
		(state, queue, kind, priority, run_at, max_attempts, unique_key, tenant, serial_key, payload, meta)
	SELECT CASE WHEN t.at > now() THEN 'scheduled' ELSE 'ready' END,
		$1, $2, $3, t.at, $4, $5, $6, $7, $8::jsonb, $9::jsonb
	FROM (SELECT COALESCE($10::timestamptz, now() + $11::bigint * interval '1 millisecond') AS at) t
	ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL
	DO UPDATE SET run_at = EXCLUDED.run_at, state = EXCLUDED.state, ready_seq = EXCLUDED.ready_seq
	WHERE j.state NOT IN ('running', 'waiting')
	RETURNING id, state, (xmax = 0) AS inserted
)` + enqueueResult)

	sqlLookupKey = pgsql.SQL(`SELECT id, state FROM {{schema}}.docket_jobs WHERE unique_key = $1`)

	sqlLookupKeys = pgsql.SQL(`SELECT j.unique_key, j.id, j.state FROM {{schema}}.docket_jobs j
WHERE j.unique_key IN (SELECT jsonb_array_elements_text($1::jsonb))`)

	// nextReadySeq draws a job's place in line when it becomes ready. Ids
	// come from the same sequence (migration 005), so a job inserted with a
	// preallocated id takes that id as its ready_seq.

	sqlNextIDs = pgsql.SQL(`SELECT nextval('{{schema}}.docket_jobs_id_seq') FROM generate_series(1, $1::int)`)

	// sqlEnqueueSet inserts a JSON array of jobs with preallocated ids (see
	// pgsql.JSONRows); rows whose unique key is taken (also by an earlier row of
	// the batch) are skipped and missing from the result. A due serial job
	// goes straight into its key's line, waiting, with its id as its place
	// (what the join trigger of migration 009 would give it after a first
	// write as ready); sqlAdvanceLines then makes the heads ready.
	sqlEnqueueSet = pgsql.SQL(`INSERT INTO {{schema}}.docket_jobs
	(id, ready_seq, state, queue, kind, priority, run_at, max_attempts, unique_key, tenant, serial_key, serial_seq, payload, meta)
SELECT r.id, r.id, s.state,
	r.queue, r.kind, r.priority, t.at, r.max_attempts, r.unique_key, r.tenant, r.serial_key,
	CASE WHEN s.state = 'waiting' THEN r.id END, r.payload, r.meta
FROM json_to_recordset($1::json) AS r(id bigint, queue text, kind text, priority smallint,
	run_at timestamptz, delay_ms bigint, max_attempts integer, unique_key text, tenant text,
	serial_key text, payload jsonb, meta jsonb)
CROSS JOIN LATERAL (SELECT COALESCE(r.run_at, now() + r.delay_ms * interval '1 millisecond') AS at) t
CROSS JOIN LATERAL (SELECT CASE WHEN t.at > now() THEN 'scheduled'
	WHEN r.serial_key IS NOT NULL THEN 'waiting' ELSE 'ready' END AS state) s
ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING
RETURNING id, state`)

	// sqlAdvanceLines makes the head of each line of serial keys $1 ready
	// when the key has no holder, after a bulk enqueue put jobs in those
	// lines, in a statement of its own and only at READ COMMITTED, as the
	// join trigger does (docket_serial_join, migration 009); otherwise the
	// sweep moves the lines on. It returns the queues of the heads it made
	// ready.
	sqlAdvanceLines = pgsql.SQL(`SELECT a.q FROM unnest(CASE WHEN current_setting('transaction_isolation') = 'read committed'
	THEN $1::text[] END) AS k(key)
CROSS JOIN LATERAL (SELECT {{schema}}.docket_serial_advance(k.key, false) AS q
	WHERE NOT EXISTS (SELECT 1 FROM {{schema}}.docket_jobs h
		WHERE h.serial_key = k.key AND h.serial_seq IS NOT NULL AND h.state <> 'waiting')) a
WHERE a.q IS NOT NULL`)

	// sqlRemoveQueued deletes the job holding a unique key unless it runs.
	sqlRemoveQueued = pgsql.SQL(`DELETE FROM {{schema}}.docket_jobs
WHERE unique_key = $1 AND state <> 'running'
RETURNING id`)
)
