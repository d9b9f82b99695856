// Command shipments is Docket's Ent example: a shipping service whose
// domain rows live in Ent, and whose background work (tracking a parcel with
// its carrier, notifying the customer) is a Docket job written in the same
// Ent transaction.
//
//	go run ./examples/shipments
//
// It finds PostgreSQL like `docket demo` does ($DATABASE_URL, then
// 127.0.0.1:5432, then a private throw-away cluster from local binaries),
// works in a fresh schema "docket_shipments", and prints a summary.
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
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, os.Stderr, 60); err != nil {
		fmt.Fprintln(os.Stderr, "shipments:", err)
		os.Exit(1)
	}
}
