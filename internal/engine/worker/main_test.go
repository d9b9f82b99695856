package worker

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/partition"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestMain(m *testing.M) {
	if os.Getenv(envProcess) != "" {
		// Re-executed as a worker process by a fence, shutdown or signal test.
		os.Exit(workerProcess())
	}
	pgtest.Main(m)
}

// env is one test's database: a fresh migrated schema and a pool.
type env struct {
	t      testing.TB
	pool   *pgxpool.Pool
	schema string
	jobs   *enqueue.Client // enqueues, as docket.Client's Enqueue does
	ops    *admin.Client   // the operator's operations, as docket.Client's Admin
	latest int             // the newest migration (migrate.Migrator.Latest), which /readyz wants
	q      *queue.Queue    // the protocol on the schema's tables, for setup and checks
	logs   *logBuffer
}

func setup(t testing.TB, maxConns int32) *env {
	t.Helper()
	schema := pgtest.Schema(t)
	pool := pgtest.PoolN(t, maxConns)
	return setupOn(t, pool, schema)
}

func setupOn(t testing.TB, pool *pgxpool.Pool, schema string) *env {
	t.Helper()
	e := migratedOn(t, pool, schema)
	// Create the history partitions the workers would create, so that no
	// worker runs partition DDL in the tests (a worker process frozen in the
	// middle of it would block every completion).
	if err := partition.Of(e.q.Schema()).Ensure(t.Context(), pool, time.Now(), partition.Ahead); err != nil {
		t.Fatal(err)
	}
	return e
}

