// Package outbox is Docket's queue as its users see it: the schema and its
// migrations, enqueue inside the caller's transaction, and the operator's
// operations. The worker protocol on the same tables (claims, leases,
// outcomes, reaping, promotion) is internal, driven by package handlers.
//
// # Tables
//
// docket_jobs holds live jobs only (scheduled, ready, waiting, running);
// finished jobs move to docket_jobs_done (history, one partition per UTC
// day) or docket_jobs_dead (dead letters), so its unique index on
// unique_key means exactly "no duplicate in-flight job". Config.Schema
// names the schema that holds them; each file here holds the statements it
// runs.
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
// defaults. With Config.Kinds set, an unknown kind is refused with
// ErrUnknownKind before anything is sent.
//
// A unique key makes enqueue idempotent: while a job with that key is in
// flight, a second enqueue inserts nothing and reports the existing job with
// Duplicate set (MoveOnDuplicate moves its run_at instead). EnqueueMany
// writes a batch with one COPY or set-based inserts; a taken key makes
// that item a Duplicate, never fails the batch. Due jobs are announced with
// NOTIFY on Client.NotifyChannel, at most once per queue per debounce window.
//
// # Events
//
// Client.Publish, PublishSQL and PublishMany (COPY) write events for the
// relay (package outbox/relay) in the caller's transaction, into
// docket_events (migration 007, one partition per UTC day). A keyed event
// takes its key's row lock in docket_event_keys until the transaction ends
// and draws its id under it, so one key's events are ordered by commit and
// numbered without gaps. Client.Inbox and InboxSQL record a consumed
// message's id in the consumer's transaction and report repeats.
// ListDeadEvents, ReplayDeadEvents, PurgeDeadEvents and EventStatus serve
// operators (docs/outbox.md).
//
// # Operations and migrations
//
// Client.Status reads the status views (migration 003; also for psql) and
// draws warnings against Thresholds; PauseQueue and ResumeQueue stop and
// restart claims of a queue; ListDead, ReplayDead and PurgeDead triage dead
// letters; CancelJob and RetryJob act on one job (docs/operations.md is the
// runbook). Migrator applies the embedded up/down SQL in one transaction
// under an advisory lock, so every process may call Up at start; Migrator.SQL
// (`docket migrate sql`) gives the SQL to teams with their own tool.
package outbox
