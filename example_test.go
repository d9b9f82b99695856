package docket_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/schedule"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SendReceipt is a job's args: its Kind names its handler.
type SendReceipt struct {
	OrderID int64 `json:"order_id"`
}

func (SendReceipt) Kind() string { return "send_receipt" }

// DailyReport is the args of a recurring job.
type DailyReport struct {
	Tenant string `json:"tenant"`
}

func (DailyReport) Kind() string { return "daily_report" }

// A service that enqueues jobs in its own transactions, runs their handlers
// and keeps a recurring schedule: one registry, one client, one Start/Stop.
func Example() {
	ctx := context.Background()
	// ParsePoolConfig adds connect and keepalive timeouts, so that a
	// worker notices a lost server within seconds.
	cfg, err := docket.ParsePoolConfig(databaseURL()) // os.Getenv("DATABASE_URL")
	if err != nil {
		log.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	// Once per database, or `docket migrate up --schema shop`.
	m, err := migrate.New("shop")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		log.Fatal(err)
	}

	sent := make(chan int64, 1)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, job *handlers.Job[SendReceipt]) error {
		sent <- job.Args.OrderID // nil completes the job; an error retries it
		return nil
	}, handlers.KindOpts{Queue: "mail", MaxAttempts: 10})
	handlers.MustRegister(reg, func(ctx context.Context, job *handlers.Job[DailyReport]) error {
		return nil // build the tenant's report
	}, handlers.KindOpts{Queue: "reports"})

	client, err := docket.NewClient(pool, docket.Config{
		Schema:   "shop",
		Registry: reg,
		Schedules: []schedule.Schedule{{
			Name: "report:acme", Spec: "CRON_TZ=Europe/Berlin 0 2 * * *",
			Args: DailyReport{Tenant: "acme"}, Window: 10 * time.Minute,
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(context.Background()) // finish or release in-flight jobs

	// The job commits with the caller's writes, or neither does.
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// tx.Exec(ctx, `INSERT INTO orders ...`)
		_, err := client.Enqueue(ctx, tx, SendReceipt{OrderID: 42}, docket.Opts{
			UniqueKey: "receipt:42", // idempotent while in flight
		})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("receipt sent for order", <-sent)
	// Output: receipt sent for order 42
}

// A web service that only enqueues: no registry, so any kind is accepted
// with the built-in defaults, for workers elsewhere to run.
func ExampleNewClient_enqueueOnly() {
	ctx := context.Background()
	cfg, err := docket.ParsePoolConfig(databaseURL())
	if err != nil {
		log.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	m, err := migrate.New("web")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		log.Fatal(err)
	}

	client, err := docket.NewClient(pool, docket.Config{Schema: "web"})
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.Enqueue(ctx, pool, SendReceipt{OrderID: 7}, docket.Opts{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.State)
	// Output: ready
}

// Recurring jobs are configuration: the client registers them at Start and
// writes each run's successor with the run's outcome.
func ExampleConfig_schedules() {
	ctx := context.Background()
	cfg, err := docket.ParsePoolConfig(databaseURL())
	if err != nil {
		log.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	m, err := migrate.New("reports")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		log.Fatal(err)
	}

	fires := make(chan time.Time, 10)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, job *handlers.Job[DailyReport]) error {
		fire, _ := time.Parse(time.RFC3339Nano, job.Meta[schedule.MetaFire])
		fires <- fire
		return nil
	}, handlers.KindOpts{})

	client, err := docket.NewClient(pool, docket.Config{
		Schema:    "reports",
		Registry:  reg,
		Schedules: []schedule.Schedule{{Name: "report:acme", Spec: "@every 1s", Args: DailyReport{Tenant: "acme"}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(context.Background())

	first, second := <-fires, <-fires
	fmt.Println("second run one period after the first:", second.Sub(first))
	// Output: second run one period after the first: 1s
}