// migratedOn migrates schema with migrate.Up, as an application or
// `docket migrate up` does, and returns its env. Up also creates the
// history partitions of today and the next days.
func migratedOn(t testing.TB, pool *pgxpool.Pool, schema string) *env {
	t.Helper()
	e, m := newEnv(t, pool, schema)
	if _, err := m.Up(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	return e
}

// migratedBySQLOn migrates schema by applying each migration's up file
// (migrate.Migrator.SQL), as a team's own migration tool applies those of
// `docket migrate sql`, and returns its env. The files create no history
// partitions: the first worker meets a schema without any.
func migratedBySQLOn(t testing.TB, pool *pgxpool.Pool, schema string) *env {
	t.Helper()
	e, m := newEnv(t, pool, schema)
	for _, mig := range m.Migrations() {
		sql, err := m.SQL(mig.Version, "up")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(t.Context(), sql); err != nil {
			t.Fatalf("migration %d: %v", mig.Version, err)
		}
	}
	return e
}

// newEnv returns the env of schema, not yet migrated, and its migrator.
func newEnv(t testing.TB, pool *pgxpool.Pool, schema string) (*env, *migrate.Migrator) {
	t.Helper()
	jobs, err := enqueue.New(enqueue.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	ops, err := admin.New(admin.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(schema, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, pool: pool, schema: schema, jobs: jobs, ops: ops, latest: m.Latest(), q: q, logs: newLogBuffer(t)}
	return e, m
}

// worker starts a worker on the env with quick test defaults; it is stopped
// when the test ends. Like docket.NewClient's, it serves the env's schema
// and expects the enqueuers' NOTIFY debounce.
func (e *env) worker(reg *handlers.Registry, cfg Config) *Worker {
	e.t.Helper()
	cfg.DB, cfg.Schema, cfg.Handlers = e.pool, e.schema, reg
	cfg.NotifyDebounce, cfg.LatestMigration = e.jobs.NotifyDebounce(), e.latest
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 50 * time.Millisecond
	}
	if cfg.Lease == 0 {
		cfg.Lease = 5 * time.Second
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = e.logs.logger()
	}
	w, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := w.Start(e.t.Context()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		if err := w.Stop(context.Background()); err != nil {
			e.t.Errorf("stop: %v", err)
		}
	})
	return w
}

func (e *env) enqueue(args core.Args, opts enqueue.Opts) int64 {
	e.t.Helper()
	res, err := e.jobs.Enqueue(e.t.Context(), e.pool, args, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return res.ID
}

// exec runs a statement with {{schema}} replaced.
func (e *env) exec(sql string, args ...any) {
	e.t.Helper()
	ctx, cancel := queryCtx()
	defer cancel()
	if _, err := e.pool.Exec(ctx, e.sql(sql), args...); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
}

func (e *env) sql(s string) string { return strings.ReplaceAll(s, "{{schema}}", e.schema) }

// logJobsOnFailure prints, if the test fails, what is left in the jobs
// table by state: what a stuck test was waiting for.
func (e *env) logJobsOnFailure() {
	e.t.Cleanup(func() {
		if !e.t.Failed() {
			return
		}
		ctx, cancel := queryCtx()
		defer cancel()
		rows, err := e.pool.Query(ctx, e.sql(`SELECT state, count(*), count(locked_by),
			min(run_at - now())::text, max(attempts), min(ready_seq), max(ready_seq)
			FROM {{schema}}.docket_jobs GROUP BY state`))
		if err != nil {
			e.t.Logf("jobs left: %v", err)
			return
		}
		defer rows.Close()
		for rows.Next() {
			var state, due string
			var n, locked, attempts int
			var minSeq, maxSeq int64
			if err := rows.Scan(&state, &n, &locked, &due, &attempts, &minSeq, &maxSeq); err != nil {
				e.t.Logf("jobs left: %v", err)
				return
			}
			e.t.Logf("jobs left: %d %s (%d locked), earliest due in %s, max attempts %d, ready_seq %d..%d",
				n, state, locked, due, attempts, minSeq, maxSeq)
		}
	})
}

// count runs a query returning one integer.
func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	ctx, cancel := queryCtx()
	defer cancel()
	if err := e.pool.QueryRow(ctx, e.sql(sql), args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// tryCount is count that reports errors instead of failing the test, for
// polling while the server restarts.
func (e *env) tryCount(sql string, args ...any) int {
	var n int
	ctx, cancel := queryCtx()
	defer cancel()
	if err := e.pool.QueryRow(ctx, e.sql(sql), args...).Scan(&n); err != nil {
		return -1
	}
	return n
}

// where says where a job is: "ready", "scheduled", "running", "done", "dead" or "".
func (e *env) where(id int64) string {
	e.t.Helper()
	var s string
	ctx, cancel := queryCtx()
	defer cancel()
	err := e.pool.QueryRow(ctx, e.sql(`
		SELECT COALESCE(
			(SELECT state FROM {{schema}}.docket_jobs WHERE id = $1),
			(SELECT 'done' FROM {{schema}}.docket_jobs_done WHERE id = $1 LIMIT 1),
			(SELECT 'dead' FROM {{schema}}.docket_jobs_dead WHERE id = $1), '')`), id).Scan(&s)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// waitWhere waits until job id is in state want.
func (e *env) waitWhere(id int64, want string, timeout time.Duration) {
	e.t.Helper()
	waitFor(e.t, timeout, fmt.Sprintf("job %d to be %s", id, want), func() bool { return e.where(id) == want })
}

type deadRow struct {
	reason, lastError string
	attempts          int
}

func (e *env) dead(id int64) deadRow {
	e.t.Helper()
	var d deadRow
	ctx, cancel := queryCtx()
	defer cancel()
	err := e.pool.QueryRow(ctx, e.sql(
		`SELECT reason, COALESCE(last_error, ''), attempts FROM {{schema}}.docket_jobs_dead WHERE id = $1`), id).
		Scan(&d.reason, &d.lastError, &d.attempts)
	if err != nil {
		e.t.Fatalf("dead job %d: %v", id, err)
	}
	return d
}

// queryCtx bounds a test's own queries, so a lock held by a stuck worker
// fails the test instead of hanging it.
func queryCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 15*time.Second)
}

// waitFor polls cond until it holds or the timeout passes. On a timeout it
// logs this process's goroutines, grouped by stack, to show where an
// in-process worker was stuck.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			var stacks strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
			t.Logf("goroutines:\n%s", stacks.String())
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// logBuffer collects a test's logs, printed when the test fails (or with
// -v), and lets the test search them.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func newLogBuffer(t testing.TB) *logBuffer {
	b := &logBuffer{}
	t.Cleanup(func() {
		if t.Failed() || testing.Verbose() {
			t.Logf("worker logs:\n%s", b.String())
		}
	})
	return b
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 4<<20 {
		return len(p), nil // enough to debug; keep memory bounded
	}
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) contains(s string) bool { return strings.Contains(b.String(), s) }

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// Args types used by the tests.

type testArgs struct {
	N      int    `json:"n"`
	Secret string `json:"secret,omitempty"` // stands for personal data: must never be logged
}

func (testArgs) Kind() string { return "test" }

type otherArgs struct{}

func (otherArgs) Kind() string { return "other" }

// counter counts handler runs by job id.
type counter struct {
	mu sync.Mutex
	n  map[int64]int
	at map[int64][]time.Time
}

func newCounter() *counter { return &counter{n: map[int64]int{}, at: map[int64][]time.Time{}} }

func (c *counter) add(id int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[id]++
	c.at[id] = append(c.at[id], time.Now())
	return c.n[id]
}

func (c *counter) get(id int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[id]
}

func (c *counter) times(id int64) []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.at[id]...)
}

// syncSlice collects values from handlers for the test to read.
type syncSlice[T any] struct {
	mu sync.Mutex
	s  []T
}

func (s *syncSlice[T]) add(v T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.s = append(s.s, v)
}

func (s *syncSlice[T]) get() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]T(nil), s.s...)
}
