// Package admin holds the operator's operations on Docket's tables: what
// `docket status`, the other CLI verbs and the dashboard run, for a program
// to run too.
//
// A [Client] reads and acts on the tables of one schema. Build one with
// [New], or take a docket.Client's (docket.Client.Admin). It holds no
// connection: every method takes the handle to run through, a pool or the
// caller's transaction, so that an operation can commit with the caller's
// own writes. It needs no handler registry, so any process may run it.
//
//	ops, err := admin.New(admin.Config{Schema: "shop"})
//	st, err := ops.Status(ctx, pool, admin.Thresholds{})
//	err = ops.Queues().Pause(ctx, pool, "reports")
//
// # Reading
//
// [Client.Status] reads the status views (migrations 003 and 017; psql
// reads them too): per queue the backlog, lag, throughput and dead letters,
// the tables' vacuum state, live workers and their claim latency, the
// holder of the vacuum horizon, the outbox relay's backlog, and the
// warnings drawn against [Thresholds] ([WarningCodes] lists their codes).
// [Client.Overview] is the dashboard's bounded version: its counts stop at
// [OverviewLimit]. [Client.Throughput] counts what finished per minute
// (completed, retries, dead), [Client.Workers] lists the worker processes,
// live or recently gone, and [Client.RunningJobs] the jobs they run.
// [Jobs.CountStates] counts the jobs of a filter by state, each count
// stopping at [CountLimit]; [Schedules.Outcomes] says what happened to
// each schedule's last fire. [NewStatusCollector] exports Status as Prometheus
// gauges.
//
// # Acting
//
// The operations are grouped by what they act on, each a small handle of
// the Client:
//
//   - [Client.Jobs]: list live, dead and completed jobs by filter in keyset
//     pages ([JobFilter], [JobStates]), get one, and cancel, delete or
//     retry one by id. A running job is never deleted or retried under
//     its worker ([ErrJobRunning]); cancelling it asks its worker to stop
//     it ([Jobs.Cancel]).
//   - [Client.DeadLetters]: list and group dead jobs, get one, replay them
//     at a rate (they keep their id; attempts start over) and purge them.
//   - [Client.Queues]: pause and resume a queue in use ([ErrUnknownQueue]
//     for any other name, unless [PauseOptions] says to create it).
//   - [Client.Limits]: set, list and remove the rate and concurrency
//     limits the workers enforce ([Limit]), and read their usage.
//   - [Client.Workflows]: a workflow's status and jobs, the recent
//     workflows, and cancel one; for pages, bounded keyset pages of
//     workflows with their steps counted by state ([WorkflowFilter]), a
//     workflow's steps and dependencies wherever the jobs are
//     ([WorkflowGraph]) and the workflows a job takes part in.
//   - [Client.Schedules]: list the recurring schedules, find stale ones,
//     pause, resume, remove, trigger and reconcile them.
//
// Errors name job ids and kinds, never payloads. docs/operations.md is the
// runbook; docs/state-machine.md names the statement behind each move of a
// job.
package admin
