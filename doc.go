// Package docket holds the few types shared by Docket's packages: the job
// arguments interface, the job as a handler sees it, and its states.
//
// Docket keeps background jobs, the transactional outbox and recurring
// schedules inside PostgreSQL. The work is split by concern:
//
//   - outbox: schema, migrations, enqueue inside the caller's transaction, and
//     the queue operations (claim, heartbeat, complete, retry, dead-letter).
//   - handlers: the worker runtime that claims jobs and runs typed handlers.
//   - schedule: recurring jobs from cron specs.
//   - ent: enqueue from Ent transactions and hooks.
//
// This package imports nothing from the others, so they can all depend on it.
package docket
