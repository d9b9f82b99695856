package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/testkit/pgsrv"
	"github.com/docketq/docket/migrate"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The demo's job kinds.

type sendReceipt struct {
	OrderID int64 `json:"order_id"`
}

func (sendReceipt) Kind() string { return "demo.send_receipt" }

// flakyCharge fails its first attempt, then succeeds.
type flakyCharge struct {
	OrderID int64 `json:"order_id"`
}

func (flakyCharge) Kind() string { return "demo.flaky_charge" }

// brokenExport always fails, so it ends in the dead-letter table.
type brokenExport struct {
	OrderID int64 `json:"order_id"`
}

func (brokenExport) Kind() string { return "demo.broken_export" }

// ledgerPost is serialized per tenant: two posts to one ledger never overlap.
type ledgerPost struct {
	Tenant string `json:"tenant"`
	N      int    `json:"n"`
}

func (ledgerPost) Kind() string { return "demo.ledger_post" }

const demoSchema = "docket_demo"

func demoCommand() *command {
	return &command{
		name:    "demo",
		summary: "run jobs end to end against a local PostgreSQL (found or started)",
		about: `Uses $DATABASE_URL, else 127.0.0.1:5432, else a private cluster it starts and
removes; works in the schema docket_demo, which it drops at the end unless
--keep is given (a new run replaces it).`,
		flags: func(fs *flag.FlagSet) action {
			orders := fs.Int("orders", 500, "orders to create, each with a receipt job")
			keep := fs.Bool("keep", false, "keep the schema "+demoSchema+" afterwards, to look at with docket status or docket dashboard")
			return func(ctx context.Context, pos []string, out, errOut io.Writer) error {
				if err := wantArgs(pos, 0, ""); err != nil {
					return err
				}
				if *orders < 1 {
					return fmt.Errorf("%w: --orders must be at least 1", errUsage)
				}
				return runDemo(ctx, *orders, *keep, out, errOut)
			}
		},
	}
}

func runDemo(ctx context.Context, orders int, keep bool, out, errOut io.Writer) (err error) {
	fmt.Fprintln(errOut, "docket demo: looking for PostgreSQL ($DATABASE_URL, 127.0.0.1:5432, or a private cluster)...")
	fromEnv := os.Getenv("DATABASE_URL") != ""
	srv, err := pgsrv.Discover(ctx)
	if err != nil {
		return err
	}
	defer srv.Stop()
	pool, err := connect(ctx, srv.URL, 20, false)
	if err != nil {
		return err
	}
	defer pool.Close()
	where := "the server on 127.0.0.1:5432"
	switch {
	case srv.Private != nil:
		where = "a private cluster it started (removed when the demo ends)"
	case fromEnv:
		where = "$DATABASE_URL"
	}
	target := displayURL(pool.Config().ConnConfig.Config)
	fmt.Fprintf(errOut, "docket demo: using %s, from %s, schema %s\n", target, where, demoSchema)
	defer func() {
		err = errors.Join(err, leaveBehind(pool, target, keep && srv.Private == nil, srv.Private != nil, out))
	}()
	d := &demo{pool: pool, out: out, errOut: errOut, orders: orders}
	return d.run(ctx)
}

// displayURL is the connection without its password, as a user would pass
// it to --database-url.
func displayURL(c pgconn.Config) string {
	u := url.URL{Scheme: "postgres", User: url.User(c.User), Host: net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))), Path: "/" + c.Database}
	if strings.HasPrefix(c.Host, "/") { // a Unix socket directory
		u.Host, u.RawQuery = "", "host="+url.QueryEscape(c.Host)
	}
	return u.String()
}

// leaveBehind drops the demo's schema, or says how to look at it when it
// is kept; a private cluster goes with everything in it.
func leaveBehind(pool *pgxpool.Pool, target string, keep, private bool, out io.Writer) error {
	switch {
	case private:
		fmt.Fprintf(out, "\nLeft behind: nothing: the private cluster goes, with schema %s (--keep needs a server that outlives the demo).\n", demoSchema)
		return nil
	case keep:
		fmt.Fprintf(out, "\nLeft behind: schema %s in %s (the next demo replaces it). Look at it with\n"+
			"  docket status --database-url %s --schema %s\n"+
			"  docket dashboard --database-url %s --schema %s\n"+
			"and remove it with DROP SCHEMA %s CASCADE.\n", demoSchema, target, target, demoSchema, target, demoSchema, demoSchema)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+demoSchema+` CASCADE`); err != nil {
		return fmt.Errorf("dropping schema %s: %w", demoSchema, err)
	}
	fmt.Fprintf(out, "\nLeft behind: nothing (dropped schema %s; --keep keeps it to look at).\n", demoSchema)
	return nil
}

