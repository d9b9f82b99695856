package pgbouncer_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/testkit/pgsrv"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/schedule"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// recipe is what docs/compatibility.md ("PgBouncer") prescribes for every
// connection string that goes through PgBouncer in transaction mode: pgx's
// exec mode, which prepares no named statement. LISTEN goes straight to
// PostgreSQL through ListenURL.
const recipe = "default_query_exec_mode=exec"

// fix is what every error of the plain URL behind the bouncer must say.
var fix = docket.ErrPgBouncer.Error()

// bouncer starts a private pgbouncer in transaction mode in front of the
// package's database. Without a pgbouncer binary the test is skipped with
// the reason, except under CI, where .ci/run installs it.
func bouncer(t *testing.T, opts pgsrv.BouncerOptions) *pgsrv.Bouncer {
	t.Helper()
	b, err := pgsrv.StartBouncer(t.Context(), pgtest.URL(t), opts)
	if errors.Is(err, pgsrv.ErrNoBouncer) && os.Getenv("CI") == "" {
		t.Skipf("skipped: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Stop() })
	return b
}

// pool opens a pool on url the documented way (docket.ParsePoolConfig).
func pool(t *testing.T, url string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := docket.ParsePoolConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	p, err := pgxpool.NewWithConfig(t.Context(), cfg)
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
	out, err := exec.Command("go", "build", "-o", bin, "../../../cmd/docket").CombinedOutput()
	if err != nil {
		t.Fatalf("go build cmd/docket: %v\n%s", err, out)
	}
	return bin
}

func runCLI(bin string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "DATABASE_URL=", "DOCKET_PGBOUNCER=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// logs collects a worker's logs for the test to search, and prints them
// when the test fails.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func newLogs(t *testing.T) *logs {
	l := &logs{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("worker logs:\n%s", l.String())
		}
	})
	return l
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logs) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// waitFor polls cond every 20ms until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
}

type plainJob struct{ N int }

func (plainJob) Kind() string { return "pgb_plain" }

type txJob struct{ N int }

func (txJob) Kind() string { return "pgb_tx" }

type serialJob struct{ N int }

func (serialJob) Kind() string { return "pgb_serial" }

type tickJob struct{}

func (tickJob) Kind() string { return "pgb_tick" }

type stepJob struct{ Step string }

func (stepJob) Kind() string { return "pgb_step" }

// seen counts the runs of each job and remembers when each ran.
type seen struct {
	mu   sync.Mutex
	runs map[string]int
	at   map[string]time.Time
}

func (s *seen) add(kind string, id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := fmt.Sprintf("%s/%d", kind, id)
	s.runs[k]++
	s.at[k] = time.Now()
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

func (s *seen) ranAt(kind string, id int64) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.at[fmt.Sprintf("%s/%d", kind, id)]
	return at, ok
}

