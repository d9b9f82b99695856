package enqueue

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"go.opentelemetry.io/otel/propagation"
)

// Config configures a Client; docket.Config documents the fields users set.
type Config struct {
	// Schema holds Docket's tables; empty means "public".
	Schema string
	// NotifyDebounce is the shortest interval between two NOTIFYs for one
	// queue: zero means 2ms, -1 no NOTIFY.
	NotifyDebounce time.Duration
	// Kinds gives the registered kinds' enqueue defaults and refuses other
	// kinds; nil accepts any kind with the built-in defaults.
	Kinds Kinds
	// Propagator writes an enqueue's trace context into the job's meta;
	// nil means W3C Trace Context.
	Propagator propagation.TextMapPropagator
	// DisableHistory: a step waiting for a child workflow is deleted when
	// it completes, instead of moved to history (as the worker does with
	// its completions).
	DisableHistory bool
}

// Client writes jobs into the tables of one schema: the one place a job's
// options are resolved and validated, for every enqueue path. It holds no
// connection: every method takes the handle to write through, so an
// enqueue joins the caller's transaction. It is safe for concurrent use.
type Client struct {
	schema   string
	debounce time.Duration
	kinds    Kinds // nil: any kind, built-in defaults
	prop     propagation.TextMapPropagator
	history  bool

	notified pgsql.Debounce // the queues announced, by NOTIFY

	// migrated is set once the client has seen its jobs table exist
	// (checkMigrated).
	migrated atomic.Bool
}

// New returns a Client for cfg. It fails only on an invalid schema name
// (pgsql.ErrInvalidSchema).
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
	return &Client{schema: schema, debounce: debounce, kinds: cfg.Kinds, prop: prop, history: !cfg.DisableHistory, notified: pgsql.Debounce{Window: debounce}}, nil
}

// Schema returns the schema that holds the client's tables.
func (c *Client) Schema() string { return c.schema }

// NotifyChannel is the LISTEN/NOTIFY channel on which the client announces
// queues that received due jobs; the payload is the queue name.
func (c *Client) NotifyChannel() string { return pgsql.NotifyChannel(c.schema) }

// NotifyDebounce is the debounce window for NOTIFY, or -1 when disabled.
func (c *Client) NotifyDebounce() time.Duration { return c.debounce }

// ids runs a statement that returns one id column.
func (c *Client) ids(ctx context.Context, db pgsql.DB, sql string, args ...any) ([]int64, error) {
	out, err := pgsql.Column[int64](ctx, db, sql, args...)
	return out, c.wrapErr(err)
}
