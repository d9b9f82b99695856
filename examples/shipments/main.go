// Command shipments is Docket's Ent example: a shipping service whose
// domain rows live in Ent, and whose background work (tracking a parcel with
// its carrier, notifying the customer) is a Docket job written in the same
// Ent transaction.
//
//	go run ./examples/shipments
//	go run ./examples/shipments -database-url 'postgres://me@db.internal:5432/app'
//
// It connects to the PostgreSQL named by -database-url (default
// $DATABASE_URL, else user postgres on 127.0.0.1:5432), works in a fresh
// schema "docket_shipments", and prints a summary.
//
// What it shows:
//
//   - one pgx pool for Docket's workers and, through stdlib.OpenDBFromPool,
//     for the Ent client;
//   - service.go: a shipment and its tracking job created in one Ent
//     transaction with docketent.Enqueue, idempotent by unique key;
//   - hooks.go: an Ent mutation hook (docketent.Hook) that enqueues a
//     notification whenever a shipment is created, in the same transaction;
//   - workers.go: handlers for both kinds, with per-carrier caps;
//   - a failed transaction leaves neither the shipment nor its jobs.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

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
	if err := run(ctx, os.Stdout, os.Stderr, *url, "docket_shipments", 60); err != nil {
		fmt.Fprintln(os.Stderr, "shipments:", err)
		os.Exit(1)
	}
}
