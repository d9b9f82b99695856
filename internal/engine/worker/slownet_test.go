package worker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestSlowNetworkSpendsNoAttempts: a worker whose every round trip to the
// database takes about 200 ms (the fault proxy delays each read 100 ms ±
// 50 ms both ways), with a 2 s lease and handlers that write through the
// worker's own pool as the fault suite's do, drains a backlog without a
// job spending an attempt it did not run: each job ends done with as many
// attempts as its handler started. Before, heartbeats gave up after a
// third of a lease while they waited for a connection, the held jobs' leases
// ran out, and jobs that never reached a slot were reaped and claimed
// again, an attempt each time.
func TestSlowNetworkSpendsNoAttempts(t *testing.T) {
	t.Parallel()
	const jobs = 80
	e := setup(t, 8)
	defer e.logJobsOnFailure()
	for range jobs {
		e.enqueue(testArgs{}, enqueue.Opts{})
	}
	px, proxied := viaProxy(t)
	px.Delay(100*time.Millisecond, 50*time.Millisecond)
	cfg, err := pgxpool.ParseConfig(proxied)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 6
	db, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	runs := newCounter()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		runs.add(j.ID)
		_, err := db.Exec(ctx, `SELECT 1`)
		return err
	}, handlers.KindOpts{})
	slow := *e
	slow.pool = db
	slow.worker(reg, Config{Lease: 2 * time.Second, Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 16}}})
	waitFor(t, 45*time.Second, "the backlog to drain", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done`) == jobs
	})
	rows, err := e.pool.Query(t.Context(), e.sql(`SELECT id, attempts FROM {{schema}}.docket_jobs_done`))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	spent := 0
	for rows.Next() {
		var id int64
		var attempts int
		if err := rows.Scan(&id, &attempts); err != nil {
			t.Fatal(err)
		}
		if n := runs.get(id); attempts > n {
			spent += attempts - n
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if spent > 0 {
		t.Errorf("%d attempts of %d jobs were spent without their handler starting", spent, jobs)
	}
	t.Logf("%d runs lost", strings.Count(e.logs.String(), "job lost;"))
}
