// Package handlers is what a handler author uses: the registry of typed
// handlers, their per-kind options, the errors that steer a job, and
// middleware. The worker that runs them is built by docket.NewClient from
// a [Registry] and tuned with docket.WorkerConfig.
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
// the same queue. A client built with the registry also enqueues with it:
// every enqueue gets the kind's registered queue, priority and attempts
// when the options leave them unset, and a kind without a handler is
// refused.
//
// # Outcomes
//
// What a handler returns decides what happens to its job:
//
//   - nil: the job is complete (moved to history, or deleted when history
//     is off), with the result it recorded, if any (see Results).
//   - [Snooze](d): run again after d; the attempt is not counted.
//   - [RetryAfter](d, err): a failed attempt, retried after d.
//   - [Cancel](err): dead-lettered now, whatever attempts are left.
//   - any other error: a failed attempt, retried after the kind's Backoff
//     ([Backoff] by default), or dead-lettered (reason "exhausted") when it
//     was the job's last attempt: its max attempts as stored at enqueue.
//
// A panic is recovered and recorded as a failed attempt with its stack
// ([PanicError]). A per-kind Timeout cancels the handler's context (cause
// [ErrTimeout]); an error returned after it is recorded as "timed out". A
// payload that does not decode into the args type is dead-lettered at once
// (reason "undecodable", [DecodeError]): retrying cannot fix it. Errors and
// logs name the job's id, kind, attempt and queue, never its payload.
//
// A handler's context is also cancelled when the worker loses the job's
// lease (cause [ErrLeaseLost]: the job may run again elsewhere, and this
// run's outcome is dropped), when shutdown's deadline passes (cause
// [ErrShutdown]: the job goes back to ready without spending the attempt)
// and when an operator cancels the running job (cause [ErrCancelled]:
// admin Jobs.Cancel, docket jobs cancel, the dashboard). A cancelled job
// is dead-lettered with reason "cancelled" whatever the handler returns:
// from the moment the request commits, the run can no longer complete,
// retry, snooze or be released, and a transactional handler's writes roll
// back. The worker hears of the request within about a second (a NOTIFY;
// its heartbeat when notifications are off or lost). A run that finished
// before the request committed keeps its outcome.
//
// # Progress
//
// [SetProgress] records a small JSON value and a message for the running
// job, which operators see in docket jobs show, the dashboard and admin
// Jobs.Get. It costs no round trip: the worker writes the last value
// reported with its next heartbeat, brought forward so that progress is
// written within about a second. A job that dies keeps its last progress
// in the dead-letter table.
//
// # Results
//
// A handler may record what its run produced with [Job.SetResult]: a value
// encoded as JSON, at most [MaxResultBytes] (64 KiB), the last call of the
// run winning. It is stored with the job's history row when the job
// completes, and with its dead letter when it dead-letters (the last
// attempt's); retried and snoozed runs' results are dropped. A value that
// cannot be stored is refused at the call ([ErrInvalidResult], saying why).
// Operators read results with admin's Jobs().Get and admin.JobResult,
// `docket jobs show --payload` and the dashboard (when it shows payloads:
// a result may hold personal data too).
//
// A workflow step reads what its parents recorded with [Job.ParentResult],
// by the refs the workflow gave them ([ErrNotParent], [ErrNoResult]). The
// results come with the step's claim, in the claim statement; they are
// kept, with history on or off, until the workflow finishes
// (docs/workflows.md, "Results").
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
// rolled back and the job runs again without spending an attempt. A
// transactional job holds a connection of the pool for its whole run.
//
// # Middleware
//
// [Middleware] wraps every run, in the order of
// docket.WorkerConfig.Middleware (the first is outermost), and sees the job
// (without decoding its payload) and the error that decides its outcome.
// [Logging] logs runs with log/slog; [JobAttrs] gives the attributes
// Docket logs for a job (job_id, kind, attempt, queue) for middleware of
// your own: metrics, tracing.
//
// # Tracing
//
// Each run of a job is an OpenTelemetry span "docket.run <kind>" of kind
// consumer, a child of the span that enqueued the job (its trace context
// travels in the job's meta), with the attributes [AttrKind], [AttrQueue],
// [AttrJobID], [AttrAttempt] and [AttrOutcome]; never the payload. The
// handler's ctx carries the run span, so the handler's own spans nest under
// it. docket.WorkerConfig.TracerProvider makes the spans (nil: the global
// provider, a no-op until the application installs an SDK, also after
// the worker started; until then, a job without a trace context runs
// without a span, and one with a trace context hands it on to its
// handler).
//
// # Guarantees
//
//   - At-least-once: a job runs until an outcome is recorded; a crashed or
//     frozen worker's jobs run again after their lease. Handlers must be
//     idempotent; they get the job's id and attempt to help.
//   - Transactional handlers' database effects happen exactly once.
//   - Two jobs with the same serial key never run at the same time.
//   - A snooze, a held serial key and a release at shutdown do not spend an
//     attempt; a crash does (a job that kills its worker must not run
//     forever).
//
// docs/worker.md describes how the worker claims, heartbeats, writes
// outcomes, maintains the queue and shuts down; docs/guarantees.md names
// the test behind each promise.
package handlers
