// Package outbox is Docket's queue as its users see it: the schema and its
// migrations, enqueue inside the caller's transaction, and the operator's
// operations (status, pausing queues, dead-letter triage, one-job
// commands). The worker protocol that runs on the same tables — claims,
// leases, outcomes, reaping, promotion — is internal/queue's, driven by
// package handlers.
//
// # Tables
//
// docket_jobs holds live jobs only: scheduled (run_at in the future),
// ready and running. Finished jobs leave it, for docket_jobs_done (history,
// one partition per UTC day, dropped whole by retention) or, on failure,
// docket_jobs_dead (the dead-letter table). Because the hot table holds only
// in-flight work, its unique index on unique_key means exactly "no duplicate
// in-flight job". The schema that holds the tables is configurable
// (Config.Schema); each file here holds the statements it runs.
//
// # Enqueue
//
// Client.Enqueue and Client.EnqueueMany take a pgx transaction, connection
// or pool (Pgx); Client.EnqueueSQL and Client.EnqueueManySQL a database/sql
// transaction, database or connection (SQLDB), which is also how package
// ent writes in an Ent transaction. Any other value does not compile. Pass
// the transaction that writes your domain rows and the job commits or rolls
// back with them.
//
// Every path resolves a job's options in one place: non-zero Opts, then the
// args' own Opts (OptsProvider), then the kind's registered defaults
// (Config.Kinds, which *handlers.Registry implements), then the built-in
// defaults. With Config.Kinds set, a kind it does not know is refused with
// ErrUnknownKind before anything is sent.
//
// A unique key makes enqueue idempotent: while a job with that key is in
// flight, a second enqueue inserts nothing and reports the existing job with
// Duplicate set (MoveOnDuplicate moves its run_at instead). EnqueueMany
// writes a batch with one COPY or one set-based insert; a taken key makes
// that item a Duplicate, never fails the batch.
// Due jobs are announced with NOTIFY on Client.NotifyChannel, at most once
// per queue per debounce window per Client; polling is the backstop.
//
// # Operations
//
// Migration 003 installs views an operator can read with psql
// (docket_queue_status, docket_table_status, docket_stuck_jobs,
// docket_unserved_kinds, docket_live_workers, docket_horizon), the paused
// queues (docket_queues) and the registry of live worker processes
// (docket_workers). Client.Status reads them and draws warnings against
// Thresholds; PauseQueue and ResumeQueue stop and restart claims of a queue;
// ListDead, ReplayDead and PurgeDead triage the dead-letter table; CancelJob
// and RetryJob act on one job. docs/operations.md is the runbook.
//
// # Migrations
//
// Migrator applies the embedded, numbered up/down SQL files in one
// transaction under an advisory lock, so every process may call Up at start.
// The SQL is also available (Migrator.SQL, `docket migrate sql`) for teams
// that run their own migration tool.
package outbox
