package outbox

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"go.opentelemetry.io/otel/propagation"
)

// Config configures a Client. The zero value is valid: tables in schema
// "public", history kept, NOTIFY debounced per queue by 2ms.
type Config struct {
	// Schema is the PostgreSQL schema (namespace) that holds Docket's tables.
	// Empty means "public". It must be a plain lower-case identifier
	// (letters, digits, _) of at most 56 bytes, so that the LISTEN/NOTIFY
	// channel "docket_<schema>" fits PostgreSQL's 63-byte limit.
	Schema string

	// DisableHistory deletes completed jobs instead of moving them to
	// docket_jobs_done. Faster; loses the record of finished work.
	DisableHistory bool

	// ClaimCursorLag is how far behind its cursor a worker's claim looks
	// for jobs whose enqueuing transaction committed after later jobs were
	// claimed (see internal/engine/queue). Zero means 1s; -1 turns cursors off, so
	// every claim scans the claim index from its start.
	ClaimCursorLag time.Duration

	// NotifyDebounce is the shortest interval between two NOTIFYs for the
	// same queue sent by this Client. Zero means 2ms; -1 disables NOTIFY
	// entirely, leaving workers to their poll interval.
	NotifyDebounce time.Duration

	// Kinds, when set, gives the enqueue defaults of registered kinds
	// (*handlers.Registry implements it): every enqueue applies a kind's
	// queue, priority and max attempts where neither the options nor the
	// args' own Opts set them, and rejects a kind Kinds does not know with
	// ErrUnknownKind. Nil means any kind is enqueued with the built-in
	// defaults, as a service that enqueues kinds another service runs needs.
	Kinds Kinds

	// Propagator writes the trace context of an enqueue's ctx into the
	// job's Meta, where the worker reads it back to make the job's run
	// span a child of the enqueuer's span (see handlers, Tracing). It is
	// used only when ctx carries a valid span, and never overwrites a key
	// the caller set. Nil means W3C Trace Context
	// (propagation.TraceContext), whatever the global propagator is; pass
	// otel.GetTextMapPropagator() to follow the global one instead, or
	// propagation.NewCompositeTextMapPropagator() to write nothing.
	Propagator propagation.TextMapPropagator

	// MaxEventPayload is the largest event payload Publish accepts, in
	// bytes. Zero means DefaultMaxEventPayload (1 MiB, a NATS server's
	// default max_payload); -1 means no limit but PostgreSQL's own
	// (1 GiB - 1 MiB, see Message.Payload).
	// Set it to your broker's limit so that an oversized event is refused
	// in the producer's transaction instead of dead-lettered by the relay.
	MaxEventPayload int
}

// Client reads and writes Docket's tables in one schema. It holds no
// connection: every method takes the DB to use, so enqueue can join the
// caller's transaction. A Client is safe for concurrent use.
type Client struct {
	schema    string
	history   bool
	cursorLag time.Duration
	sql       statements
	list      map[string]string // ListJobs' statement per state
	debounce  time.Duration
	kinds     Kinds // Config.Kinds; nil: any kind, built-in defaults
	prop      propagation.TextMapPropagator
	// maxPayload is Config.MaxEventPayload resolved; <= 0: no limit.
	maxPayload int

	mu         sync.Mutex
	lastNotify map[string]time.Time

	// migrated is set once the client has seen its jobs table exist
	// (checkMigrated).
	migrated atomic.Bool
	// eventsMigrated is migrated for the events table (checkEvents).
	eventsMigrated atomic.Bool
}

// ErrInvalidSchema is returned by New for a schema name that is not a plain
// lower-case identifier of at most 56 bytes.
var ErrInvalidSchema = pgsql.ErrInvalidSchema

// statements holds the client's SQL rendered for its schema; each
// statement is written beside the code that runs it.
type statements struct {
	enqueue, enqueueMove, lookupKey, lookupKeys, nextIDs, enqueueSet, removeQueued string
	queueStatus, tableStatus, stuckJobs, stuckCount, unserved, workers, horizon    string
	overviewQueues, overviewTotals, overviewUnserved                               string
	unservedSchedules                                                              string
	pausedQueues, pauseQueue, resumeQueue                                          string
	deadList, replay, purgeDead, pruneRemoved, cancelJob, retryNow, jobState       string
	publish, publishKeyed, reserveSeqs, eventIDs, inbox, inboxPrune                string
	eventDeadList, eventReplay, eventPurge, eventStatus                            string
	jobByID, deleteJob, throughput, deadGroups                                     string
	setLimit, removeLimit, limits, limitUsage                                      string
}

