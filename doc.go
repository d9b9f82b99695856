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
//		Schema:    "shop",
//		Registry:  reg,
//		Worker:    docket.WorkerConfig{ShutdownTimeout: 30 * time.Second},
//		Schedules: []schedule.Schedule{{Name: "report:acme", Spec: "0 2 * * *", Args: DailyReport{Tenant: "acme"}}},
//	})
//	err = client.Start(ctx)
//	defer client.Stop(context.Background())
//	_, err = client.Enqueue(ctx, tx, SendReceipt{OrderID: id}, docket.Opts{})
//
// A client without a Registry only enqueues: a web service that enqueues
// kinds another service runs. The tables come from package migrate
// (migrate.New(schema), then Up; or `docket migrate up`).
//
// # One set of defaults
//
// Every enqueue path — [Client.Enqueue], [Client.EnqueueMany] (one COPY),
// [Client.EnqueueSQL] and [Client.EnqueueManySQL] (database/sql),
// [Client.EnqueueWorkflow], package ent — resolves a job's options in one
// place: explicit [Opts], then the args' own Opts ([OptsProvider]), then
// the queue, priority and attempts its kind was registered with
// (handlers.KindOpts), then the built-in defaults. What is stored then
// governs the job: the pools of its queue run it, in its priority's order,
// and it gets its own max attempts from worker and reaper alike (a kind's
// Timeout and Backoff, which jobs have no value for, apply to every job of
// the kind). With a Registry, a kind without a handler is refused with
// [ErrUnknownKind] and nothing is written. Database handles are typed: a
// pgx Tx, Conn or Pool ([DB]) for Enqueue, a database/sql Tx, DB or Conn
// ([SQLDB]) for EnqueueSQL, an Ent transaction for package ent; anything
// else does not compile.
//
// # Schedules by configuration
//
// Config.Schedules are registered at Start (an idempotent upsert), and the
// client writes each run's successor in the transaction of the run's
// outcome, skips late runs under the Skip misfire policy and restores lost
// runs while it runs. [Client.RegisterSchedules] adds schedules of the same
// kinds later. A schedule whose kind has no handler fails NewClient with
// schedule.ErrNoHandler instead of firing without a successor.
//
// # Packages
//
//   - handlers: what handler authors use: the typed handler registry,
//     per-kind options, the errors that steer a job, middleware. The
//     worker that runs them is tuned through Config.Worker
//     ([WorkerConfig]; docs/worker.md).
//   - schedule: schedule definitions, cron spec parsing, misfire policies
//     and the schedules' tuning (Config.Scheduler).
//   - outbox: events published in the caller's transaction, and the
//     consumer's inbox; [Client.Outbox] returns the client's.
//     outbox/relay publishes committed events to a broker (Config.Relay
//     runs one in this process).
//   - admin: the operator's operations (status, jobs, dead letters, queues,
//     limits, workflows, schedules); [Client.Admin] returns the client's.
//   - migrate: the schema's migrations and grants.
//   - ent: enqueue from Ent transactions and mutation hooks.
//   - dockettest: helpers for the tests of code that uses Docket.
//
// This package also names the types every package shares — [Args], [Job],
// [State] — as aliases of an internal package, so that the others can use
// them without importing this one.
package docket