type demo struct {
	pool   *pgxpool.Pool
	client *docket.Client
	out    io.Writer
	errOut io.Writer
	orders int

	done        atomic.Int64
	ledgerBusy  atomic.Int32 // handlers inside a ledger post right now
	ledgerClash atomic.Int32 // times two posts of one tenant overlapped
}

func (d *demo) run(ctx context.Context) error {
	// A fresh schema each run, so the summary describes this run only.
	if _, err := d.pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+demoSchema+` CASCADE`); err != nil {
		return err
	}
	m, err := migrate.New(demoSchema)
	if err != nil {
		return err
	}
	if _, err := m.Up(ctx, d.pool); err != nil {
		return err
	}
	fmt.Fprintf(d.errOut, "docket demo: migrated schema %s\n", demoSchema)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[sendReceipt]) error {
		d.done.Add(1)
		return nil
	}, handlers.KindOpts{})
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[flakyCharge]) error {
		if j.Attempt == 1 {
			return errors.New("payment provider timed out")
		}
		d.done.Add(1)
		return nil
	}, handlers.KindOpts{Backoff: func(int) time.Duration { return 200 * time.Millisecond }})
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[brokenExport]) error {
		d.done.Add(1)
		return errors.New("export target rejected the file")
	}, handlers.KindOpts{MaxAttempts: 2, Backoff: func(int) time.Duration { return 100 * time.Millisecond }})
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[ledgerPost]) error {
		if d.ledgerBusy.Add(1) > 1 {
			d.ledgerClash.Add(1)
		}
		defer d.ledgerBusy.Add(-1)
		select {
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
		d.done.Add(1)
		return nil
	}, handlers.KindOpts{})

	// One client enqueues with the kinds' registered defaults and runs
	// their handlers.
	if d.client, err = docket.NewClient(d.pool, docket.Config{
		Schema:   demoSchema,
		Registry: reg,
		Worker: docket.WorkerConfig{
			Pools:  []docket.PoolConfig{{Name: "default", Queues: []string{"default"}, Concurrency: 50}},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		},
	}); err != nil {
		return err
	}
	if _, err := d.pool.Exec(ctx, `CREATE TABLE `+demoSchema+`.orders (id bigint PRIMARY KEY, tenant text NOT NULL, total_cents int NOT NULL)`); err != nil {
		return err
	}
	total, dup, err := d.enqueue(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.errOut, "docket demo: created %d orders and %d jobs in the same transactions (duplicate receipt enqueue reported existing job %d)\n", d.orders, total, dup)

	start := time.Now()
	if err := d.client.Start(ctx); err != nil {
		return err
	}
	// Every job ends in history or the dead-letter table; wait for that.
	waitErr := d.progress(ctx, total)
	stopCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := d.client.Stop(stopCtx); err != nil {
		return fmt.Errorf("worker shutdown: %w", err)
	}
	if waitErr != nil {
		return waitErr
	}
	fmt.Fprintf(d.errOut, "docket demo: workers stopped cleanly after %s\n", time.Since(start).Round(time.Millisecond))
	return d.summary(ctx)
}

