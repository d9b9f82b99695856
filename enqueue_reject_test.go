package docket_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/testkit/jsonbig"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// raw is a job whose payload holds JSON text as given, the way a
// json.RawMessage field passes it through.
type raw struct {
	P json.RawMessage `json:"p"`
}

func (raw) Kind() string { return "raw" }

// marshaler is a job whose MarshalJSON method returns its text.
type marshaler string

func (marshaler) Kind() string                   { return "marshaler" }
func (m marshaler) MarshalJSON() ([]byte, error) { return []byte(m), nil }

// caller is an application that writes its own row and enqueues in the same
// transaction, over pgx or database/sql.
type caller struct {
	ctx    context.Context
	pool   *pgxpool.Pool
	db     *sql.DB
	orders string // the caller's own table
}

// newCaller creates the caller's table in schema.
func newCaller(t *testing.T, pool *pgxpool.Pool, schema string) *caller {
	t.Helper()
	c := &caller{ctx: context.Background(), pool: pool, db: stdlib.OpenDBFromPool(pool), orders: `"` + schema + `".orders`}
	t.Cleanup(func() { c.db.Close() })
	if _, err := pool.Exec(c.ctx, `CREATE TABLE `+c.orders+` (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	return c
}

var drivers = []string{"pgx", "database/sql"}

// begin starts a transaction over driver, writes order id in it, and
// returns it with its commit. The transaction is rolled back at cleanup if
// the test did not commit it.
func (c *caller) begin(t *testing.T, driver string, id int) (handle, func() error) {
	t.Helper()
	insert := `INSERT INTO ` + c.orders + ` VALUES ($1)`
	switch driver {
	case "pgx":
		tx, err := c.pool.Begin(c.ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback(c.ctx) })
		if _, err := tx.Exec(c.ctx, insert, id); err != nil {
			t.Fatal(err)
		}
		return tx, func() error { return tx.Commit(c.ctx) }
	default:
		tx, err := c.db.BeginTx(c.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback() })
		if _, err := tx.ExecContext(c.ctx, insert, id); err != nil {
			t.Fatal(err)
		}
		return tx, tx.Commit
	}
}

// commitKeeps commits and checks that the caller's order id was stored.
func (c *caller) commitKeeps(t *testing.T, commit func() error, id int) {
	t.Helper()
	if err := commit(); err != nil {
		t.Fatalf("the caller's transaction no longer commits: %v", err)
	}
	var n int
	if err := c.pool.QueryRow(c.ctx, `SELECT count(*) FROM `+c.orders+` WHERE id = $1`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("the caller's row %d was lost", id)
	}
}

// handle is a pgx (docket.DB) or database/sql (docket.SQLDB) handle, for
// tests that run one case over both drivers.
type handle any

// enqueueVia calls Enqueue or EnqueueSQL, as db is a pgx or database/sql
// handle.
func enqueueVia(ctx context.Context, c *docket.Client, db handle, args core.Args, opts docket.Opts) (docket.Enqueued, error) {
	switch d := db.(type) {
	case docket.DB:
		return c.Enqueue(ctx, d, args, opts)
	case docket.SQLDB:
		return c.EnqueueSQL(ctx, d, args, opts)
	}
	panic(fmt.Sprintf("not a database handle: %T", db))
}

// enqueueManyVia calls EnqueueMany or EnqueueManySQL, as db is a pgx or
// database/sql handle.
func enqueueManyVia(ctx context.Context, c *docket.Client, db handle, items []docket.Item) ([]docket.Enqueued, error) {
	switch d := db.(type) {
	case docket.DB:
		return c.EnqueueMany(ctx, d, items)
	case docket.SQLDB:
		return c.EnqueueManySQL(ctx, d, items)
	}
	panic(fmt.Sprintf("not a database handle: %T", db))
}

// enqueuers are the ways in; EnqueueMany gets a valid item first, so that
// a batch fails as a whole. A delayed job takes EnqueueMany's set-based
// insert over pgx too, not COPY.
var enqueuers = []struct {
	name string
	call func(ctx context.Context, c *docket.Client, db handle, args core.Args, opts docket.Opts) error
}{
	{"Enqueue", func(ctx context.Context, c *docket.Client, db handle, args core.Args, opts docket.Opts) error {
		_, err := enqueueVia(ctx, c, db, args, opts)
		return err
	}},
	{"EnqueueMany", func(ctx context.Context, c *docket.Client, db handle, args core.Args, opts docket.Opts) error {
		_, err := enqueueManyVia(ctx, c, db, []docket.Item{{Args: noop{}}, {Args: args, Opts: opts}})
		return err
	}},
	{"EnqueueMany delayed", func(ctx context.Context, c *docket.Client, db handle, args core.Args, opts docket.Opts) error {
		opts.Delay = time.Hour
		_, err := enqueueManyVia(ctx, c, db, []docket.Item{{Args: noop{}, Opts: opts}, {Args: args, Opts: opts}})
		return err
	}},
}

// number is a job with a json.Number field, which json.Marshal writes as
// it is.
type number struct {
	N json.Number `json:"n"`
}

func (number) Kind() string { return "number" }

// deep nests Go values depth deep: json.Marshal has no depth limit of its
// own for them, unlike for the text a MarshalJSON method returns.
func deep(depth int) any {
	var v any = "secret"
	for range depth {
		v = []any{v}
	}
	return v
}

// anyArgs is a job whose payload is any value.
type anyArgs struct {
	V any `json:"v"`
}

func (anyArgs) Kind() string { return "any" }

// Values PostgreSQL cannot store are rejected before anything is sent: the
// caller's transaction commits its own row, and no job is written.
func TestEnqueueRejectsUnstorableInCallersTx(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := newCaller(t, b.Pool, b.Schema)
	at := func(year int) time.Time { return time.Date(year, time.January, 1, 0, 0, 0, 0, time.UTC) }
	cases := []struct {
		name string
		args core.Args
		opts docket.Opts
		want string // in the error
	}{
		{"meta value with NUL", noop{}, docket.Opts{Meta: map[string]string{"trace": "a\x00b"}}, `meta "trace": value contains a NUL`},
		{"meta key with NUL", noop{}, docket.Opts{Meta: map[string]string{"tr\x00ace": "v"}}, "meta key"},
		{"meta value not UTF-8", noop{}, docket.Opts{Meta: map[string]string{"trace": "\xff"}}, "not valid UTF-8"},
		{"meta key not UTF-8", noop{}, docket.Opts{Meta: map[string]string{"\xfe": "v"}}, "meta key"},
		{"unique key with NUL", noop{}, docket.Opts{UniqueKey: "order:\x00"}, "unique key contains a NUL"},
		{"unique key not UTF-8", noop{}, docket.Opts{UniqueKey: "order:\xc3\x28"}, "unique key is not valid UTF-8"},
		{"serial key with NUL", noop{}, docket.Opts{SerialKey: "a\x00"}, "serial key contains a NUL"},
		{"serial key not UTF-8", noop{}, docket.Opts{SerialKey: "a\xff"}, "serial key is not valid UTF-8"},
		{"tenant not UTF-8", noop{}, docket.Opts{Tenant: "t\xff"}, "tenant name"},
		{"tenant with NUL", noop{}, docket.Opts{Tenant: "t\x00"}, "tenant name"},
		{"queue not UTF-8", noop{}, docket.Opts{Queue: "q\xff"}, "queue name"},
		{"kind not UTF-8", named("k\xff"), docket.Opts{}, "kind name"},
		{"NUL in a string", nul{S: "secret\x00"}, docket.Opts{}, "escaped NUL"},
		{"escaped NUL", raw{P: json.RawMessage(`"secret\u0000"`)}, docket.Opts{}, "escaped NUL"},
		{"escaped backslash, then escaped NUL", raw{P: json.RawMessage(`"secret\\\u0000"`)}, docket.Opts{}, "escaped NUL"},
		{"escaped NUL in a key", raw{P: json.RawMessage(`{"secret\u0000":1}`)}, docket.Opts{}, "escaped NUL"},
		{"lone high surrogate", raw{P: json.RawMessage(`"secret\ud800"`)}, docket.Opts{}, "lone surrogate"},
		{"lone low surrogate", raw{P: json.RawMessage(`"\udc00secret"`)}, docket.Opts{}, "lone surrogate"},
		{"high surrogate, then no low one", raw{P: json.RawMessage(`"secret\ud83d\u0041"`)}, docket.Opts{}, "lone surrogate"},
		{"MarshalJSON with a lone surrogate", marshaler(`{"secret":"\ud800"}`), docket.Opts{}, "lone surrogate"},
		{"payload not UTF-8", raw{P: json.RawMessage("\"secret\xff\"")}, docket.Opts{}, "payload is not valid UTF-8"},
		{"RunAt in year 300000", noop{}, docket.Opts{RunAt: at(300000)}, "run at"},
		{"RunAt in year 10000", noop{}, docket.Opts{RunAt: at(10000)}, "run at"},
		{"RunAt in 4714 BC", noop{}, docket.Opts{RunAt: at(-4713)}, "run at"},
		{"RunAt in 1 BC", noop{}, docket.Opts{RunAt: at(0)}, "run at"},
		{"max attempts beyond integer", noop{}, docket.Opts{MaxAttempts: math.MaxInt32 + 1}, "max attempts"},

		// Numbers numeric cannot hold (SQLSTATE 22003 from the server).
		{"json.Number over numeric's range", number{N: "1e131072"}, docket.Opts{}, "numeric's range"},
		{"number over numeric's range", raw{P: json.RawMessage(`{"secret":1e131072}`)}, docket.Opts{}, "numeric's range"},
		{"number below numeric's scale", raw{P: json.RawMessage(`["secret",1e-16384]`)}, docket.Opts{}, "numeric's range"},
		{"too many digits after the point", raw{P: json.RawMessage(`[0.` + strings.Repeat("0", 16384) + `]`)}, docket.Opts{}, "numeric's range"},
		{"too many digits before the point", raw{P: json.RawMessage(`[` + strings.Repeat("9", 131073) + `]`)}, docket.Opts{}, "numeric's range"},
		// Past jsonb's limits (54000 or 54001 from the server).
		{"jsonb over 256 MiB", raw{P: jsonbig.Over()}, docket.Opts{}, "over its limit of 268435455"},
		{"nesting beyond the stack", anyArgs{V: deep(20000)}, docket.Opts{}, "more than 10000 deep"},
		// Stored, but never read back: 8,200 numbers of 131,072 digits.
		{"text too long to read back", raw{P: json.RawMessage("[" + strings.Repeat("1e131071,", 8199) + "1e131071]")}, docket.Opts{},
			"PostgreSQL would write payload and meta back as up to 1074806807 bytes"},
	}
	id := 0
	for _, tc := range cases {
		for _, e := range enqueuers {
			for _, driver := range drivers {
				id++
				t.Run(tc.name+"/"+e.name+"/"+driver, func(t *testing.T) {
					db, commit := c.begin(t, driver, id)
					err := e.call(c.ctx, b.client, db, tc.args, tc.opts)
					if !errors.Is(err, docket.ErrInvalidJob) {
						t.Fatalf("err = %v, want ErrInvalidJob", err)
					}
					if !strings.Contains(err.Error(), tc.want) {
						t.Errorf("error %q does not say %q", err, tc.want)
					}
					if e.name == "EnqueueMany" && !strings.Contains(err.Error(), "item 1") {
						t.Errorf("error %q does not name item 1", err)
					}
					if strings.Contains(err.Error(), "secret") {
						t.Errorf("error %q shows the payload", err)
					}
					c.commitKeeps(t, commit, id)
				})
			}
		}
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")); n != 0 {
		t.Fatalf("%d jobs written by bad input", n)
	}
}

// Meta jsonb cannot hold is refused naming its largest value's key: one
// value of 268,435,441 bytes makes the object {"big": ...} one byte over
// jsonb's limit (4 bytes of header, 8 of entries, 3 of key).
func TestValidateMetaOverJSONB(t *testing.T) {
	t.Parallel()
	meta := map[string]string{"big": strings.Repeat("v", 268435441)}
	err := docket.Validate(noop{}, docket.Opts{Meta: meta})
	const want = `kind noop: meta needs up to 268435456 bytes in jsonb, over its limit of 268435455 (its largest value is under key "big")`
	if !errors.Is(err, docket.ErrInvalidJob) || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %.300v, want ErrInvalidJob saying %s", err, want)
	}
}

// Missing tables, or a missing schema, are found without an error that
// would abort the caller's transaction.
func TestEnqueueNotMigratedInCallersTx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	c := newCaller(t, pool, pgtest.Schema(t))
	empty := pgtest.Schema(t)               // no tables: 42P01
	missing := pgtest.Schema(t) + "_absent" // no schema: 3F000
	id := 0
	for _, schema := range []string{empty, missing} {
		client, err := docket.NewClient(pool, docket.Config{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range enqueuers {
			for _, driver := range drivers {
				id++
				name := "no tables"
				if schema == missing {
					name = "no schema"
				}
				t.Run(name+"/"+e.name+"/"+driver, func(t *testing.T) {
					db, commit := c.begin(t, driver, id)
					err := e.call(ctx, client, db, noop{}, docket.Opts{})
					if !errors.Is(err, docket.ErrNotMigrated) || !strings.Contains(err.Error(), schema) {
						t.Fatalf("err = %v, want ErrNotMigrated naming schema %s", err, schema)
					}
					c.commitKeeps(t, commit, id)
				})
			}
		}
		if schema != empty {
			continue
		}
		// The client did not keep the negative answer: once migrated, it
		// enqueues.
		m, err := migrate.New(schema)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Up(ctx, pool); err != nil {
			t.Fatal(err)
		}
		for _, e := range enqueuers {
			if err := e.call(ctx, client, pool, noop{}, docket.Opts{}); err != nil {
				t.Fatalf("%s after migrating: %v", e.name, err)
			}
		}
	}
}

// The client keeps its positive answer, but a statement that then fails on
// missing tables still reports ErrNotMigrated, and the client asks again
// before the next enqueue, so a caller's transaction stays usable.
func TestEnqueueAfterTablesDropped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := newCaller(t, b.Pool, pgtest.Schema(t))
	m, err := migrate.New(b.Schema)
	if err != nil {
		t.Fatal(err)
	}
	id := 0
	for _, e := range enqueuers {
		if _, err := m.Up(b.Ctx, b.Pool); err != nil {
			t.Fatal(err)
		}
		if err := e.call(b.Ctx, b.client, b.Pool, noop{}, docket.Opts{}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Pool.Exec(b.Ctx, `DROP SCHEMA `+b.Schema+` CASCADE`); err != nil {
			t.Fatal(err)
		}
		if err := e.call(b.Ctx, b.client, b.Pool, noop{}, docket.Opts{}); !errors.Is(err, docket.ErrNotMigrated) {
			t.Fatalf("%s on a dropped schema: err = %v, want ErrNotMigrated", e.name, err)
		}
		for _, driver := range drivers {
			id++
			db, commit := c.begin(t, driver, id)
			if err := e.call(b.Ctx, b.client, db, noop{}, docket.Opts{}); !errors.Is(err, docket.ErrNotMigrated) {
				t.Fatalf("%s in a caller's %s transaction: err = %v, want ErrNotMigrated", e.name, driver, err)
			}
			c.commitKeeps(t, commit, id)
		}
	}
}

// text is a job with a string and a raw JSON value.
type text struct {
	S string          `json:"s"`
	R json.RawMessage `json:"r"`
}

func (text) Kind() string { return "text" }

// Text that merely looks like a NUL escape, and surrogate pairs, are stored
// as they are, by every path.
func TestEnqueueStoresLookalikeEscapes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := newCaller(t, b.Pool, b.Schema)
	// A backslash followed by u0000, in a Go string and in raw JSON.
	const path = `C:\u0000dir \\u0000 \`
	args := text{S: path, R: json.RawMessage(`"C:\\u0000dir \ud83d\ude00 \uD83D\uDE00 \u00e9"`)}
	const wantR = `C:\u0000dir 😀 😀 é`
	var ids []int64
	for i, driver := range drivers {
		db, commit := c.begin(t, driver, i)
		res, err := enqueueVia(b.Ctx, b.client, db, args, docket.Opts{})
		if err != nil {
			t.Fatalf("Enqueue over %s: %v", driver, err)
		}
		c.commitKeeps(t, commit, i)
		ids = append(ids, res.ID)
	}
	// EnqueueMany: COPY (pgx, no key) and the set-based insert (a key).
	out, err := b.client.EnqueueMany(b.Ctx, b.Pool, []docket.Item{{Args: args}, {Args: args, Opts: docket.Opts{UniqueKey: path}}})
	if err != nil {
		t.Fatal(err)
	}
	out2, err := b.client.EnqueueManySQL(b.Ctx, c.db, []docket.Item{{Args: args}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(out, out2...) {
		ids = append(ids, r.ID)
	}
	for _, id := range ids {
		var s, r string
		var payload []byte
		if err := b.Pool.QueryRow(b.Ctx, `SELECT payload->>'s', payload->>'r', payload FROM `+b.Table("docket_jobs")+` WHERE id = $1`, id).Scan(&s, &r, &payload); err != nil {
			t.Fatalf("job %d: %v", id, err)
		}
		if s != path || r != wantR {
			t.Errorf("job %d stored s=%q r=%q, want %q and %q", id, s, r, path, wantR)
		}
		var got struct{ S, R string }
		if err := json.Unmarshal(payload, &got); err != nil || got.S != path || got.R != wantR {
			t.Errorf("job %d payload %s decodes to %+v (%v)", id, payload, got, err)
		}
	}
}

// What validation accepts at its edges PostgreSQL stores, by every path: a
// payload nested 10,000 deep (inside the JSON array of a set-based insert,
// 10,002), and numbers at the ends of numeric's range.
func TestEnqueueStoresPayloadsAtTheLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := newCaller(t, b.Pool, b.Schema)
	edge := []core.Args{
		anyArgs{V: deep(9999)}, // the object around it is the 10,000th level
		raw{P: json.RawMessage(`[1e131071,-9.9999e131071,1e-16383,0e1073741822,1.0e-16382,` + strings.Repeat("9", 131072) + `]`)},
	}
	id := 1000
	for _, args := range edge {
		if err := docket.Validate(args, docket.Opts{}); err != nil {
			t.Fatalf("%T: %v", args, err)
		}
		for _, e := range enqueuers {
			for _, driver := range drivers {
				id++
				db, commit := c.begin(t, driver, id)
				if err := e.call(c.ctx, b.client, db, args, docket.Opts{}); err != nil {
					t.Fatalf("%T by %s over %s: %v", args, e.name, driver, err)
				}
				c.commitKeeps(t, commit, id)
			}
		}
		tx, err := b.Pool.Begin(b.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.EnqueueWorkflow(b.Ctx, tx, docket.Workflow{Name: "edge", Jobs: []docket.WorkflowJob{{Ref: "a", Args: args}}}); err != nil {
			t.Fatalf("%T by EnqueueWorkflow: %v", args, err)
		}
		if err := tx.Commit(b.Ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Each payload reads back as it went in.
	want := map[string]int{"any": 0, "raw": 0}
	rows, err := b.Pool.Query(b.Ctx, `SELECT kind, payload FROM `+b.Table("docket_jobs")+` WHERE kind IN ('any', 'raw')`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var kind string
		var payload []byte
		if err := rows.Scan(&kind, &payload); err != nil {
			t.Fatal(err)
		}
		var a anyArgs
		var r raw
		switch {
		case kind == "any" && json.Unmarshal(payload, &a) == nil && bytes.Count(payload, []byte("[")) == 9999,
			kind == "raw" && json.Unmarshal(payload, &r) == nil && bytes.Contains(r.P, []byte("1"+strings.Repeat("0", 131071))):
			want[kind]++
		default:
			t.Errorf("%s payload of %d bytes does not read back", kind, len(payload))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n := len(enqueuers)*len(drivers) + 1; want["any"] != n || want["raw"] != n {
		t.Fatalf("%v payloads read back, want %d of each", want, n)
	}
}

// RunAt is accepted up to its documented bounds, whatever the location.
func TestEnqueueRunAtBounds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The zero time, 0001-01-01T00:00Z, means now; the second after it is a
	// time like any other.
	first := time.Date(1, time.January, 1, 14, 0, 1, 0, time.FixedZone("UTC+14", 14*3600))
	last := time.Date(9999, time.December, 31, 13, 59, 59, 999999000, time.FixedZone("UTC-10", -10*3600))
	for _, e := range []string{"Enqueue", "EnqueueMany"} {
		for _, at := range []time.Time{first, last} {
			var id int64
			if e == "Enqueue" {
				res, err := b.client.Enqueue(b.Ctx, b.Pool, noop{}, docket.Opts{RunAt: at})
				if err != nil {
					t.Fatalf("%s at %s: %v", e, at, err)
				}
				id = res.ID
			} else {
				out, err := b.client.EnqueueMany(b.Ctx, b.Pool, []docket.Item{{Args: noop{}, Opts: docket.Opts{RunAt: at}}})
				if err != nil {
					t.Fatalf("%s at %s: %v", e, at, err)
				}
				id = out[0].ID
			}
			var got time.Time
			if err := b.Pool.QueryRow(b.Ctx, `SELECT run_at FROM `+b.Table("docket_jobs")+` WHERE id = $1`, id).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if !got.Equal(at) {
				t.Errorf("%s: run_at %s, want %s", e, got.UTC(), at.UTC())
			}
		}
		for _, at := range []time.Time{first.Add(-time.Second - time.Microsecond), last.Add(time.Microsecond)} {
			_, err := b.client.Enqueue(b.Ctx, b.Pool, noop{}, docket.Opts{RunAt: at})
			if !errors.Is(err, docket.ErrInvalidJob) {
				t.Errorf("RunAt %s: err = %v, want ErrInvalidJob", at.UTC(), err)
			}
		}
	}
}
