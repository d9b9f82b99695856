package handlers_test

import (
	"context"
	"log"
	"os"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/outbox"
	"github.com/jackc/pgx/v5/pgxpool"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Tracing with the OpenTelemetry SDK: a job enqueued inside a span runs in
// a consumer span "docket.run <kind>" under it, and the handler's own spans
// nest under that. A real program adds an exporter to the provider.
func ExampleConfig_tracing() {
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
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(ctx) }()
	// Enqueue writes the W3C trace context of its ctx into the job's meta.
	ob, err := outbox.New(outbox.Config{})
	if err != nil {
		log.Fatal(err)
	}
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, job *handlers.Job[SendReceipt]) error {
		_, span := tp.Tracer("mail").Start(ctx, "send") // a child of the run span
		defer span.End()
		return nil
	}, handlers.KindOpts{})
	w, err := handlers.NewWorker(handlers.Config{DB: db, Outbox: ob, Registry: reg, TracerProvider: tp})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer w.Stop(ctx)

	ctx, span := tp.Tracer("api").Start(ctx, "POST /orders")
	defer span.End()
	if _, err := ob.Enqueue(ctx, db, SendReceipt{}, outbox.Opts{}); err != nil {
		log.Fatal(err)
	}
}
