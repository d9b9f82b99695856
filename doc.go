// Package docket is the front door of Docket: background jobs, the
// transactional outbox and recurring schedules kept inside PostgreSQL. A job
// is a row written in the same transaction as the domain rows that cause it;
// workers on any number of machines claim and run it.
//
// # One client
//
// A program registers its handlers and builds one [Client] from a pgx pool
// and a [Config]; Start and Stop run the worker and the schedules together:
//
//	reg := handlers.NewRegistry()
//	handlers.MustRegister(reg, sendReceipt, handlers.KindOpts{Queue: "mail"})
//	client, err := docket.NewClient(pool, docket.Config{
//		Registry:  reg,
//		Schedules: []schedule.Schedule{{Name: "report:acme", Spec: "0 2 * * *", Args: DailyReport{Tenant: "acme"}}},
//	})
//	err = client.Start(ctx)
//	defer client.Stop(context.Background())
//	_, err = client.Enqueue(ctx, tx, SendReceipt{OrderID: id}, outbox.Opts{})
//
// A client without a Registry only enqueues: a web service that enqueues
// kinds another service runs.
//
// # One set of defaults
//
// Every enqueue path — [Client.Enqueue], the outbox client's pgx and
// database/sql methods, package ent — resolves a job's options in one place:
// explicit options, then the args' own Opts (outbox.OptsProvider), then the
// queue, priority and attempts its kind was registered with
// (handlers.KindOpts), then the built-in defaults. What is stored then
// governs the job: the pools of its queue run it, in its priority's order,
// and it gets its own max attempts from worker and reaper alike (a kind's
// Timeout and Backoff, which jobs have no value for, apply to every job of
// the kind). With a Registry, a kind without a handler is refused with
// outbox.ErrUnknownKind and nothing is written. Database handles are typed: a pgx Tx, Conn or Pool for Enqueue,
// a database/sql Tx, DB or Conn for EnqueueSQL, an Ent transaction for
// package ent; anything else does not compile.
//
// # Schedules by configuration
//
// Config.Schedules are registered at Start (an idempotent upsert), and the
// client writes each run's successor in the transaction of the run's
// outcome, skips late runs under the Skip misfire policy and restores lost
// runs while it runs. A schedule whose kind has no handler fails NewClient
// with schedule.ErrNoHandler instead of firing without a successor.
//
// # Packages
//
//   - outbox: schema and migrations, enqueue inside the caller's
//     transaction, and the operator operations (status, queues, dead
//     letters); [Client.Outbox] returns the client's.
//   - handlers: what handler authors use: the typed handler registry,
//     per-kind options, the errors that steer a job, middleware. The
//     worker that runs them is tuned through Config.Worker
//     ([WorkerConfig]; docs/worker.md).
//   - schedule: schedule definitions, cron spec parsing and the schedule
//     operations (list, pause, resume, trigger, remove); [Client.Schedules]
//     returns the client's.
//   - ent: enqueue from Ent transactions and mutation hooks.
//
// This package also names the types every package shares — [Args], [Job],
// [State] — as aliases of an internal package, so that the others can use
// them without importing this one.
package docket
