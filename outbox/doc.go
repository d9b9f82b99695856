// Package outbox is Docket's queue: the schema and its migrations, enqueue
// inside the caller's transaction, and the single-statement queue operations
// the worker runtime is built on.
//
// # Tables
//
// docket_jobs holds live jobs only: scheduled (run_at in the future),
// ready and running. Finished jobs leave it, for docket_jobs_done (history,
// one partition per UTC day, dropped whole by retention) or, on failure,
// docket_jobs_dead (the dead-letter table). Because the hot table holds only
// in-flight work, its unique index on unique_key means exactly "no duplicate
// in-flight job". Lock and lease columns are in no index, so heartbeats are
// HOT updates. The schema that holds the tables is configurable
// (Config.Schema); every statement that touches them lives in queries.go.
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
// flight, a second enqueue inserts nothing and reports the existing job's id
// with Duplicate set — also when two transactions race on the key (the later
// one waits for the earlier to commit). MoveOnDuplicate moves the existing
// job's run_at instead.
//
// EnqueueMany writes plain due jobs with one COPY (pgx) and the rest with one
// set-based insert, and reports one result per item; a taken key makes that
// item a Duplicate, never fails the batch.
//
// Due jobs are announced with NOTIFY on Client.NotifyChannel, at most once
// per queue per debounce window per Client, so NOTIFY's commit-time lock
// never caps enqueue throughput. Listeners must claim once more after the
// window; polling is the backstop.
//
// # Queue operations
//
// Claim, Heartbeat, Complete, Fail, Snooze, DeadLetter, Release, Reap and
// Promote are each one statement over many jobs. Claim locks rows with
// FOR NO KEY UPDATE SKIP LOCKED, so concurrent claimers never wait on each
// other and never take the same job. Each claim writes a claim id of its
// own to the jobs it takes, and every heartbeat and outcome names the run it
// is for (Run: job id and claim id): a run that lost its job to the reaper
// changes nothing, even after the same worker claimed the job again.
//
// Jobs with a future run_at (first run, retry backoff, snooze) are in state
// scheduled and invisible to Claim until Promote makes them ready; the
// worker runtime runs Promote as they come due.
//
// Inside a queue, Claim takes higher priorities first and, within a
// priority, jobs in the order they became ready: each job draws a fresh
// ready_seq whenever it becomes ready. A Client claims each (queue,
// priority) from a cursor over ready_seq, so claimed jobs that vacuum cannot
// remove yet — because some long transaction elsewhere holds back the
// horizon — are never visited again; see cursor.go for how jobs from
// late-committing transactions are still found.
//
// # Operations
//
// Migration 003 installs views an operator can read with psql
// (docket_queue_status, docket_table_status, docket_stuck_jobs,
// docket_unserved_kinds, docket_live_workers, docket_horizon), the paused
// queues (docket_queues) and the registry of live worker processes
// (docket_workers). Client.Status reads them and draws warnings against
// Thresholds; PauseQueue and ResumeQueue stop and restart claims of a queue;
// ListDead, ReplayDead (a rate-limited trickle; a dead row is deleted in the
// statement that re-inserts its job, under the same id) and PurgeDead triage
// the dead-letter table; CancelJob and RetryJob act on one job. Payloads are
// read only when asked for. docs/operations.md is the runbook.
//
// # Migrations
//
// Migrator applies the embedded, numbered up/down SQL files in one
// transaction under an advisory lock, so every process may call Up at start.
// The SQL is also available (Migrator.SQL, `docket migrate sql`) for teams
// that run their own migration tool.
package outbox
