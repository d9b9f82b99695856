package handlers

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	docket "github.com/docketq/docket/internal/core"
	"github.com/docketq/docket/outbox"
	"github.com/jackc/pgx/v5"
)

type serialArgs struct{ Key string }

func (serialArgs) Kind() string { return "serial" }

type serialTxArgs struct{ Key string }

func (serialTxArgs) Kind() string { return "serial_tx" }

// 2,000 jobs over 10 serial keys, 40 slots in two worker instances (so both
// the in-process check and the database lock are exercised), half of them
// transactional. No two runs of a key overlap; runs of different keys do.
func TestSerialKeysNeverOverlap(t *testing.T) {
	t.Parallel()
	const jobs, keys = 2000, 10
	e := setup(t, 20)
	e.logJobsOnFailure()
	e.exec(`CREATE TABLE {{schema}}.runs (job_id bigint, key text, started timestamptz, ended timestamptz)`)
	insert := e.sql(`INSERT INTO {{schema}}.runs VALUES ($1, $2, $3, $4)`)
	reg := NewRegistry()
	MustRegister(reg, func(ctx context.Context, j *Job[serialArgs]) error {
		start := time.Now()
		time.Sleep(time.Millisecond)
		_, err := e.pool.Exec(ctx, insert, j.ID, j.Args.Key, start, time.Now())
		return err
	}, KindOpts{})
	MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *Job[serialTxArgs]) error {
		start := time.Now()
		time.Sleep(time.Millisecond)
		_, err := tx.Exec(ctx, insert, j.ID, j.Args.Key, start, time.Now())
		return err
	}, KindOpts{})
	items := make([]outbox.Item, jobs)
	for i := range items {
		key := fmt.Sprintf("k%d", i%keys)
		var args docket.Args = serialArgs{Key: key}
		if i%2 == 1 {
			args = serialTxArgs{Key: key}
		}
		items[i] = outbox.Item{Args: args, Opts: outbox.Opts{SerialKey: key}}
	}
	if _, err := e.ob.EnqueueMany(t.Context(), e.pool, items); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cfg := Config{Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 20}}, SerialRetry: 20 * time.Millisecond}
	e.worker(reg, cfg)
	e.worker(reg, cfg)
	// A generous deadline: on a loaded machine the snooze-and-retry of
	// held keys makes this slow, and it asserts no speed.
	waitFor(t, 150*time.Second, "all serial jobs done", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done`) == jobs
	})
	t.Logf("%d jobs over %d keys in %s", jobs, keys, time.Since(start))

	type run struct {
		key        string
		start, end time.Time
	}
	rows, err := e.pool.Query(t.Context(), e.sql(`SELECT key, started, ended FROM {{schema}}.runs`))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (run, error) {
		var x run
		return x, r.Scan(&x.key, &x.start, &x.end)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != jobs {
		t.Fatalf("%d runs recorded, want %d (each job once)", len(runs), jobs)
	}
	slices.SortFunc(runs, func(a, b run) int { return a.start.Compare(b.start) })
	// Same key: never overlapping.
	last := map[string]run{}
	for _, r := range runs {
		if p, ok := last[r.key]; ok && r.start.Before(p.end) {
			t.Errorf("key %s: run [%s, %s] overlaps [%s, %s]", r.key,
				r.start.Format(time.StampMicro), r.end.Format(time.StampMicro), p.start.Format(time.StampMicro), p.end.Format(time.StampMicro))
		}
		last[r.key] = r
	}
	// Different keys: overlapping (parallelism kept). Sweep for the most
	// runs at once.
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, r := range runs {
		edges = append(edges, edge{r.start, 1}, edge{r.end, -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	var cur, most int
	for _, ed := range edges {
		cur += ed.delta
		most = max(most, cur)
	}
	t.Logf("at most %d keys ran at once", most)
	if most < 3 {
		t.Errorf("at most %d runs at once: serialization must not serialize different keys", most)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done WHERE attempts <> 1`); n != 0 {
		t.Errorf("%d jobs spent more than one attempt (a held key must not cost an attempt)", n)
	}
}
