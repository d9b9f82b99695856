package handlers_test

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/outbox"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

type ChargeOrder struct {
	OrderID int64 `json:"order_id"`
}

func (ChargeOrder) Kind() string { return "charge_order" }

// A worker process: a pool for the latency-sensitive "mail" queue, another
// for bulk work with a per-tenant cap, a transactional handler, and a
// graceful stop on SIGINT/SIGTERM.
func ExampleWorker() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := outbox.ParsePoolConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ob, err := outbox.New(outbox.Config{})
	if err != nil {
		log.Fatal(err)
	}

	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, job *handlers.Job[SendReceipt]) error {
		return nil // send the mail
	}, handlers.KindOpts{Queue: "mail"})
	// The ledger write and the job's completion commit together.
	handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, job *handlers.Job[ChargeOrder]) error {
		_, err := tx.Exec(ctx, `UPDATE orders SET charged = true WHERE id = $1`, job.Args.OrderID)
		return err
	}, handlers.KindOpts{Queue: "default", MaxAttempts: 5})

	w, err := handlers.NewWorker(handlers.Config{
		DB: db, Outbox: ob, Registry: reg,
		Pools: []handlers.PoolConfig{
			{Name: "mail", Queues: []string{"mail"}, Concurrency: 20},
			{Name: "bulk", Queues: []string{"default"}, Concurrency: 100, TenantCap: 10},
		},
		Middleware: []handlers.Middleware{handlers.Logging(nil)},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	<-ctx.Done()
	if err := w.Stop(context.Background()); err != nil {
		log.Print(err)
	}
}

// Enqueue in the same transaction as the order, with the kind's registered
// queue and attempts: the registry is the outbox client's Kinds (as
// docket.NewClient sets it up).
func ExampleRegistry_EnqueueDefaults() {
	ctx := context.Background()
	cfg, err := outbox.ParsePoolConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, job *handlers.Job[SendReceipt]) error { return nil },
		handlers.KindOpts{Queue: "mail", MaxAttempts: 10})
	ob, err := outbox.New(outbox.Config{Kinds: reg})
	if err != nil {
		log.Fatal(err)
	}

	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var orderID int64
		if err := tx.QueryRow(ctx, `INSERT INTO orders DEFAULT VALUES RETURNING id`).Scan(&orderID); err != nil {
			return err
		}
		_, err := ob.Enqueue(ctx, tx, SendReceipt{OrderID: orderID}, outbox.Opts{})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
}
