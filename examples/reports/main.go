// Command reports runs per-tenant recurring reports with package schedule:
// one schedule per tenant, all with the same spec, spread over a window by
// a hash of the schedule's name so they do not all start in the same
// second.
//
// In production each tenant's schedule would be
//
//	schedule.Schedule{Name: "report:" + tenant, Spec: "@hourly", Window: 10 * time.Minute, ...}
//
// Here time is compressed so the example ends by itself: every 2 seconds,
// spread over a 2-second window, for about 7 seconds. It connects to the
// PostgreSQL named by -database-url (default $DATABASE_URL, else user
// postgres on 127.0.0.1:5432) and works in the schema docket_reports, which
// it drops and creates anew.
//
//	go run ./examples/reports
//	go run ./examples/reports -database-url 'postgres://me@db.internal:5432/app'
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/schedule"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TenantReport is the job each tenant's schedule enqueues.
type TenantReport struct {
	Tenant string `json:"tenant"`
}

// Kind names the job type.
func (TenantReport) Kind() string { return "reports.tenant_report" }

// localURL is the server tried when neither -database-url nor
// $DATABASE_URL names one.
const localURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

func main() {
	def := os.Getenv("DATABASE_URL")
	if def == "" {
		def = localURL
	}
	url := flag.String("database-url", def, "PostgreSQL connection string (default $DATABASE_URL, else "+localURL+")")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, *url, "docket_reports", 7*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "reports:", err)
		os.Exit(1)
	}
}

// run drops and recreates schema in the database at url, runs the
// schedules for d and prints a summary to out.
func run(ctx context.Context, out io.Writer, url, schema string, d time.Duration) error {
	// Docket's connection defaults: a server that stops answering is
	// noticed in seconds, not minutes.
	cfg, err := docket.ParsePoolConfig(url)
	if err != nil {
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()

	// A fresh schema each run, so the summary describes this run only.
	if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+schema+` CASCADE`); err != nil {
		return err
	}
	m, err := migrate.New(schema)
	if err != nil {
		return err
	}
	if _, err := m.Up(ctx, pool); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	// The handler: one report per tenant per fire time.
	type run struct {
		fire, at time.Time
	}
	var mu sync.Mutex
	runs := map[string][]run{}
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[TenantReport]) error {
		fire, _ := time.Parse(time.RFC3339Nano, j.Meta[schedule.MetaFire])
		mu.Lock()
		runs[j.Args.Tenant] = append(runs[j.Args.Tenant], run{fire: fire, at: time.Now()})
		mu.Unlock()
		return nil
	}, handlers.KindOpts{Queue: "reports"})

	// Every process gives the same schedules: Start registers them (an
	// upsert), and the client writes each next run in the transaction that
	// completes the current one.
	tenants := []string{"acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "wonka", "tyrell", "cyberdyne"}
	var all []schedule.Schedule
	for _, t := range tenants {
		all = append(all, schedule.Schedule{
			Name:   "report:" + t,
			Spec:   "@every 2s",     // "@hourly" in production
			Window: 2 * time.Second, // 10 * time.Minute in production
			Args:   TenantReport{Tenant: t},
			Tenant: t,
		})
	}
	client, err := docket.NewClient(pool, docket.Config{
		Schema:    schema,
		Registry:  reg,
		Schedules: all,
		Scheduler: schedule.Config{ReconcileInterval: time.Second},
		Worker: docket.WorkerConfig{
			Logger:       logger,
			Pools:        []docket.PoolConfig{{Queues: []string{"reports"}, Concurrency: 10}},
			PollInterval: 100 * time.Millisecond,
		},
	})
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "running %d tenant report schedules (@every 2s, spread over 2s) for %d seconds...\n", len(all), int(d.Seconds()))
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	if err := client.Stop(context.Background()); err != nil {
		return err
	}

	// Summary: each tenant ran at its fire times plus its own fixed offset.
	mu.Lock()
	defer mu.Unlock()
	sort.Slice(tenants, func(i, j int) bool {
		return schedule.Offset("report:"+tenants[i], 2*time.Second) < schedule.Offset("report:"+tenants[j], 2*time.Second)
	})
	fmt.Fprintf(out, "\n%-10s %8s %5s  %s\n", "tenant", "offset", "runs", "fire times (start delay after fire)")
	total := 0
	for _, t := range tenants {
		off := schedule.Offset("report:"+t, 2*time.Second)
		fmt.Fprintf(out, "%-10s %8s %5d ", t, off, len(runs[t]))
		for _, r := range runs[t] {
			fmt.Fprintf(out, " %s(+%dms)", r.fire.Format("15:04:05"), r.at.Sub(r.fire).Milliseconds())
		}
		fmt.Fprintln(out)
		total += len(runs[t])
	}
	list, err := client.Admin().Schedules().List(context.Background(), pool)
	if err != nil {
		return err
	}
	pending := 0
	for _, s := range list {
		if !s.NextFire.IsZero() {
			pending++
		}
	}
	fmt.Fprintf(out, "\n%d runs of %d schedules; %d schedules have their next run pending (schema %s)\n", total, len(list), pending, schema)
	return nil
}