func renderStatements(schema string) statements {
	r := func(s string) string { return pgsql.Render(s, schema) }
	return statements{
		enqueue: r(sqlEnqueue), enqueueMove: r(sqlEnqueueMove), lookupKey: r(sqlLookupKey),
		lookupKeys: r(sqlLookupKeys), nextIDs: r(sqlNextIDs), enqueueSet: r(sqlEnqueueSet),
		removeQueued: r(sqlRemoveQueued),
		queueStatus:  r(sqlQueueStatus), tableStatus: r(sqlTableStatus), stuckJobs: r(sqlStuckJobs),
		overviewQueues: r(sqlOverviewQueues), overviewTotals: r(sqlOverviewTotals), overviewUnserved: r(sqlOverviewUnserved),
		stuckCount: r(sqlStuckCount), unserved: r(sqlUnserved), workers: r(sqlWorkers),
		horizon: r(sqlHorizon), pausedQueues: r(sqlPausedQueues),
		pauseQueue: r(sqlPauseQueue), resumeQueue: r(sqlResumeQueue),
		unservedSchedules: r(sqlUnservedSchedules), deadList: r(sqlDeadList), replay: r(sqlReplay), purgeDead: r(sqlPurgeDead),
		pruneRemoved: r(sqlPruneRemoved), cancelJob: r(sqlCancelJob), retryNow: r(sqlRetryNow),
		jobState: r(sqlJobState),
		publish:  r(sqlPublish), publishKeyed: r(sqlPublishKeyed), reserveSeqs: r(sqlReserveSeqs),
		eventIDs: r(sqlEventIDs), inbox: r(sqlInbox), inboxPrune: r(sqlInboxPrune),
		eventDeadList: r(sqlEventDeadList), eventReplay: r(sqlEventReplay), eventPurge: r(sqlEventPurge),
		eventStatus: r(sqlEventStatus),
		jobByID:     r(sqlJobByID), deleteJob: r(sqlDeleteJob),
		throughput: r(sqlThroughput), deadGroups: r(sqlDeadGroups),
		setLimit: r(sqlSetLimit), removeLimit: r(sqlRemoveLimit),
		limits: r(sqlLimits), limitUsage: r(sqlLimitUsage),
	}
}

// New returns a Client for cfg. It fails only on an invalid schema name.
func New(cfg Config) (*Client, error) {
	schema, err := pgsql.Schema(cfg.Schema)
	if err != nil {
		return nil, err
	}
	debounce := cfg.NotifyDebounce
	if debounce == 0 {
		debounce = 2 * time.Millisecond
	}
	prop := cfg.Propagator
	if prop == nil {
		prop = propagation.TraceContext{}
	}
	maxPayload := cfg.MaxEventPayload
	if maxPayload == 0 {
		maxPayload = DefaultMaxEventPayload
	}
	return &Client{
		maxPayload: maxPayload,
		prop:       prop,
		schema:     schema,
		history:    !cfg.DisableHistory,
		cursorLag:  cfg.ClaimCursorLag,
		sql:        renderStatements(schema),
		list:       listStatements(schema),
		debounce:   debounce,
		kinds:      cfg.Kinds,
		lastNotify: make(map[string]time.Time),
	}, nil
}

// Schema returns the schema that holds the client's tables.
func (c *Client) Schema() string { return c.schema }

// History reports whether completed jobs are kept in docket_jobs_done.
func (c *Client) History() bool { return c.history }

// ClaimCursorLag returns Config.ClaimCursorLag, for the worker's claims.
func (c *Client) ClaimCursorLag() time.Duration { return c.cursorLag }

// NotifyChannel is the LISTEN/NOTIFY channel on which the client announces
// queues that received due jobs; the payload is the queue name.
func (c *Client) NotifyChannel() string { return "docket_" + c.schema }

// EventChannel is the LISTEN/NOTIFY channel on which the client announces
// committed events (Publish, PublishMany), at most once per debounce
// window; relays listen on it. The payload is empty.
func (c *Client) EventChannel() string { return pgsql.EventChannel(c.schema) }

// NotifyDebounce is the debounce window for NOTIFY, or -1 when disabled. A
// listener that wakes on a notification should claim once more after this
// window, since notifications inside it were skipped.
func (c *Client) NotifyDebounce() time.Duration { return c.debounce }

// ids runs a statement that returns one id column.
func (c *Client) ids(ctx context.Context, db Pgx, sql string, args ...any) ([]int64, error) {
	out, err := pgsql.Column[int64](ctx, db, sql, args...)
	return out, c.wrapErr(err)
}
