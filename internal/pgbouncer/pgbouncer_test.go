package pgbouncer_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/pgsrv"
	"github.com/docketq/docket/internal/pgtest"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/schedule"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// safeMode is the query parameter that makes pgx safe behind a
// transaction pooler: unnamed statements only, with parameter types
// described by the server (exec mode guesses them from Go types and sends
// []byte as bytea, which json columns reject).
const safeMode = "default_query_exec_mode=cache_describe"

func bouncer(t *testing.T) *pgsrv.Bouncer {
	t.Helper()
	b, err := pgsrv.StartBouncer(t.Context(), pgtest.URL(t), pgsrv.BouncerOptions{})
	if err != nil {
		t.Fatal(err) // never skip: CI installs pgbouncer
	}
	t.Cleanup(func() { _ = b.Stop() })
	return b
}

func pool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// cli builds cmd/docket once per test.
func cli(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "docket")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/docket").CombinedOutput()
	if err != nil {
		t.Fatalf("go build cmd/docket: %v\n%s", err, out)
	}
	return bin
}

func runCLI(bin string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "DATABASE_URL=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

type plainJob struct{ N int }

func (plainJob) Kind() string { return "pgb_plain" }

type txJob struct{ N int }

func (txJob) Kind() string { return "pgb_tx" }

type serialJob struct{ N int }

func (serialJob) Kind() string { return "pgb_serial" }

type tickJob struct{}

func (tickJob) Kind() string { return "pgb_tick" }

// seen counts the runs of each job.
type seen struct {
	mu   sync.Mutex
	runs map[string]int
}

func (s *seen) add(kind string, id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs[fmt.Sprintf("%s/%d", kind, id)]++
}

func (s *seen) count(prefix string) (jobs, twice int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, n := range s.runs {
		if strings.HasPrefix(k, prefix) {
			jobs++
			if n > 1 {
				twice++
			}
		}
	}
	return jobs, twice
}

// Everything through PgBouncer in transaction mode with the safe exec mode:
// the CLI migrates (twice) and reports status, transactions enqueue, and
// plain, transactional and serial-key handlers and a schedule run every
// job once, with nothing dead. LISTEN goes straight to PostgreSQL through
// handlers.Config.ListenURL.
func TestThroughBouncerTransactionMode(t *testing.T) {
	b := bouncer(t)
	schema := pgtest.Schema(t)
	url := b.URL(safeMode)
	bin := cli(t)
	for i := range 2 {
		if out, err := runCLI(bin, "migrate", "up", "--database-url", url, "--schema", schema); err != nil {
			t.Fatalf("migrate up, run %d: %v\n%s", i+1, err, out)
		}
	}

	db := pool(t, url)
	var s seen
	s.runs = map[string]int{}
	var serialMu sync.Mutex
	serialBusy := map[string]bool{}
	overlap := false
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(_ context.Context, j *handlers.Job[plainJob]) error {
		s.add("plain", j.ID)
		return nil
	}, handlers.KindOpts{})
	handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[txJob]) error {
		var one int
		if err := tx.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
			return err
		}
		s.add("tx", j.ID)
		return nil
	}, handlers.KindOpts{})
	handlers.MustRegister(reg, func(_ context.Context, j *handlers.Job[serialJob]) error {
		key := fmt.Sprint(j.Args.N % 5)
		serialMu.Lock()
		if serialBusy[key] {
			overlap = true
		}
		serialBusy[key] = true
		serialMu.Unlock()
		time.Sleep(time.Millisecond)
		serialMu.Lock()
		serialBusy[key] = false
		serialMu.Unlock()
		s.add("serial", j.ID)
		return nil
	}, handlers.KindOpts{})
	handlers.MustRegister(reg, func(_ context.Context, j *handlers.Job[tickJob]) error {
		s.add("tick", j.ID)
		return nil
	}, handlers.KindOpts{})

	c, err := docket.NewClient(db, docket.Config{
		Outbox:    outbox.Config{Schema: schema},
		Registry:  reg,
		Worker:    handlers.Config{ListenURL: pgtest.URL(t), PollInterval: 200 * time.Millisecond, Pools: []handlers.PoolConfig{{Queues: []string{outbox.DefaultQueue}, Concurrency: 20}}},
		Schedules: []schedule.Schedule{{Name: "pgb-tick", Spec: "@every 1s", Args: tickJob{}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()

	const txs = 200
	var wg sync.WaitGroup
	errs := make(chan error, txs)
	for i := range txs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- pgx.BeginFunc(t.Context(), db, func(tx pgx.Tx) error {
				_, err := c.EnqueueMany(t.Context(), tx, []outbox.Item{
					{Args: plainJob{N: i}},
					{Args: txJob{N: i}},
					{Args: serialJob{N: i}, Opts: outbox.Opts{SerialKey: fmt.Sprint(i % 5)}},
				})
				return err
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("enqueue through the bouncer: %v", err)
		}
	}

	deadline := time.Now().Add(60 * time.Second)
	for {
		p, _ := s.count("plain/")
		x, _ := s.count("tx/")
		sr, _ := s.count("serial/")
		tk, _ := s.count("tick/")
		if p == txs && x == txs && sr == txs && tk >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not drained: plain %d, tx %d, serial %d of %d; ticks %d", p, x, sr, txs, tk)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, k := range []string{"plain/", "tx/", "serial/", "tick/"} {
		if _, twice := s.count(k); twice != 0 {
			t.Errorf("%s: %d jobs ran more than once", k, twice)
		}
	}
	serialMu.Lock()
	if overlap {
		t.Error("two jobs with the same serial key ran at once")
	}
	serialMu.Unlock()
	var dead int
	if err := db.QueryRow(t.Context(), `SELECT count(*) FROM `+pgx.Identifier{schema, "docket_jobs_dead"}.Sanitize()).Scan(&dead); err != nil || dead != 0 {
		t.Errorf("%d dead jobs, %v", dead, err)
	}
	if out, err := runCLI(bin, "status", "--database-url", url, "--schema", schema); err != nil {
		t.Errorf("status through the bouncer: %v\n%s", err, out)
	}
}

// pgx's default query mode caches named prepared statements per
// connection; behind a transaction pooler the next transaction may run on
// another server connection, so enqueues fail. This is what the safe exec
// mode (or ListenURL/DisableNotify for LISTEN) is for.
func TestDefaultQueryModeFailsBehindBouncer(t *testing.T) {
	b := bouncer(t)
	schema := pgtest.Schema(t)
	m, err := outbox.NewMigrator(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(t.Context(), pool(t, b.URL(safeMode))); err != nil {
		t.Fatal(err)
	}
	ob, err := outbox.New(outbox.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	// Two client connections take turns, one transaction at a time. The
	// bouncer hands each transaction the server connection released last,
	// so the second client prepares its statement where the first already
	// did; pgx's default mode names prepared statements by their SQL.
	var clients [2]*pgx.Conn
	for i := range clients {
		c, err := pgx.Connect(t.Context(), b.URL(""))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		clients[i] = c
	}
	failed := 0
	var sample error
	for i := range 20 {
		err := pgx.BeginFunc(t.Context(), clients[i%2], func(tx pgx.Tx) error {
			_, err := ob.Enqueue(t.Context(), tx, plainJob{N: i}, outbox.Opts{})
			return err
		})
		if err != nil {
			failed++
			sample = err
		}
	}
	if failed == 0 {
		t.Fatal("every enqueue passed in pgx's default query mode behind a transaction pooler; the safe-mode test proves nothing")
	}
	if !strings.Contains(sample.Error(), "prepared statement") {
		t.Errorf("failure is not about prepared statements: %v", sample)
	}
	t.Logf("default query mode: %d of 20 enqueue transactions failed, e.g. %v", failed, sample)
}

// A ListenURL that does not parse is a config error, found by NewWorker.
func TestBadListenURL(t *testing.T) {
	db := pgtest.Pool(t)
	ob, err := outbox.New(outbox.Config{Schema: pgtest.Schema(t)})
	if err != nil {
		t.Fatal(err)
	}
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[plainJob]) error { return nil }, handlers.KindOpts{})
	w, err := handlers.NewWorker(handlers.Config{DB: db, Outbox: ob, Registry: reg, ListenURL: "postgres://%zz"})
	if !errors.Is(err, handlers.ErrInvalidConfig) || w != nil || !strings.Contains(err.Error(), "ListenURL") {
		t.Errorf("bad ListenURL: %v, want ErrInvalidConfig naming ListenURL", err)
	}
}

// The CLI's --pgbouncer (or DOCKET_PGBOUNCER=1) makes a plain URL, one
// without a query mode, safe through PgBouncer in transaction mode: migrate
// up twice, migrate status, jobs list and status all pass, several times
// over (each run reuses the bouncer's server connections, where pgx's
// default mode collides with its own prepared statements). A URL asking
// for describe_exec is refused as a usage error before anything runs.
func TestCLIPgBouncerSwitch(t *testing.T) {
	b := bouncer(t)
	schema := pgtest.Schema(t)
	url := b.URL("")
	bin := cli(t)
	for i := range 2 {
		for _, args := range [][]string{
			{"migrate", "up", "--pgbouncer"},
			{"migrate", "status", "--pgbouncer"},
			{"jobs", "list", "--pgbouncer"},
			{"status", "--pgbouncer"},
		} {
			args = append(args, "--database-url", url, "--schema", schema)
			if out, err := runCLI(bin, args...); err != nil {
				t.Fatalf("round %d: docket %s: %v\n%s", i+1, strings.Join(args[:3], " "), err, out)
			}
		}
	}
	cmd := exec.Command(bin, "status", "--database-url", url, "--schema", schema)
	cmd.Env = append(os.Environ(), "DATABASE_URL=", "DOCKET_PGBOUNCER=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("status with DOCKET_PGBOUNCER=1: %v\n%s", err, out)
	}
	out, err := runCLI(bin, "status", "--pgbouncer", "--database-url", b.URL("default_query_exec_mode=describe_exec"), "--schema", schema)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(out, "describe_exec") {
		t.Errorf("--pgbouncer with describe_exec: %v, want a usage error (exit 2) naming it\n%s", err, out)
	}
}
