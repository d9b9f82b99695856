package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/prometheus/client_golang/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Two workers of two databases in one process share one Prometheus
// registry, served by one of them, and one MeterProvider: with Database
// set, each database's jobs are counted in its own series, the status views
// of both are exported side by side, and each in-flight gauge is its own.
// (Two schemas stand in for two databases: the label is the worker's.)
func TestMetricsOfSeveralDatabases(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	handled := handlers.NewRegistry()
	handlers.MustRegister(handled, func(ctx context.Context, j *handlers.Job[testArgs]) error { return nil }, handlers.KindOpts{})

	jobs := map[string]int{"a": 3, "b": 5}
	var served *Worker
	for _, db := range []string{"a", "b"} {
		e := setup(t, 6)
		for i := range jobs[db] {
			e.enqueue(testArgs{N: i}, enqueue.Opts{})
		}
		cfg := Config{Metrics: reg, MeterProvider: mp, Database: db, Collectors: e.statusViews(),
			Pools: []PoolConfig{{Name: "main", Queues: []string{"default"}, Concurrency: 2}}}
		if db == "a" {
			cfg.MetricsAddr = "127.0.0.1:0"
		}
		w := e.worker(handled, cfg)
		if db == "a" {
			served = w
		}
		waitFor(t, 20*time.Second, "database "+db+" drained", func() bool {
			return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs`) == 0
		})
	}
	time.Sleep(100 * time.Millisecond) // the outcome counters follow the writes

	text := scrape(t, served.MetricsAddr())
	for db, n := range jobs {
		name := fmt.Sprintf(`docket_jobs_finished_total{database=%q,kind="test",outcome="completed"}`, db)
		if v, ok := sample(text, name); !ok || v != float64(n) {
			t.Errorf("%s = %v (found %v), want %d", name, v, ok, n)
		}
		name = fmt.Sprintf(`docket_status_up{database=%q}`, db)
		if v, ok := sample(text, name); !ok || v != 1 {
			t.Errorf("%s = %v (found %v), want 1", name, v, ok)
		}
		name = fmt.Sprintf(`docket_jobs_in_flight{database=%q}`, db)
		if _, ok := sample(text, name); !ok {
			t.Errorf("no %s", name)
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	finished := map[string]int64{}
	gauges := map[string]int{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case "docket.jobs.finished":
				for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
					db, _ := p.Attributes.Value(core.AttrDatabase)
					finished[db.AsString()] += p.Value
				}
			case "docket.jobs.in_flight":
				for _, p := range m.Data.(metricdata.Gauge[int64]).DataPoints {
					db, _ := p.Attributes.Value(core.AttrDatabase)
					gauges[db.AsString()]++
				}
			}
		}
	}
	for db, n := range jobs {
		if finished[db] != int64(n) {
			t.Errorf("docket.jobs.finished{docket.database=%s} = %d, want %d (all: %v)", db, finished[db], n, finished)
		}
		if gauges[db] != 1 {
			t.Errorf("docket.jobs.in_flight has %d points for database %s, want 1 (all: %v)", gauges[db], db, gauges)
		}
	}
}

// Without Database, workers on one registry share its collectors: a second
// worker's status views collide with the first's, and New says so.
func TestMetricsOfSeveralDatabasesNeedTheirNames(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	handled := handlers.NewRegistry()
	handlers.MustRegister(handled, func(ctx context.Context, j *handlers.Job[testArgs]) error { return nil }, handlers.KindOpts{})
	a, b := setup(t, 4), setup(t, 4)
	a.worker(handled, Config{Metrics: reg, Collectors: a.statusViews()})
	_, err := New(Config{DB: b.pool, Schema: b.schema, Handlers: handled, Metrics: reg, Collectors: b.statusViews(),
		LatestMigration: b.latest, Logger: b.logs.logger()})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "duplicate metrics collector registration") {
		t.Fatalf("New of a second worker with status views on the same registry: %v, want a duplicate registration", err)
	}
}
