package docket_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/testkit/pgsrv"
	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/schedule"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// shardJob is a job of one tenant group's database; DB names the database
// it was enqueued to.
type shardJob struct {
	DB string `json:"db"`
	N  int    `json:"n"`
}

func (shardJob) Kind() string { return "shard_job" }

// shardTick is a schedule's job, kept in every database under one name.
type shardTick struct{}

func (shardTick) Kind() string { return "shard_tick" }

// shard is one database of TestOneProcessServesThreeDatabases.
type shard struct {
	name    string
	cluster *pgsrv.Cluster
	pool    *pgxpool.Pool
	client  *docket.Client
}

// TestOneProcessServesThreeDatabases runs one process with one handler
// registry against three private PostgreSQL clusters, one client (worker and
// schedules) each, as docs/scaling.md describes. Jobs enqueued to each
// database run in that database (the handler's transaction sees the
// database's own name) and exactly once (their effect rows, written in the
// job's transaction, are unique and all there); the schedule of the same
// name fires in each database. The second database is killed mid-run: the
// other two drain every job enqueued meanwhile, and once it is back its
// jobs, committed before and during the kill, all run. The three workers
// share one Prometheus registry with a database label each.
func TestOneProcessServesThreeDatabases(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three PostgreSQL clusters")
	}
	ctx := t.Context()
	const perRound = 200

	var mu sync.Mutex
	runs := map[string]map[int]int{} // database -> job -> runs seen by the handler
	wrong := []string{}              // runs that met another database than their job's
	reg := handlers.NewRegistry()
	handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[shardJob]) error {
		var db string
		if err := tx.QueryRow(ctx, `SELECT name FROM whoami`).Scan(&db); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO effects (n) VALUES ($1)`, j.Args.N); err != nil {
			return err
		}
		time.Sleep(3 * time.Millisecond) // keep jobs in flight when a database dies
		mu.Lock()
		defer mu.Unlock()
		if db != j.Args.DB {
			wrong = append(wrong, fmt.Sprintf("job %d of %s ran in %s", j.Args.N, j.Args.DB, db))
		}
		if runs[db] == nil {
			runs[db] = map[int]int{}
		}
		runs[db][j.Args.N]++
		return nil
	}, handlers.KindOpts{})
	handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[shardTick]) error {
		_, err := tx.Exec(ctx, `INSERT INTO ticks SELECT name FROM whoami`)
		return err
	}, handlers.KindOpts{})

	metrics := prometheus.NewRegistry()
	shards := make([]*shard, 3)
	var wg sync.WaitGroup
	errs := make([]error, len(shards))
	for i := range shards {
		shards[i] = &shard{name: fmt.Sprintf("tenants%d", i+1)}
		wg.Go(func() {
			var err error
			shards[i].cluster, err = pgsrv.StartCluster(ctx)
			errs[i] = err
		})
	}
	wg.Wait()
	for i, s := range shards {
		if s.cluster != nil {
			t.Cleanup(func() { _ = s.cluster.Stop() })
		}
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
	}
	for i, s := range shards {
		cfg, err := pgxpool.ParseConfig(s.cluster.URL())
		if err != nil {
			t.Fatal(err)
		}
		cfg.MaxConns = 8
		if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.pool.Close)
		m, err := migrate.New("")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Up(ctx, s.pool); err != nil {
			t.Fatal(err)
		}
		if _, err := s.pool.Exec(ctx, `CREATE TABLE whoami (name text);
			INSERT INTO whoami VALUES ('`+s.name+`');
			CREATE TABLE effects (n int PRIMARY KEY);
			CREATE TABLE ticks (name text)`); err != nil {
			t.Fatal(err)
		}
		wcfg := docket.WorkerConfig{
			Pools:        []docket.PoolConfig{{Name: "default", Queues: []string{"default"}, Concurrency: 8}},
			PollInterval: 100 * time.Millisecond, Lease: 2 * time.Second, ShutdownTimeout: 2 * time.Second,
			Logger:   slog.New(slog.DiscardHandler),
			Metrics:  metrics,
			Database: s.name, MetricsStatus: true,
		}
		if i == 0 {
			wcfg.MetricsAddr = "127.0.0.1:0" // one endpoint serves the three
		}
		s.client, err = docket.NewClient(s.pool, docket.Config{
			Registry:  reg,
			Worker:    wcfg,
			Schedules: []schedule.Schedule{{Name: "tick", Spec: "@every 1s", Args: shardTick{}}},
			Scheduler: schedule.Config{Logger: slog.New(slog.DiscardHandler)},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.client.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.client.Stop(context.Background()) })
	}

	next := map[string]int{}
	enqueue := func(s *shard, n int) {
		t.Helper()
		batch := make([]docket.Item, n)
		for i := range batch {
			batch[i] = docket.Item{Args: shardJob{DB: s.name, N: next[s.name]}}
			next[s.name]++
		}
		if _, err := s.client.EnqueueMany(ctx, s.pool, batch); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	// Each database's connections, sampled while it works: the client's
	// pool (which the test shares) and the worker's LISTEN connection.
	peakConns := map[string]int{}
	effects := func(s *shard) int {
		var n, conns int
		if err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM effects),
			(SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')`).Scan(&n, &conns); err != nil {
			return -1
		}
		peakConns[s.name] = max(peakConns[s.name], conns)
		return n
	}
	waitFor := func(what string, timeout time.Duration, done func() bool) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for !done() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after %v", what, timeout)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	for _, s := range shards {
		enqueue(s, perRound)
	}
	down := shards[1]
	waitFor("a tenth of the doomed database's jobs run", 30*time.Second, func() bool { return effects(down) >= perRound/10 })
	if n := effects(down); n == perRound {
		t.Fatalf("%s ran all its jobs before the kill", down.name)
	}
	if err := down.cluster.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if n := effects(down); n >= 0 {
		t.Fatalf("%s still answers after the kill (%d effects)", down.name, n)
	}
	for _, s := range []*shard{shards[0], shards[2]} {
		enqueue(s, perRound)
	}
	for _, s := range []*shard{shards[0], shards[2]} {
		waitFor(s.name+" drains while "+down.name+" is down", 60*time.Second, func() bool { return effects(s) == next[s.name] })
	}
	if err := down.cluster.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(down.name+" reachable again", 30*time.Second, func() bool { return down.pool.Ping(ctx) == nil })
	enqueue(down, perRound)
	for _, s := range shards {
		waitFor(s.name+" drains", 60*time.Second, func() bool { return effects(s) == next[s.name] })
	}
	waitFor("every schedule fires twice", 30*time.Second, func() bool {
		for _, s := range shards {
			var n int
			if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM ticks WHERE name = $1`, s.name).Scan(&n); err != nil || n < 2 {
				return false
			}
		}
		return true
	})

	for _, s := range shards {
		var live, dead, foreign int
		if err := s.pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM docket_jobs WHERE kind = 'shard_job'),
			(SELECT count(*) FROM docket_jobs_dead),
			(SELECT count(*) FROM ticks WHERE name <> $1)`, s.name).Scan(&live, &dead, &foreign); err != nil {
			t.Fatal(err)
		}
		if live != 0 || dead != 0 || foreign != 0 {
			t.Errorf("%s: %d jobs left, %d dead, %d ticks of another database", s.name, live, dead, foreign)
		}
	}
	for _, s := range shards {
		t.Logf("%s: up to %d client connections", s.name, peakConns[s.name])
		if most := int(s.pool.Config().MaxConns) + 1; peakConns[s.name] > most || peakConns[s.name] < 2 {
			t.Errorf("%s: up to %d connections, want 2 to the pool's %d and one LISTEN connection", s.name, peakConns[s.name], most-1)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(wrong) > 0 {
		t.Errorf("%d runs in the wrong database, first: %s", len(wrong), wrong[0])
	}
	for _, s := range shards {
		for n := range next[s.name] {
			got := runs[s.name][n]
			// A run whose commit the kill cut off ran again: its effect did
			// not commit, so the database holds it once (checked above).
			if got == 0 || (got > 1 && s != down) {
				t.Errorf("%s: job %d ran %d times", s.name, n, got)
			}
		}
	}

	resp, err := http.Get("http://" + shards[0].client.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	for _, s := range shards {
		for _, series := range []string{
			fmt.Sprintf(`docket_jobs_finished_total{database=%q,kind="shard_job",outcome="completed"}`, s.name),
			fmt.Sprintf(`docket_status_up{database=%q} 1`, s.name),
		} {
			if !strings.Contains(string(text), series) {
				t.Errorf("the metrics endpoint lacks %s", series)
			}
		}
	}
}
