package docket_test

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// ChargeOrder is the args of a transactional job.
type ChargeOrder struct {
	OrderID int64 `json:"order_id"`
}

func (ChargeOrder) Kind() string { return "charge_order" }

// A worker process: a pool for the latency-sensitive "mail" queue, another
// for bulk work with a per-tenant cap, a transactional handler, logging
// middleware, and a graceful stop on SIGINT/SIGTERM.
func ExampleWorkerConfig() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := docket.ParsePoolConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, job *handlers.Job[SendReceipt]) error {
		return nil // send the mail
	}, handlers.KindOpts{Queue: "mail"})
	// The ledger write and the job's completion commit together.
	handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, job *handlers.Job[ChargeOrder]) error {
		_, err := tx.Exec(ctx, `UPDATE orders SET charged = true WHERE id = $1`, job.Args.OrderID)
		return err
	}, handlers.KindOpts{MaxAttempts: 5})

	client, err := docket.NewClient(pool, docket.Config{
		Registry: reg,
		Worker: docket.WorkerConfig{
			Pools: []docket.PoolConfig{
				{Name: "mail", Queues: []string{"mail"}, Concurrency: 20},
				{Name: "bulk", Queues: []string{"default"}, Concurrency: 100, TenantCap: 10},
			},
			Middleware: []handlers.Middleware{handlers.Logging(nil)},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	<-ctx.Done()
	if err := client.Stop(context.Background()); err != nil {
		log.Print(err)
	}
}

// Tracing with the OpenTelemetry SDK: a job enqueued inside a span runs in
// a consumer span "docket.run <kind>" under it, and the handler's own spans
// nest under that. A real program adds an exporter to the provider.
func ExampleWorkerConfig_tracing() {
	ctx := context.Background()
	cfg, err := docket.ParsePoolConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(ctx) }()

	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, job *handlers.Job[SendReceipt]) error {
		_, span := tp.Tracer("mail").Start(ctx, "send") // a child of the run span
		defer span.End()
		return nil
	}, handlers.KindOpts{})
	client, err := docket.NewClient(pool, docket.Config{Registry: reg, Worker: docket.WorkerConfig{TracerProvider: tp}})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)

	// Enqueue writes the W3C trace context of its ctx into the job's meta.
	ctx, span := tp.Tracer("api").Start(ctx, "POST /orders")
	defer span.End()
	if _, err := client.Enqueue(ctx, pool, SendReceipt{}, docket.Opts{}); err != nil {
		log.Fatal(err)
	}
}
