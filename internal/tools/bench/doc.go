// Package bench measures Docket end to end against a real PostgreSQL: how
// fast jobs go in, how fast a worker drains them, and how long a job waits
// between its enqueue's commit and its handler's start. It is the engine of
// `docket bench`; the command only turns flags into a [Config] and prints
// each [Result] as one JSON line.
//
// # Scenarios
//
//   - insert: Config.Jobs no-op jobs enqueued with outbox.Client.EnqueueMany
//     (COPY) in batches of Config.Batch, one transaction per batch, from one
//     connection. Timed from the first batch to the last commit.
//   - drain: Config.Jobs jobs inserted first (not timed), then a worker with
//     its default configuration (concurrency Config.Workers if set) is
//     started and timed until the jobs table is empty, i.e. every job's
//     completion is written. It also reports the process's peak resident
//     set size over the drain.
//   - sustained: Config.Producers goroutines enqueue single jobs, one per
//     transaction, at a shared total rate of Config.Rate jobs/s for
//     Config.Duration while a worker runs. Producers follow one schedule
//     (job k is due at start + k/rate), so sleeping never accumulates drift;
//     a producer that falls behind does not sleep until it has caught up.
//   - idle: one job every 100 ms, 200 jobs, on an otherwise empty queue.
//   - workflows: Config.Jobs workflows (DefaultWorkflows alone, at most
//     AllWorkflows under all), each a chain of three steps, enqueued first
//     (not timed); then a worker is timed until every step ran. Each step
//     records a result (Job.SetResult) and the next reads it
//     (Job.ParentResult). Then as many no-op jobs as steps are drained the
//     same way in a fresh schema, and the steps per second are reported
//     against them (fraction_of_plain).
//   - serial: Config.Jobs jobs (at most AllSerialJobs under all) spread
//     round robin over Config.SerialKeys serial keys, enqueued from one
//     connection (not timed); then a worker is timed until every job ran,
//     each handler sleeping Config.SerialHandler and recording its start
//     and end. The hand-off percentiles are taken from those records: from
//     the end of one job of a key to the start of the next. The run fails
//     if a key's jobs overlapped, ran out of order or ran twice. Then as
//     many jobs without keys are drained the same way in a fresh schema,
//     and the rate is reported against them (fraction_of_plain).
//   - flowcontrol: drain's measurement four times, each in a fresh schema,
//     with a backlog of which Config.LimitedShare is a second kind
//     (bench.limited, spread over Config.LimitTenants tenants): with no
//     limit; with a rate limit on that kind but none of its jobs (every
//     claim first asks the limit for nothing); with a per-tenant
//     concurrency limit; and with a rate limit. The worker's claim
//     statements are timed on its connections by a pgx tracer and split
//     into limited claims (docket_claim_limited) and ordinary ones, which
//     worker.Config.OnClaim cannot tell apart.
//
// heldxmin with Config.HeldLimitedRate also runs that second kind under a
// rate limit, offered at twice the rate, and reports per window how many
// of its jobs started against the limit and its claims' percentiles.
//
// sustained and idle report the latency from the enqueue's commit (the time
// taken in Go right after Commit returns) to the handler's start, as
// percentiles over every job (see [Summarize]).
//
// # Isolation
//
// Every scenario runs in a fresh schema named docket_bench_<random hex>,
// migrated with migrate.Migrator, and drops it when it ends, also when it
// fails or its context is cancelled. Producers and the worker get pools of
// their own, as separate processes would.
package bench