// enqueue creates the orders, each in a transaction with its jobs, and
// returns how many distinct jobs exist and the id a duplicate enqueue reported.
func (d *demo) enqueue(ctx context.Context) (jobs int, dupID int64, err error) {
	tenants := []string{"acme", "globex", "initech"}
	for i := 1; i <= d.orders; i++ {
		id := int64(i)
		err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO `+demoSchema+`.orders VALUES ($1, $2, $3)`, id, tenants[i%3], 100*i); err != nil {
				return err
			}
			_, err := d.client.Enqueue(ctx, tx, sendReceipt{OrderID: id}, docket.Opts{UniqueKey: fmt.Sprintf("receipt:%d", id), Tenant: tenants[i%3]})
			return err
		})
		if err != nil {
			return 0, 0, err
		}
		jobs++
	}
	// Enqueuing a receipt again while the first is in flight inserts nothing.
	res, err := d.client.Enqueue(ctx, d.pool, sendReceipt{OrderID: 1}, docket.Opts{UniqueKey: "receipt:1"})
	if err != nil {
		return 0, 0, err
	}
	if !res.Duplicate {
		return 0, 0, errors.New("a duplicate unique key was inserted twice")
	}
	more := []docket.Item{
		{Args: flakyCharge{OrderID: 2}},
		{Args: brokenExport{OrderID: 3}}, // 2 attempts: its kind's default
		{Args: ledgerPost{Tenant: "acme", N: 1}, Opts: docket.Opts{SerialKey: "ledger:acme", Tenant: "acme"}},
		{Args: ledgerPost{Tenant: "acme", N: 2}, Opts: docket.Opts{SerialKey: "ledger:acme", Tenant: "acme"}},
	}
	if _, err := d.client.EnqueueMany(ctx, d.pool, more); err != nil {
		return 0, 0, err
	}
	return jobs + len(more), res.ID, nil
}

// progress shows how many jobs have finished until all have, or ctx ends.
func (d *demo) progress(ctx context.Context, total int) error {
	tty := isTerminal(d.errOut)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastPrint := time.Time{}
	for {
		var finished int
		err := d.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+demoSchema+`.docket_jobs_done) + (SELECT count(*) FROM `+demoSchema+`.docket_jobs_dead)`).Scan(&finished)
		if err != nil {
			return err
		}
		if tty {
			fmt.Fprintf(d.errOut, "\r%s %d/%d jobs finished", bar(finished, total, 30), finished, total)
		} else if time.Since(lastPrint) > time.Second || finished == total {
			fmt.Fprintf(d.errOut, "docket demo: %d/%d jobs finished\n", finished, total)
			lastPrint = time.Now()
		}
		if finished >= total {
			if tty {
				fmt.Fprintln(d.errOut)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func bar(n, total, width int) string {
	filled := width * n / max(total, 1)
	b := make([]byte, width)
	for i := range b {
		if i < filled {
			b[i] = '#'
		} else {
			b[i] = '.'
		}
	}
	return "[" + string(b) + "]"
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// summary prints what the database says happened.
func (d *demo) summary(ctx context.Context) error {
	var done, retried, dead, left int
	var lag, maxLag float64
	err := d.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM `+demoSchema+`.docket_jobs_done),
		(SELECT count(*) FROM `+demoSchema+`.docket_jobs_done WHERE attempts > 1),
		(SELECT count(*) FROM `+demoSchema+`.docket_jobs_dead),
		(SELECT count(*) FROM `+demoSchema+`.docket_jobs),
		(SELECT COALESCE(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - run_at)), 0) FROM `+demoSchema+`.docket_jobs_done),
		(SELECT COALESCE(max(extract(epoch FROM started_at - run_at)), 0) FROM `+demoSchema+`.docket_jobs_done)`).
		Scan(&done, &retried, &dead, &left, &lag, &maxLag)
	if err != nil {
		return err
	}
	var deadReason, deadErr string
	if err := d.pool.QueryRow(ctx, `SELECT reason, COALESCE(last_error, '') FROM `+demoSchema+`.docket_jobs_dead LIMIT 1`).Scan(&deadReason, &deadErr); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	fmt.Fprintf(d.out, "\nDocket demo summary (read from schema %s)\n", demoSchema)
	fmt.Fprintf(d.out, "  completed          %d\n", done)
	fmt.Fprintf(d.out, "  retried, then ok   %d\n", retried)
	fmt.Fprintf(d.out, "  dead-lettered      %d", dead)
	if dead > 0 {
		fmt.Fprintf(d.out, " (%s: %s)", deadReason, deadErr)
	}
	fmt.Fprintf(d.out, "\n  still queued       %d\n", left)
	fmt.Fprintf(d.out, "  wait in the queue  median %.1f ms, max %.1f ms (due → started, including the\n"+
		"                     wait behind the backlog enqueued before the worker started)\n", lag*1000, maxLag*1000)
	fmt.Fprintf(d.out, "  ledger posts overlapping for one tenant: %d\n", d.ledgerClash.Load())
	if left != 0 || d.ledgerClash.Load() != 0 {
		return errors.New("demo finished with jobs still queued or serialized jobs overlapping")
	}
	return nil
}
