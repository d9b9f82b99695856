package outbox

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"go.opentelemetry.io/otel/propagation"
)

// DB is a pgx database handle: pgx.Tx, *pgx.Conn and *pgxpool.Pool satisfy
// it (Exec, Query and QueryRow as pgx has them). Pass the caller's pgx.Tx
// to publish atomically with the caller's own writes.
type DB = pgsql.DB

// SQLDB is a database/sql handle: *sql.Tx, *sql.DB and *sql.Conn satisfy
// it (ExecContext and QueryContext), and so does an Ent transaction built
// with the sql/execquery feature (use package ent for that).
type SQLDB = pgsql.SQLDB

// Config configures a Client. The zero value is valid: tables in schema
// "public", NOTIFY debounced by 2ms, payloads of at most 1 MiB.
type Config struct {
	// Schema is the PostgreSQL schema (namespace) that holds Docket's
	// tables. Empty means "public". It must be a plain lower-case
	// identifier (letters, digits, _) of at most 56 bytes.
	Schema string

	// NotifyDebounce is the shortest interval between two NOTIFYs that
	// announce committed events to the relays, sent by this Client. Zero
	// means 2ms; -1 disables NOTIFY, leaving relays to their poll interval.
	NotifyDebounce time.Duration

	// Propagator writes the trace context of a publish's ctx into the
	// event's headers, unless the caller set those keys. Nil means W3C
	// Trace Context (propagation.TraceContext).
	Propagator propagation.TextMapPropagator

	// MaxEventPayload is the largest event payload Publish accepts, in
	// bytes. Zero means DefaultMaxEventPayload (1 MiB, a NATS server's
	// default max_payload); -1 means no limit but one PostgreSQL row's
	// (1 GiB - 1 MiB). Set it to your broker's limit so that an oversized
	// event is refused in the producer's transaction instead of
	// dead-lettered by the relay.
	MaxEventPayload int
}

// Client writes events into the outbox of one schema, records consumed
// events in the inbox, and triages dead events. It holds no connection:
// every method takes the handle to write through, so a publish joins the
// caller's transaction. A Client is safe for concurrent use.
type Client struct {
	schema string
	prop   propagation.TextMapPropagator
	// maxPayload is Config.MaxEventPayload resolved; <= 0: no limit.
	maxPayload int
	notified   pgsql.Debounce // the events channel announced

	// eventsMigrated is set once the client has seen the events table
	// exist (checkEvents).
	eventsMigrated atomic.Bool
}

// ErrInvalidSchema is returned by New for a schema name that is not a plain
// lower-case identifier of at most 56 bytes.
var ErrInvalidSchema = pgsql.ErrInvalidSchema

// ErrNotMigrated is returned when Docket's tables, or the schema that
// should hold them, do not exist: run `docket migrate up`.
var ErrNotMigrated = pgsql.ErrNotMigrated

// ErrPgBouncer wraps the error of a statement that met a prepared
// statement missing or duplicated on its server connection, as pgx's
// default query mode meets behind PgBouncer in transaction mode; its
// message says what to change (docs/compatibility.md, "PgBouncer").
var ErrPgBouncer = pgsql.ErrPgBouncer

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
	return &Client{schema: schema, prop: prop, maxPayload: maxPayload, notified: pgsql.Debounce{Window: debounce}}, nil
}

// Schema returns the schema that holds the client's tables.
func (c *Client) Schema() string { return c.schema }

// EventChannel is the LISTEN/NOTIFY channel on which the client announces
// committed events (Publish, PublishMany), at most once per debounce
// window; relays listen on it. The payload is empty.
func (c *Client) EventChannel() string { return pgsql.EventChannel(c.schema) }

// wrapErr names the missing migration and the PgBouncer fix where the
// database's error says so.
func (c *Client) wrapErr(err error) error {
	if err == nil {
		return nil
	}
	if pgsql.Missing(err) {
		c.eventsMigrated.Store(false)
	}
	return pgsql.Wrap(err, c.schema)
}

// ids runs a statement that returns one id column.
func (c *Client) ids(ctx context.Context, db DB, sql string, args ...any) ([]int64, error) {
	out, err := pgsql.Column[int64](ctx, db, sql, args...)
	return out, c.wrapErr(err)
}
