package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/docketq/docket"
	docketent "github.com/docketq/docket/ent"
	"github.com/docketq/docket/examples/shipments/ent"
	"github.com/docketq/docket/examples/shipments/ent/shipment"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/migrate"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

var (
	tenants  = []string{"acme", "globex", "initech"}
	carriers = []string{"ups", "dhl", "fedex", "laposte"}
)

// run creates n shipments in the database at url, runs the workers until
// every tracking job and notification is done, and prints a summary to
// out. schema holds the example's tables, Ent's and Docket's; it is
// dropped and made anew, so the summary describes one run.
func run(ctx context.Context, out, log io.Writer, url, schema string, n int) error {
	// One pgx pool for everything: Docket's workers use it natively, Ent
	// through database/sql. It has Docket's connection defaults.
	cfg, err := docket.ParsePoolConfig(url)
	if err != nil {
		return err
	}
	cfg.MaxConns = 16
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+schema+` CASCADE; CREATE SCHEMA `+schema); err != nil {
		return err
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	client := ent.NewClient(ent.Driver(entsql.OpenDB(dialect.Postgres, db)))

	// Docket's tables by Docket's migrator, the domain's by Ent's.
	m, err := migrate.New(schema)
	if err != nil {
		return err
	}
	if _, err := m.Up(ctx, pool); err != nil {
		return err
	}
	if err := client.Schema.Create(ctx); err != nil {
		return err
	}
	reg := handlers.NewRegistry()
	wk := newWorkers(client)
	wk.register(reg)
	// One client enqueues and runs the workers. With the registry, every
	// enqueue (also through the Ent hook) gets the kind's registered queue
	// and attempts, and unknown kinds are refused.
	dc, err := docket.NewClient(pool, docket.Config{
		Schema:   schema,
		Registry: reg,
		Worker: docket.WorkerConfig{
			PollInterval: 100 * time.Millisecond,
			Pools: []docket.PoolConfig{
				{Name: "tracking", Queues: []string{"tracking"}, Concurrency: 8, TenantCap: carrierCap},
				{Name: "notifications", Queues: []string{"notifications"}, Concurrency: 4},
			},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		},
	})
	if err != nil {
		return err
	}
	client.Shipment.Use(notifyOnCreate(dc))
	svc := &Service{client: client, docket: dc}

	for _, name := range tenants {
		if err := client.Tenant.Create().SetName(name).Exec(ctx); err != nil {
			return err
		}
	}
	start := time.Now()
	for i := range n {
		addr := map[string]string{"city": []string{"Lyon", "Porto", "Gdansk"}[i%3], "zip": fmt.Sprintf("%05d", 10000+i)}
		if _, _, err := svc.CreateShipment(ctx, tenants[i%len(tenants)], carriers[i%len(carriers)], addr); err != nil {
			return err
		}
	}
	fmt.Fprintf(log, "shipments: created %d shipments with their jobs in %s\n", n, time.Since(start).Round(time.Millisecond))

	// Atomicity and idempotency, shown rather than told.
	if _, _, err := svc.CreateShipment(ctx, "no-such-tenant", "ups", nil); err == nil {
		return errors.New("a shipment for an unknown tenant was created")
	}
	_, outsideErr := client.Shipment.Create().SetTenantID(1).SetCarrier("ups").SetAddress(map[string]string{}).Save(ctx)
	if !errors.Is(outsideErr, docketent.ErrNoTx) {
		return fmt.Errorf("create outside a transaction: got %v, want ErrNoTx", outsideErr)
	}
	dup, err := svc.Retrack(ctx, 1)
	if err != nil {
		return err
	}
	if !dup.Duplicate {
		return errors.New("a second tracking job was inserted for shipment 1")
	}

	if err := dc.Start(ctx); err != nil {
		return err
	}
	waitErr := waitDone(ctx, client, n)
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := dc.Stop(stopCtx); err != nil {
		return fmt.Errorf("worker shutdown: %w", err)
	}
	if waitErr != nil {
		return waitErr
	}
	fmt.Fprintf(log, "shipments: all jobs done after %s\n", time.Since(start).Round(time.Millisecond))
	return summary(ctx, out, client, pool, schema, wk, n, dup, outsideErr)
}

// waitDone polls with Ent until every shipment is tracked and notified.
func waitDone(ctx context.Context, client *ent.Client, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		done, err := client.Shipment.Query().
			Where(shipment.StatusEQ(shipment.StatusInTransit), shipment.Notified(true)).Count(ctx)
		if err != nil {
			return fmt.Errorf("waiting for jobs: %w", err)
		}
		if done == n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for jobs: %d of %d shipments done: %w", done, n, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func summary(ctx context.Context, out io.Writer, client *ent.Client, pool *pgxpool.Pool, schema string, wk *workers, n int, dup docket.Enqueued, outsideErr error) error {
	total, err := client.Shipment.Query().Count(ctx)
	if err != nil {
		return err
	}
	var history, live, objects int
	err = pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM `+schema+`.docket_jobs_done),
		(SELECT count(*) FROM `+schema+`.docket_jobs),
		(SELECT count(*) FROM `+schema+`.docket_jobs_done WHERE jsonb_typeof(payload) = 'object')`).Scan(&history, &live, &objects)
	if err != nil {
		return err
	}
	first, err := client.Shipment.Get(ctx, 1)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nShipments example summary (schema %s)\n", schema)
	fmt.Fprintf(out, "  shipments created              %d (a failed transaction left none behind)\n", total)
	fmt.Fprintf(out, "  tracking jobs done             %d\n", wk.tracked.Load())
	fmt.Fprintf(out, "  notifications done (hook)      %d\n", wk.notified.Load())
	fmt.Fprintf(out, "  jobs in history / still live   %d / %d (jsonb object payloads: %d)\n", history, live, objects)
	fmt.Fprintf(out, "  duplicate tracking enqueue     reported existing job %d\n", dup.ID)
	fmt.Fprintf(out, "  create outside a transaction   refused: %v\n", outsideErr)
	fmt.Fprintf(out, "  shipment 1 address (jsonb)     %v, tracking number %s\n", first.Address, first.TrackingNumber)
	fmt.Fprintf(out, "  per-carrier max concurrency (cap %d), tracking jobs snoozed while a carrier was busy: %d\n", carrierCap, wk.snoozed.Load())
	wk.slots.mu.Lock()
	names := make([]string, 0, len(wk.slots.maxSeen))
	over := false
	for c, m := range wk.slots.maxSeen {
		names = append(names, c)
		over = over || m > carrierCap
	}
	sort.Strings(names)
	for _, c := range names {
		fmt.Fprintf(out, "    %-8s %d\n", c, wk.slots.maxSeen[c])
	}
	wk.slots.mu.Unlock()
	switch {
	case total != n || wk.tracked.Load() != int64(n) || wk.notified.Load() != int64(n):
		return fmt.Errorf("want %d shipments, each tracked and notified once", n)
	case live != 0 || history != 2*n || objects != history:
		return errors.New("jobs left over, missing from history, or payloads not stored as jsonb objects")
	case over:
		return errors.New("a carrier ran more tracking calls at once than its cap")
	}
	return nil
}
