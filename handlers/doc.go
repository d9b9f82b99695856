// Package handlers is Docket's worker runtime: it claims jobs from the
// queue kept by package outbox, runs typed handlers for them and records
// their outcomes, in as many processes as you like.
//
// # Handlers
//
// A job's args type names its kind with Kind() string. A handler is generic
// over that type and registered once per kind in a [Registry]:
//
//	type SendReceipt struct{ OrderID int64 }
//
//	func (SendReceipt) Kind() string { return "send_receipt" }
//
//	reg := handlers.NewRegistry()
//	handlers.MustRegister(reg, func(ctx context.Context, job *handlers.Job[SendReceipt]) error {
//		return mailer.SendReceipt(ctx, job.Args.OrderID)
//	}, handlers.KindOpts{Queue: "mail", MaxAttempts: 10, Timeout: 30 * time.Second})
//
// [KindOpts] carry the per-kind options: the default queue, priority and
// attempts written into each job at enqueue (the job's stored values then
// govern it), and the timeout and retry policy, which are per kind only.
// [Register] returns an error for a taken kind or invalid options;
// [MustRegister] panics instead. A worker claims only kinds it has a
// handler for, so services sharing one database can run different kinds in
// the same queue. The registry is also the enqueue side's source of
// defaults ([Registry.EnqueueDefaults]): docket.NewClient gives it to the
// outbox client, so every enqueue gets the kind's registered queue,
// priority and attempts when the options leave them unset, and a kind
// without a handler is refused.
//
// Most programs build the worker through docket.NewClient, which also runs
// recurring schedules; [NewWorker] is the same runtime without them.
//
// # Outcomes
//
// What a handler returns decides what happens to its job:
//
//   - nil: the job is complete (moved to history, or deleted when history
//     is off).
//   - [Snooze](d): run again after d; the attempt is not counted.
//   - [RetryAfter](d, err): a failed attempt, retried after d.
//   - [Cancel](err): dead-lettered now, whatever attempts are left.
//   - any other error: a failed attempt, retried after the kind's Backoff
//     ([outbox.Backoff] by default), or dead-lettered (reason "exhausted")
//     when it was the job's last attempt: its max attempts as stored at
//     enqueue, whether the enqueue options, the args' Opts or the kind's
//     MaxAttempts set it.
//
// A panic is recovered and recorded as a failed attempt with its stack
// ([PanicError]). A per-kind Timeout cancels the handler's context (cause
// [ErrTimeout]); an error returned after it is recorded as "timed out". A
// payload that does not decode into the args type is dead-lettered at once
// (reason "undecodable", [DecodeError]): retrying cannot fix it. Errors and
// logs name the job's id, kind, attempt and queue, never its payload.
//
// # Pools and claiming
//
// A [Worker] runs one or more pools ([PoolConfig]); a pool serves a list of
// queues with a fixed number of slots, one goroutine each. Give
// latency-sensitive queues their own pool: a flood in another queue can then
// never take their slots. A pool claims batches sized to its free slots
// (one statement, SKIP LOCKED). It claims when a NOTIFY names one of its
// queues, when this process promoted or reaped jobs, and at least every
// PollInterval. While batches come back full it keeps two claims going as
// slots free up, so claim round trips overlap with work and with each
// other, and it claims jobs beyond its slots (PoolConfig.Prefetch), which
// wait in the pool so that a slot that frees starts the next job at once;
// a short batch ends the burst and the prefetching. By default it holds
// half its slots ahead, or what its slots finish in two claim round trips
// when that is more, up to four times the slots: quick jobs are claimed in
// large batches, and a job held ahead waits about two round trips for its
// slot. A prefetched job is leased, heartbeated and released at shutdown
// like a running one.
//
// NOTIFY is a wake-up, never the source of truth. The worker LISTENs on a
// dedicated connection, which reconnects by itself with backoff; while it
// is down the pools poll, and when it is back they claim at once, since
// notifications were missed. Enqueuers skip notifications inside a short
// debounce window, so the pool claims once more two windows after the last
// notification: the last job of a burst may commit after the claims its
// window's notification set off. Each time its LISTEN is made, the worker
// sends itself a NOTIFY through its pool and checks that it arrives
// (Config.NotifyCheckTimeout): through a transaction pooler it does not,
// and the worker says so once, in a WARN, in /readyz and in
// Worker.NotifyCheck, and runs on by polling (docs/compatibility.md,
// "PgBouncer").
//
// # Fairness
//
// Besides separate pools per queue, a pool may set TenantCap: no tenant
// gets more than that many jobs of one claim batch. A batch so capped can
// come back short while jobs remain, so the pool claims again at once while
// capped batches return anything: one tenant's flood still uses capacity
// nobody else wants, but every other tenant with waiting jobs gets its share
// of every batch. Jobs without a tenant are not in the tenant index, which
// spares every insert an index entry; a capped claim looks for them only
// among the queue's first 4×batch ready jobs, so in a capped queue give
// every job a tenant (a fixed one such as "system" for your own jobs).
//
// # Completion and heartbeats
//
// Outcomes are buffered for FlushInterval (1ms) and written in batches, one
// statement per kind of outcome (complete, fail, snooze, dead-letter,
// release); two batches may be written at once, and while they are, the
// next batch grows, so batch size follows load. Every statement is fenced
// by the claim of the run it speaks for (the job's id and Job.ClaimID, and
// locked_by = this worker), so the outcome of a run that lost its lease
// never overwrites the state of the job's next run, even when this same
// process claimed it again. If the database cannot be reached, writes are
// retried with backoff until the runs are known lost, their leases ran out
// or three leases passed; then they are given up, and the jobs are reaped
// and run again.
//
// One heartbeat statement per HeartbeatInterval (Lease/3) extends the leases
// of all of the process's claimed runs whose outcome is not yet written. A
// run missing from its result was reaped and may run again elsewhere or
// here: its handler's context is cancelled (cause [ErrLeaseLost]) and
// whatever the handler returns is dropped. A handler whose lease is about to
// run out by the local clock (a tenth of a lease before) without the
// database having renewed it is cancelled the same way, before any other
// process may reap the job. A job claimed
// again while a lost run of it is still in its handler in this process
// waits for that handler to return, so two runs of a job never overlap
// here.
//
// # Transactional handlers
//
// [RegisterTx] registers a handler that receives a pgx.Tx. The job's
// completion is written in that transaction, so the handler's writes and
// the completion commit together: its database effects happen exactly once,
// even across crashes and lost leases (a run that lost its lease finds the
// job no longer its own and rolls back). If the handler fails or panics, the
// transaction is rolled back and the failure recorded separately. If the
// handler succeeded but the completion cannot be written (a missing history
// partition, a broken connection, a failed commit), the transaction is
// rolled back and the job runs again without spending an attempt.
//
// # Serial keys
//
// Jobs enqueued with a SerialKey run one at a time per key, in any number
// of processes, and in the order they became ready: each key is a line in
// the database. A serial job takes its place when it first becomes ready
// (at enqueue, or when a scheduled job falls due); the job at the head of
// the line alone is ready or running, the others wait in state "waiting",
// where no claim sees them. A head that fails or snoozes keeps its place
// through its backoff, so no job of a key ever waits for a later one (and
// a failing head holds its key back until it succeeds or dead-letters); when
// it leaves the table (completed, dead-lettered, cancelled, deleted) the
// next in line becomes ready in the same transaction. Different keys run in
// parallel, and nothing holds a connection or a transaction while a serial
// job waits or runs: the exclusion is a unique index, not a lock. A head
// whose worker dies or freezes keeps the key until its lease expires and it
// runs again elsewhere; the run that lost its lease has its context
// cancelled and its outcome dropped, as for any job.
//
// # Connections
//
// Ordinary handlers hold no connection while they run. Transactional jobs
// hold one of the pool's connections for their whole run; at most
// MaxConns-3 of them do so at once (others wait for a turn in their
// slot), so that claims, heartbeats and outcome writes always find a
// connection. Size the pgxpool for that. LISTEN uses one extra connection
// outside the pool, made from Config.ListenURL or else the pool's
// ConnConfig.
//
// Open the pool with [outbox.ParsePoolConfig]: its connect and ping
// timeouts and TCP keepalive make a worker notice, within seconds, a server
// it can no longer reach, where pgx's own defaults take minutes.
//
// # Maintenance
//
// Every worker process also looks after the queue; each step is cheap,
// idempotent and skips rows another process is working on:
//
//   - expired leases are reaped at start and every PollInterval, less often
//     when rounds grow slow (a round waits 25 times its own duration)
//     (internal/engine/queue's Reap): back to ready, or dead when that was their
//     last attempt; the pools are woken when jobs came back;
//   - scheduled jobs (future run_at, retries with backoff, snoozes) become
//     claimable only when promoted (internal/engine/queue's Promote). Promotion runs
//     every PollInterval and also when the earliest scheduled job is due, as
//     reported by internal/engine/queue's NextScheduled or as set by this process's
//     own retries and snoozes; pools of the promoted queues are woken, here
//     and, through NOTIFY, in other processes;
//   - history partitions exist for today and the next three days, and those
//     older than HistoryRetention (7 days) are dropped, before Start
//     returns and then hourly.
//
// Inside the worker, each of these duties is a small service with its own
// goroutine, timer and error logging (reaper.go, promoter.go,
// partitions.go), as are the heartbeat and its lease watchdog
// (heartbeat.go), the LISTEN connection (notify.go), the worker's row in
// docket_workers (presence.go), and the paused queues and limits
// (pauses.go, limits.go), both read by one poll reader (polled.go). They share
// one lifecycle (service.go): Start starts them in order before the pools
// claim, Stop stops them in reverse order once every outcome is written.
// Every outcome — plain handlers' batches, transactional handlers'
// completions in their own transaction, and outcome hooks — is written by
// one writer (finish.go), which is also the one place that creates a
// history partition a transaction found missing.
//
// # Shutdown
//
// [Worker.Stop] stops claiming, releases claimed jobs that have not started,
// and waits for running handlers until ShutdownTimeout (10s) nearly runs
// out. Then it cancels the handlers still running (cause [ErrShutdown]),
// releases their jobs to ready at once without counting the attempt,
// writes every pending outcome and returns. Stop is idempotent. A command
// line program calls it on SIGINT/SIGTERM:
//
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//	defer stop()
//	if err := w.Start(ctx); err != nil { ... }
//	<-ctx.Done()
//	w.Stop(context.Background())
//
// # Operations and metrics
//
// Every poll interval a worker re-reads the paused queues (docket_queues)
// and leaves them out of its claims. At start and on every heartbeat
// interval it upserts its row in docket_workers — host, pid, kinds, queues,
// and p50/p95/p99 of its recent claim round trips — and deletes it on Stop,
// so `docket status` can tell which kinds no live process serves and how
// fast claims are. With Config.Metrics or MetricsAddr it exports Prometheus
// metrics: claim duration, pickup latency, handler duration and outcomes by
// kind, in-flight jobs, lease losses and LISTEN reconnects; StatusCollector
// (MetricsStatus) adds the status views. See metrics.go and
// docs/operations.md.
//
// # Metrics
//
// The same measurements go, from the same recording point, to
// OpenTelemetry instruments of Config.MeterProvider (nil: the global
// provider, a no-op until the application installs an SDK), for
// applications that do not run Prometheus: docket.claim.duration,
// docket.job.pickup and docket.job.duration (histograms, seconds),
// docket.jobs.claimed, docket.jobs.finished, docket.lease.losses and
// docket.notify.reconnects (counters), and docket.jobs.in_flight (a gauge),
// with the attributes docket.pool (AttrPool), docket.job.kind and
// docket.job.outcome. The database-wide gauges of StatusCollector are
// Prometheus only: read them from one place, not from every process.
//
// # Middleware
//
// [Middleware] wraps every run, in the order of Config.Middleware (first is
// outermost), and sees the job (without decoding its payload) and the
// error that decides its outcome. [Logging] logs runs with log/slog;
// [JobAttrs] gives the attributes Docket logs for a job (job_id, kind,
// attempt, queue) for middleware of your own: metrics, tracing.
//
// # Tracing
//
// Docket traces with the OpenTelemetry API, which records nothing until the
// application installs an SDK. Enqueue writes the W3C trace context of its
// ctx into the job's meta ("traceparent", and "tracestate" when present)
// when ctx carries a span and the caller did not set those keys
// (outbox.Config.Propagator). The worker starts one span per run, named
// "docket.run <kind>" and of kind consumer, as a child of that context, so
// a job's runs appear in the trace of the request that enqueued it. Its
// attributes are the job's kind, queue, id and attempt ([AttrKind],
// [AttrQueue], [AttrJobID], [AttrAttempt]) and the run's outcome
// ([AttrOutcome]: completed, retried, snoozed, cancelled, dead, released or
// lost); a failed run records its error and sets the span's error status.
// The payload is never an attribute. The handler's ctx carries the run
// span, so the handler's own spans nest under it.
//
// The runs are children, not links: a retry keeps the job's meta, so every
// attempt is a sibling under the enqueuer's span, in the order they ran,
// and so is a run of a dead job replayed later (a replay keeps the meta).
// A job enqueued without a span starts a trace of its own. A schedule's
// next run is enqueued by the outcome hook, outside any run span, so each
// run of a schedule is the root of its own trace rather than one trace
// growing forever; a run enqueued by schedule.Service.Trigger inside a
// span is that span's child.
//
// Config.TracerProvider makes the spans (nil: otel.GetTracerProvider()).
// Config.Propagator reads the context back (nil: W3C Trace Context, as
// enqueue writes it by default, whatever the global propagator is). A job
// run by dockettest.Work has no span.
//
// # Guarantees
//
//   - At-least-once: a job runs until an outcome is recorded; a crashed or
//     frozen worker's jobs run again after their lease. Handlers must be
//     idempotent; they get the job's id and attempt to help.
//   - Transactional handlers' database effects happen exactly once.
//   - A lost job's late outcome is dropped and never overwrites its new
//     owner's state.
//   - Two jobs with the same serial key never run at the same time.
//   - A snooze, a held serial key and a release at shutdown do not spend an
//     attempt; a crash does (a job that kills its worker must not run
//     forever).
package handlers
