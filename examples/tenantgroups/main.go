// Command tenantgroups runs one Docket process for several databases, each
// holding the rows and the jobs of one group of tenants, as an application
// that outgrew one primary splits its tenants (docs/scaling.md).
//
// The process keeps one handler registry and, per database, one client:
// its own pool, worker, schedules and a database label on its metrics, all
// on one Prometheus registry. The application routes each enqueue to the
// client of the tenant's group, as it routes the tenant's own rows, so a
// job is written in the same transaction as those rows.
//
// It connects to the PostgreSQL servers named by -database-url, one per
// group, given twice or more (default: $DATABASE_URL, else user postgres on
// 127.0.0.1:5432, for both groups), and works in the schemas
// docket_group_eu and docket_group_us, which it creates if needed.
//
//	go run ./examples/tenantgroups
//	go run ./examples/tenantgroups -database-url postgres://db-eu/app -database-url postgres://db-us/app
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/schedule"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Invoice is a tenant's job.
type Invoice struct {
	Tenant string `json:"tenant"`
	Number int    `json:"number"`
}

// Kind names the job type.
func (Invoice) Kind() string { return "tenantgroups.invoice" }

// Cleanup is each database's nightly housekeeping, one schedule per
// database.
type Cleanup struct{}

// Kind names the job type.
func (Cleanup) Kind() string { return "tenantgroups.cleanup" }

// Group is one database and the tenants whose rows it holds.
type Group struct {
	Name    string // names the group's schema and its metrics' database label
	URL     string
	Schema  string
	Tenants []string
}

// localURL is the server tried when neither -database-url nor
// $DATABASE_URL names one.
const localURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

type urls []string

func (u *urls) String() string     { return strings.Join(*u, ",") }
func (u *urls) Set(s string) error { *u = append(*u, s); return nil }

func main() {
	var list urls
	flag.Var(&list, "database-url", "PostgreSQL connection string of one group's database; give it once per group (default $DATABASE_URL, else "+localURL+", for both)")
	flag.Parse()
	def := os.Getenv("DATABASE_URL")
	if def == "" {
		def = localURL
	}
	for len(list) < 2 {
		list = append(list, def)
	}
	groups := []Group{
		{Name: "eu", URL: list[0], Schema: "docket_group_eu", Tenants: []string{"acme", "initech", "wonka"}},
		{Name: "us", URL: list[1], Schema: "docket_group_us", Tenants: []string{"globex", "hooli", "stark"}},
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, groups, 3*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "tenantgroups:", err)
		os.Exit(1)
	}
}

// shard is one group's database as the process holds it.
type shard struct {
	Group
	pool   *pgxpool.Pool
	client *docket.Client
}

// run starts one client per group, enqueues invoices of every tenant
// through its group's client, keeps each group's cleanup schedule for d
// and prints what each database ran.
func run(ctx context.Context, out io.Writer, groups []Group, d time.Duration) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// One registry: every database runs the same handlers.
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[Invoice]) error { return nil }, handlers.KindOpts{})
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[Cleanup]) error { return nil }, handlers.KindOpts{})
	// One metrics registry: each worker labels its series with its group.
	metrics := prometheus.NewRegistry()

	byTenant := map[string]*shard{}
	var shards []*shard
	defer func() {
		for _, s := range shards {
			_ = s.client.Stop(context.Background())
			s.pool.Close()
		}
	}()
	for _, g := range groups {
		cfg, err := docket.ParsePoolConfig(g.URL)
		if err != nil {
			return err
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return err
		}
		m, err := migrate.New(g.Schema)
		if err == nil {
			_, err = m.Up(ctx, pool)
		}
		if err != nil {
			pool.Close()
			return fmt.Errorf("group %s: %w", g.Name, err)
		}
		client, err := docket.NewClient(pool, docket.Config{
			Schema:   g.Schema,
			Registry: reg,
			// Schedules per database: each keeps its own cleanup.
			Schedules: []schedule.Schedule{{Name: "cleanup", Spec: "@every 1s", Args: Cleanup{}}},
			Worker: docket.WorkerConfig{
				Logger:   logger.With("group", g.Name),
				Metrics:  metrics,
				Database: g.Name,
			},
		})
		if err != nil {
			pool.Close()
			return err
		}
		s := &shard{Group: g, pool: pool, client: client}
		shards = append(shards, s)
		if err := client.Start(ctx); err != nil {
			return fmt.Errorf("group %s: %w", g.Name, err)
		}
		for _, t := range g.Tenants {
			byTenant[t] = s
		}
	}

	// The application routes by tenant: the invoice goes to the database
	// that holds the tenant's rows (here it would be written in the same
	// transaction as the invoice row).
	tenants := []string{"acme", "globex", "hooli", "initech", "stark", "wonka"}
	for n := range 12 {
		t := tenants[n%len(tenants)]
		s, ok := byTenant[t]
		if !ok {
			return fmt.Errorf("tenant %s belongs to no group", t)
		}
		if _, err := s.client.Enqueue(ctx, s.pool, Invoice{Tenant: t, Number: n}, docket.Opts{Tenant: t}); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "%d databases, one registry; 12 invoices routed by tenant; running for %s...\n", len(shards), d)
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	for _, s := range shards {
		if err := s.client.Stop(context.Background()); err != nil {
			return err
		}
	}

	ran, err := finished(metrics)
	if err != nil {
		return err
	}
	for _, s := range shards {
		slices.Sort(s.Tenants)
		fmt.Fprintf(out, "%s (%s): %d invoices, %d cleanups ran for tenants %s\n", s.Name, s.Schema,
			ran[s.Name]["tenantgroups.invoice"], ran[s.Name]["tenantgroups.cleanup"], strings.Join(s.Tenants, ", "))
	}
	return nil
}

// finished reads, from the process's metrics, the jobs each database's
// worker completed, by database label and kind.
func finished(reg *prometheus.Registry) (map[string]map[string]int, error) {
	families, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	ran := map[string]map[string]int{}
	for _, f := range families {
		if f.GetName() != "docket_jobs_finished_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["outcome"] != "completed" {
				continue
			}
			if ran[labels["database"]] == nil {
				ran[labels["database"]] = map[string]int{}
			}
			ran[labels["database"]][labels["kind"]] += int(m.GetCounter().GetValue())
		}
	}
	if len(ran) == 0 {
		return nil, errors.New("no job finished")
	}
	return ran, nil
}