// The documented recipe, everything through PgBouncer in transaction mode
// but LISTEN: the CLI migrates (twice) and reports status; transactions
// enqueue; plain, transactional and serial-key handlers, a schedule and a
// workflow run every job once, with nothing dead. Notifications arrive
// through ListenURL: the worker's check passes and, with polling once a
// minute, a job enqueued through the bouncer runs within seconds.
func TestRecipeThroughBouncer(t *testing.T) {
	b := bouncer(t, pgsrv.BouncerOptions{})
	schema := pgtest.Schema(t)
	url := b.URL(recipe)
	bin := cli(t)
	for i := range 2 {
		if out, err := runCLI(bin, "migrate", "up", "--database-url", url, "--schema", schema); err != nil {
			t.Fatalf("migrate up, run %d: %v\n%s", i+1, err, out)
		}
	}

	db := pool(t, url, 10)
	s := seen{runs: map[string]int{}, at: map[string]time.Time{}}
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
	handlers.MustRegister(reg, func(_ context.Context, j *handlers.Job[stepJob]) error {
		s.add("step-"+j.Args.Step, j.ID)
		return nil
	}, handlers.KindOpts{})

	log := newLogs(t)
	c, err := docket.NewClient(db, docket.Config{
		Schema:   schema,
		Registry: reg,
		Worker: docket.WorkerConfig{
			ListenURL: pgtest.URL(t),
			// Polling alone would find a job only after a minute: what runs
			// sooner was announced by a notification.
			PollInterval: time.Minute,
			MetricsAddr:  "127.0.0.1:0",
			Logger:       log.logger(),
			Pools:        []docket.PoolConfig{{Queues: []string{docket.DefaultQueue}, Concurrency: 20}},
		},
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
				_, err := c.EnqueueMany(t.Context(), tx, []docket.Item{
					{Args: plainJob{N: i}},
					{Args: txJob{N: i}},
					{Args: serialJob{N: i}, Opts: docket.Opts{SerialKey: fmt.Sprint(i % 5)}},
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
	// a, then b and c, then d after both.
	wf, err := c.EnqueueWorkflow(t.Context(), db, docket.Workflow{Name: "pgb", Jobs: []docket.WorkflowJob{
		{Ref: "a", Args: stepJob{Step: "a"}},
		{Ref: "b", Args: stepJob{Step: "b"}, After: docket.After("a")},
		{Ref: "c", Args: stepJob{Step: "c"}, After: docket.After("a")},
		{Ref: "d", Args: stepJob{Step: "d"}, After: docket.After("b", "c")},
	}})
	if err != nil {
		t.Fatalf("enqueue a workflow through the bouncer: %v", err)
	}

	waitFor(t, 45*time.Second, "every job to run", func() bool {
		p, _ := s.count("plain/")
		x, _ := s.count("tx/")
		sr, _ := s.count("serial/")
		tk, _ := s.count("tick/")
		steps, _ := s.count("step-")
		return p == txs && x == txs && sr == txs && tk >= 1 && steps == 4
	})
	for _, k := range []string{"plain/", "tx/", "serial/", "tick/", "step-"} {
		if _, twice := s.count(k); twice != 0 {
			t.Errorf("%s: %d jobs ran more than once", k, twice)
		}
	}
	serialMu.Lock()
	if overlap {
		t.Error("two jobs with the same serial key ran at once")
	}
	serialMu.Unlock()
	at := func(ref string) time.Time {
		t, _ := s.ranAt("step-"+ref, wf.Jobs[ref])
		return t
	}
	if at("d").Before(at("b")) || at("d").Before(at("c")) || at("b").Before(at("a")) || at("c").Before(at("a")) {
		t.Errorf("workflow steps out of order: a %v, b %v, c %v, d %v", at("a"), at("b"), at("c"), at("d"))
	}
	waitFor(t, 15*time.Second, "the workflow to be succeeded", func() bool {
		st, err := c.Admin().Workflows().Status(t.Context(), db, wf.ID)
		return err == nil && st.State == admin.WorkflowSucceeded
	})
	var dead int
	if err := db.QueryRow(t.Context(), `SELECT count(*) FROM `+pgx.Identifier{schema, "docket_jobs_dead"}.Sanitize()).Scan(&dead); err != nil || dead != 0 {
		t.Errorf("%d dead jobs, %v", dead, err)
	}

	// Notifications: the worker's own check passed, quietly...
	waitFor(t, 15*time.Second, "the notification check to end", func() bool {
		done, _ := c.NotifyCheck()
		return done
	})
	if _, err := c.NotifyCheck(); err != nil {
		t.Errorf("notification check through ListenURL: %v", err)
	}
	if strings.Contains(log.String(), "notifications do not reach") {
		t.Error("the worker warned that notifications do not reach it")
	}
	if code, body := readyz(t, c.MetricsAddr()); code != 200 || body != "ready\n" {
		t.Errorf("/readyz = %d %q, want 200 \"ready\\n\"", code, body)
	}
	// ...and a job enqueued through the bouncer, on an idle worker that
	// polls once a minute, runs within seconds.
	var id int64
	if err := pgx.BeginFunc(t.Context(), db, func(tx pgx.Tx) error {
		res, err := c.Enqueue(t.Context(), tx, plainJob{N: -1}, docket.Opts{})
		id = res.ID
		return err
	}); err != nil {
		t.Fatal(err)
	}
	committed := time.Now()
	waitFor(t, 20*time.Second, "the announced job to run", func() bool {
		_, ok := s.ranAt("plain", id)
		return ok
	})
	ran, _ := s.ranAt("plain", id)
	t.Logf("pickup through ListenURL: %s", ran.Sub(committed))

	for _, args := range [][]string{
		{"status", "--database-url", url},
		{"status", "--pgbouncer", "--database-url", b.URL("")},
	} {
		if out, err := runCLI(bin, append(args, "--schema", schema)...); err != nil {
			t.Errorf("docket %s through the bouncer: %v\n%s", strings.Join(args[:2], " "), err, out)
		}
	}
}

// readyz fetches /readyz from a worker's metrics address.
func readyz(t *testing.T, addr string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// wantFix checks that every error in errs wraps docket.ErrPgBouncer, whose
// message is the fix, and that there is at least one: a run without
// failures would check nothing.
func wantFix(t *testing.T, what string, errs []error) {
	t.Helper()
	if len(errs) == 0 {
		t.Errorf("%s: no error with the plain URL through one server connection; nothing was checked", what)
	}
	for _, err := range errs {
		if !errors.Is(err, docket.ErrPgBouncer) || !strings.Contains(err.Error(), fix) {
			t.Errorf("%s: %v, want it wrapped in docket.ErrPgBouncer", what, err)
		}
	}
}

// The plain URL a user pastes, through PgBouncer in transaction mode with
// one server connection: pgx's default mode prepares named statements
// there, and every other client connection that prepares the same
// statement collides with them (SQLSTATE 42P05). Every error, from the CLI
// and from each entry point of the API, says what to change; so do the
// worker's Start and its logs of claims and outcomes that meet statements
// the server connection no longer holds (26000), and the worker warns that
// its LISTEN through the bouncer hears nothing.
func TestPlainURLErrorsNameTheFix(t *testing.T) {
	t.Run("cli", plainCLI)
	t.Run("api", plainAPI)
	t.Run("worker", plainWorker)
}

// Each command runs twice: the second run at the latest prepares what the
// first left prepared on the server connection.
func plainCLI(t *testing.T) {
	b := bouncer(t, pgsrv.BouncerOptions{PoolSize: 1})
	schema := pgtest.Schema(t)
	bin := cli(t)
	for _, cmd := range [][]string{{"migrate", "up"}, {"status"}, {"schedules", "list"}, {"workflows", "list"}} {
		failed := 0
		for range 2 {
			out, err := runCLI(bin, append(cmd, "--database-url", b.URL(""), "--schema", schema)...)
			if err == nil {
				continue
			}
			if failed++; failed == 1 {
				t.Logf("%s", out)
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, fix) {
				t.Errorf("docket %s: %v, want exit code 1 and the fix:\n%s", strings.Join(cmd, " "), err, out)
			}
		}
		if failed == 0 {
			t.Errorf("docket %s passed twice with the plain URL through one server connection; nothing was checked", strings.Join(cmd, " "))
		}
		if cmd[0] == "migrate" {
			// What the message says works, on the same server connection.
			if out, err := runCLI(bin, "migrate", "up", "--pgbouncer", "--database-url", b.URL(""), "--schema", schema); err != nil {
				t.Fatalf("migrate up --pgbouncer: %v\n%s", err, out)
			}
		}
	}
}

// Two client connections take turns on the bouncer's one server
// connection: the first prepares each statement, the second's prepare of
// the same statement fails.
func plainAPI(t *testing.T) {
	b := bouncer(t, pgsrv.BouncerOptions{PoolSize: 1})
	schema := pgtest.Schema(t)
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(t.Context(), pgtest.Pool(t)); err != nil {
		t.Fatal(err)
	}
	events, err := outbox.New(outbox.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	adm, err := admin.New(admin.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	clients := []*pgxpool.Pool{pool(t, b.URL(""), 1), pool(t, b.URL(""), 1)}
	sqlDBs := []*sql.DB{stdlib.OpenDBFromPool(clients[0]), stdlib.OpenDBFromPool(clients[1])}
	for _, d := range sqlDBs {
		t.Cleanup(func() { _ = d.Close() })
	}
	// An enqueue-only client, and one client on each pool for
	// RegisterSchedules, which runs through the client's pool and takes
	// only kinds among Config.Schedules'.
	jobs, err := docket.NewClient(clients[0], docket.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[tickJob]) error { return nil }, handlers.KindOpts{})
	scheds := make([]*docket.Client, 2)
	for i, p := range clients {
		scheds[i], err = docket.NewClient(p, docket.Config{Schema: schema, Registry: reg,
			Schedules: []schedule.Schedule{{Name: "pgb-tick", Spec: "@hourly", Args: tickJob{}}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	ops := []struct {
		name string
		run  func(ctx context.Context, i, n int) error
	}{
		{"Enqueue in a transaction", func(ctx context.Context, i, n int) error {
			return pgx.BeginFunc(ctx, clients[i], func(tx pgx.Tx) error {
				_, err := jobs.Enqueue(ctx, tx, plainJob{N: n}, docket.Opts{})
				return err
			})
		}},
		{"EnqueueMany", func(ctx context.Context, i, n int) error {
			_, err := jobs.EnqueueMany(ctx, clients[i], []docket.Item{{Args: plainJob{N: n}}, {Args: txJob{N: n}}})
			return err
		}},
		{"EnqueueSQL", func(ctx context.Context, i, n int) error {
			_, err := jobs.EnqueueSQL(ctx, sqlDBs[i], plainJob{N: n}, docket.Opts{})
			return err
		}},
		{"EnqueueWorkflow", func(ctx context.Context, i, n int) error {
			_, err := jobs.EnqueueWorkflow(ctx, clients[i], docket.Workflow{Name: "w", Jobs: []docket.WorkflowJob{
				{Ref: "a", Args: stepJob{Step: "a"}}, {Ref: "b", Args: stepJob{Step: "b"}, After: docket.After("a")},
			}})
			return err
		}},
		{"Publish", func(ctx context.Context, i, n int) error {
			_, err := events.Publish(ctx, clients[i], outbox.Message{Topic: "pgb.plain", Key: fmt.Sprint(n), Payload: []byte("{}")})
			return err
		}},
		{"PublishMany", func(ctx context.Context, i, n int) error {
			_, err := events.PublishMany(ctx, clients[i], []outbox.Message{{Topic: "pgb.plain", Payload: []byte("{}")}})
			return err
		}},
		{"RegisterSchedules", func(ctx context.Context, i, n int) error {
			return scheds[i].RegisterSchedules(ctx, schedule.Schedule{Name: fmt.Sprintf("pgb-%d", n), Spec: "@hourly", Args: tickJob{}})
		}},
		{"Migrator.Up", func(ctx context.Context, i, _ int) error {
			_, err := m.Up(ctx, clients[i])
			return err
		}},
		{"Status", func(ctx context.Context, i, _ int) error {
			_, err := adm.Status(ctx, clients[i], admin.Thresholds{})
			return err
		}},
	}
	for _, op := range ops {
		var errs []error
		for n := range 4 {
			if err := op.run(t.Context(), n%2, n); err != nil {
				errs = append(errs, err)
			}
		}
		wantFix(t, op.name, errs)
	}
}

// A worker on the plain URL: its LISTEN goes through the bouncer and hears
// nothing; a second worker's Start collides with the first's statements;
// once the bouncer replaces its server connection, the first worker's
// claims and outcomes meet statements that are gone there.
func plainWorker(t *testing.T) {
	b := bouncer(t, pgsrv.BouncerOptions{PoolSize: 1})
	schema := pgtest.Schema(t)
	direct := pgtest.Pool(t)
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(t.Context(), direct); err != nil {
		t.Fatal(err)
	}
	jobs, err := docket.NewClient(direct, docket.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	var s seen
	s.runs, s.at = map[string]int{}, map[string]time.Time{}
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(_ context.Context, j *handlers.Job[plainJob]) error {
		s.add("plain", j.ID)
		return nil
	}, handlers.KindOpts{})
	start := func(log *logs) (*docket.Client, error) {
		w, err := docket.NewClient(pool(t, b.URL(""), 1), docket.Config{
			Schema: schema, Registry: reg,
			Worker: docket.WorkerConfig{Logger: log.logger(), PollInterval: 100 * time.Millisecond, NotifyCheckTimeout: time.Second},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(t.Context()); err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = w.Stop(context.Background()) })
		return w, nil
	}
	enqueue := func(n int) int64 {
		res, err := jobs.Enqueue(t.Context(), direct, plainJob{N: n}, docket.Opts{})
		if err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	ran := func(id int64) func() bool {
		return func() bool { _, ok := s.ranAt("plain", id); return ok }
	}

	log := newLogs(t)
	w, err := start(log)
	if err != nil {
		t.Fatalf("the first worker on the bouncer's fresh server connection: %v", err)
	}
	const warn = "notifications do not reach this worker"
	waitFor(t, 30*time.Second, "the WARN about notifications", func() bool { return strings.Contains(log.String(), warn) })
	if _, err := w.NotifyCheck(); !errors.Is(err, docket.ErrNotifyLost) || !strings.Contains(log.String(), "ListenURL") {
		t.Errorf("NotifyCheck = %v, want ErrNotifyLost; the WARN must name ListenURL", err)
	}
	first := enqueue(1)
	waitFor(t, 30*time.Second, "a job to run by polling", ran(first))

	_, err = start(newLogs(t))
	wantFix(t, "a second worker's Start", []error{err})

	if err := b.Reconnect(t.Context()); err != nil {
		t.Fatal(err)
	}
	second := enqueue(2)
	waitFor(t, 30*time.Second, "a job to run after the bouncer replaced its server connection", ran(second))
	// The outcome is written after the handler ran.
	waitFor(t, 30*time.Second, "the job's outcome", func() bool {
		var n int
		err := direct.QueryRow(t.Context(), `SELECT count(*) FROM `+pgx.Identifier{schema, "docket_jobs"}.Sanitize()+` WHERE id = $1`, second).Scan(&n)
		return err == nil && n == 0
	})
	text := log.String()
	for _, want := range []string{"claim failed", "writing job outcomes failed"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in the worker's logs after the bouncer replaced its server connection", want)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "SQLSTATE") && !strings.Contains(line, fix) {
			t.Errorf("a logged database error does not name the fix: %s", line)
		}
	}
}

// A ListenURL that does not parse is a config error, found by NewClient.
func TestBadListenURL(t *testing.T) {
	db := pgtest.Pool(t)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[plainJob]) error { return nil }, handlers.KindOpts{})
	w, err := docket.NewClient(db, docket.Config{Schema: pgtest.Schema(t), Registry: reg,
		Worker: docket.WorkerConfig{ListenURL: "postgres://%zz"}})
	if !errors.Is(err, docket.ErrInvalidConfig) || w != nil || !strings.Contains(err.Error(), "ListenURL") {
		t.Errorf("bad ListenURL: %v, want ErrInvalidConfig naming ListenURL", err)
	}
}

// The CLI's --pgbouncer (or DOCKET_PGBOUNCER=1) makes a plain URL, one
// without a query mode, safe through PgBouncer in transaction mode: every
// verb that reads runs, several times over (each run reuses the bouncer's
// server connections, where pgx's default mode would collide with
// statements an earlier run prepared). A URL asking for describe_exec is
// refused as a usage error before anything runs.
func TestCLIPgBouncerSwitch(t *testing.T) {
	b := bouncer(t, pgsrv.BouncerOptions{PoolSize: 1})
	schema := pgtest.Schema(t)
	url := b.URL("")
	bin := cli(t)
	for i := range 2 {
		for _, args := range [][]string{
			{"migrate", "up"},
			{"migrate", "status"},
			{"migrate", "list"},
			{"status"},
			{"jobs", "list"},
			{"dlq", "list"},
			{"queues", "list"},
			{"schedules", "list"},
			{"workflows", "list"},
			{"limits", "list"},
		} {
			args = append(args, "--pgbouncer", "--database-url", url, "--schema", schema)
			if out, err := runCLI(bin, args...); err != nil {
				t.Fatalf("round %d: docket %s: %v\n%s", i+1, strings.Join(args, " "), err, out)
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

// The recipe these tests run is the one docs/compatibility.md gives, in
// that one place: operations.md links to it and repeats none of it, and
// the errors and the WARN point at it.
func TestRecipeIsDocumented(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	_, section, ok := strings.Cut(read("compatibility.md"), "\n## PgBouncer\n")
	if !ok {
		t.Fatal(`docs/compatibility.md has no "## PgBouncer" section (the anchor #pgbouncer the errors name)`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, want := range []string{recipe, "ListenURL", "--pgbouncer", "docket.ErrPgBouncer", "NotifyCheckTimeout", "pool_mode"} {
		if !strings.Contains(section, want) {
			t.Errorf("the PgBouncer section of docs/compatibility.md does not mention %s", want)
		}
	}
	ops := read("operations.md")
	if !strings.Contains(ops, "compatibility.md#pgbouncer") || strings.Contains(ops, "default_query_exec_mode") || strings.Contains(ops, "QueryExecMode") {
		t.Error("docs/operations.md must link to the recipe in compatibility.md#pgbouncer, not give one of its own")
	}
	for name, text := range map[string]string{"docket.ErrPgBouncer": fix, "docket.ErrNotifyLost": docket.ErrNotifyLost.Error()} {
		if !strings.Contains(text, "docs/compatibility.md#pgbouncer") || !strings.Contains(text, "ListenURL") {
			t.Errorf("%s does not point at the recipe: %s", name, text)
		}
	}
	if !strings.Contains(fix, recipe) || !strings.Contains(fix, "--pgbouncer") {
		t.Errorf("docket.ErrPgBouncer does not give the recipe's query mode and the CLI switch: %s", fix)
	}
}
