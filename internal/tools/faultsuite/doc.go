// Package faultsuite is the multi-process harness that Docket's fault
// suite and its soak (`docket soak`) share, and, in its tests, the fault
// suite itself.
//
// # Harness
//
// Worker processes are real OS processes: a program that calls
// [RunWorker] when [IsWorker] (the suite's test binary re-executes itself;
// `docket soak` runs `docket soak --serve-worker`), started by [Start] with
// a [WorkerSpec]: the database (often through an internal/faultproxy
// proxy), the schema, lease and concurrency, and how many schedules to
// keep. Each process runs a Docket client with three kinds:
//
//   - [Plain] jobs, whose handler writes an effect row outside the job's
//     transaction: at least once;
//   - [Tx] jobs, whose transactional handler writes it in the transaction
//     that completes the job: exactly once;
//   - [Tick] jobs, the runs of the schedules, recorded in the ticks table
//     transactionally with their fire time.
//
// A Work job's Mode makes its handler fail once, fail always, snooze once
// or sleep deaf to its context. Each process names its connections
// (application_name) so that [WaitSessionsGone] finds any it left behind, and at a
// clean shutdown reports the goroutines of Docket or pgx still running
// after its client stopped and its pool closed; [Process.Stop] fails if
// there are any.
//
// The [Enqueuer] puts numbered jobs in with bulk enqueue (COPY), one batch
// per transaction recorded in a batches table, and retries a batch a fault
// broke once it knows it did not commit: every number is enqueued exactly
// once. [Check] then counts what a run left, and [Counts.Violations] names
// every invariant broken: each job exactly once in history or dead
// letters (dead only if meant to), none left or running, each
// transactional effect exactly once, each plain effect at least once.
//
// # Fault suite
//
// The tests run each fault (a reset aimed at a claim, an outcome or a
// COPY; refused connections; a blackhole; latency; SIGKILL; SIGSTOP; a
// PostgreSQL restart) against three worker processes draining 8,000
// jobs; docs/reliability.md describes them and their figures.
package faultsuite
