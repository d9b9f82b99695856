package outbox

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a Client. The zero value is valid: tables in schema
// "public", history kept, NOTIFY debounced per queue by 2ms.
type Config struct {
	// Schema is the PostgreSQL schema (namespace) that holds Docket's tables.
	// Empty means "public". It must be a plain lower-case identifier.
	Schema string

	// DisableHistory deletes completed jobs instead of moving them to
	// docket_jobs_done. Faster; loses the record of finished work.
	DisableHistory bool

	// ClaimCursorLag is how far behind its cursor a claimer looks for jobs
	// whose enqueuing transaction committed after later jobs were claimed
	// (see cursor.go). Zero means 1s; -1 turns cursors off, so every claim
	// scans the claim index from its start.
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
}

// Client reads and writes Docket's tables in one schema. It holds no
// connection: every method takes the DB to use, so enqueue can join the
// caller's transaction. A Client is safe for concurrent use.
type Client struct {
	schema   string
	history  bool
	q        queries
	op       opQueries
	debounce time.Duration
	kinds    Kinds // Config.Kinds; nil: any kind, built-in defaults

	mu         sync.Mutex
	lastNotify map[string]time.Time

	cursors *cursors

	// migrated is set once the client has seen its jobs table exist
	// (checkMigrated).
	migrated atomic.Bool
}

var schemaRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// ErrInvalidSchema is returned by New for a schema name that is not a plain
// lower-case identifier.
var ErrInvalidSchema = errors.New("docket: invalid schema name")

// New returns a Client for cfg. It fails only on an invalid schema name.
func New(cfg Config) (*Client, error) {
	schema := cfg.Schema
	if schema == "" {
		schema = "public"
	}
	if !schemaRE.MatchString(schema) {
		return nil, fmt.Errorf("%w %q: use lower-case letters, digits and _", ErrInvalidSchema, schema)
	}
	debounce := cfg.NotifyDebounce
	if debounce == 0 {
		debounce = 2 * time.Millisecond
	}
	lag := cfg.ClaimCursorLag
	if lag == 0 {
		lag = time.Second
	}
	return &Client{
		cursors:    newCursors(lag),
		schema:     schema,
		history:    !cfg.DisableHistory,
		q:          renderQueries(schema),
		op:         renderOpQueries(schema),
		debounce:   debounce,
		kinds:      cfg.Kinds,
		lastNotify: make(map[string]time.Time),
	}, nil
}

// Schema returns the schema that holds the client's tables.
func (c *Client) Schema() string { return c.schema }

// History reports whether completed jobs are kept in docket_jobs_done.
func (c *Client) History() bool { return c.history }

// NotifyChannel is the LISTEN/NOTIFY channel on which the client announces
// queues that received due jobs; the payload is the queue name.
func (c *Client) NotifyChannel() string { return "docket_" + c.schema }

// NotifyDebounce is the debounce window for NOTIFY, or -1 when disabled. A
// listener that wakes on a notification should claim once more after this
// window, since notifications inside it were skipped.
func (c *Client) NotifyDebounce() time.Duration { return c.debounce }

// render substitutes the quoted schema for {{schema}} in SQL text.
func render(sql, schema string) string {
	return strings.ReplaceAll(sql, "{{schema}}", `"`+schema+`"`)
}
