package dashboard_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/docketq/docket/dashboard"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/jobfill"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BenchmarkPages renders each page against 1,000,000 live jobs, 100,000
// dead and 100,000 finished ones, 40,000 workflows and three limits
// (jobfill), through the handler as a browser requests it; ns/op is each
// page's server time. Building the schema takes a minute or more; run with
//
//	go test ./dashboard -run '^$' -bench Pages -benchtime 20x
//
// With DOCKET_BENCH_DB=<postgres URL> the schema (docket_bench_pages in that
// database, not the package's throw-away test database) is built once,
// kept, and used again by the next runs, and by EXPLAIN between them; drop
// it when done. Its jobs' times are those of the run that built it, so the
// overview's windows (done in the last minute, dead in the last hour)
// empty with age: rebuild it for numbers to report.
func BenchmarkPages(b *testing.B) {
	ctx := context.Background()
	var pool *pgxpool.Pool
	var schema string
	var kept bool
	if url := os.Getenv("DOCKET_BENCH_DB"); url != "" {
		cfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			b.Fatal(err)
		}
		cfg.MaxConns = 4
		if pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(pool.Close)
		schema = "docket_bench_pages"
		if err := pool.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)", schema).Scan(&kept); err != nil {
			b.Fatal(err)
		}
	} else {
		pool = pgtest.PoolN(b, 4)
		schema = pgtest.Schema(b)
		if _, err := pool.Exec(ctx, "DROP SCHEMA "+schema); err != nil {
			b.Fatal(err)
		}
	}
	if !kept {
		if err := jobfill.Create(ctx, pool, schema, 1_000_000); err != nil {
			b.Fatal(err)
		}
		if err := jobfill.Workflows(ctx, pool, schema, 40_000); err != nil {
			b.Fatal(err)
		}
		seedSchedulesAndWorkers(b, ctx, pool, schema)
	}
	// httptest.NewRequest addresses example.com: allow it past the Host check.
	h, err := dashboard.Handler(pool, dashboard.Config{Schema: schema, AllowedHosts: []string{"example.com"}})
	if err != nil {
		b.Fatal(err)
	}
	for _, page := range []struct{ name, path string }{
		{"overview", "/"},
		{"overview_live", "/?live=1"},
		{"throughput", "/throughput"},
		{"jobs", "/jobs"},
		{"jobs_deep_page", "/jobs?after=500000"},
		{"jobs_ready_queue_kind", "/jobs?state=ready&queue=mail&kind=k1"},
		{"jobs_running", "/jobs?state=running"},
		{"jobs_dead_by_error", "/jobs?state=dead&error=signature+3"},
		{"jobs_completed", "/jobs?state=completed"},
		{"jobs_kind_counted", "/jobs?kind=k3"},
		{"jobs_tenant_error_counted", "/jobs?tenant=t42&error=timeout"},
		{"jobs_serial_key_counted", "/jobs?serial_key=acct-10"},
		{"job", "/jobs/500000"},
		{"dead_groups", "/dead"},
		{"dead_live", "/dead?live=1"},
		{"tasks", "/tasks"},
		{"schedules", "/schedules"},
		{"workers", "/workers"},
		{"limits", "/limits"},
		{"workflows", "/workflows"},
		{"workflows_running_scanned", "/workflows?state=running"},
		{"workflows_deep_page", "/workflows?before=20000"},
		{"workflow", "/workflows/7"},
		{"job_of_workflow", "/jobs/100000"},
	} {
		b.Run(page.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, page.path, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("GET %s: %d\n%s", page.path, rec.Code, rec.Body)
				}
			}
		})
	}
	// The chart's first request in a process counts the whole hour; the
	// ones above read the minutes that have not settled only.
	b.Run("throughput_first", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			h, err := dashboard.Handler(pool, dashboard.Config{Schema: schema, AllowedHosts: []string{"example.com"}})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/throughput", nil))
			if rec.Code != http.StatusOK {
				b.Fatalf("GET /throughput: %d\n%s", rec.Code, rec.Body)
			}
		}
	})
}

// seedSchedulesAndWorkers adds what jobfill leaves out for the schedules
// and workers pages: 1,000 schedules that have fired (of jobfill's kinds,
// whose dead letters their last outcome looks among) and 10 live worker
// processes of 100 slots, each running 100 of jobfill's running jobs.
func seedSchedulesAndWorkers(b *testing.B, ctx context.Context, pool *pgxpool.Pool, schema string) {
	b.Helper()
	q, err := queue.New(schema, queue.Config{})
	if err != nil {
		b.Fatal(err)
	}
	_, err = pool.Exec(ctx, `INSERT INTO "`+schema+`".docket_schedules (name, spec, kind, queue, payload, next_fire, last_fire)
SELECT 'report-' || i, '@hourly', 'k' || i % 10, 'reports', '{}', now() + interval '30 minutes', now() - interval '30 minutes'
FROM generate_series(1, 1000) i`)
	if err != nil {
		b.Fatal(err)
	}
	for range 10 {
		id := uuid.New()
		if err := q.RegisterWorker(ctx, pool, queue.WorkerInfo{ID: id, Host: "bench", PID: 1, Kinds: []string{"k1"}, Queues: []string{"mail"}, Slots: 100, TTL: time.Hour}); err != nil {
			b.Fatal(err)
		}
		_, err := pool.Exec(ctx, `UPDATE "`+schema+`".docket_jobs SET locked_by = $1 WHERE id IN (
	SELECT id FROM "`+schema+`".docket_jobs WHERE state = 'running'
		AND locked_by NOT IN (SELECT id FROM "`+schema+`".docket_workers) LIMIT 100)`, id)
		if err != nil {
			b.Fatal(err)
		}
	}
}
