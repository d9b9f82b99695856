// Package schedule runs recurring jobs defined like cron, inside the same
// PostgreSQL tables as every other Docket job.
//
// A [Schedule] is a unique name, a cron spec, a job template (args, queue,
// priority, tenant, serial key, attempts), a spread window, a misfire policy
// and a paused flag. Registration upserts schedules by name into
// docket_schedules (migration 002): every process may register the same set
// at start. Each schedule has at most one pending run: a job with unique key
// "schedule:<name>" and meta {"schedule": name, "fire": fire time}.
//
// This package holds what a user declares: [Schedule], [Misfire] and its
// policies, specs ([ParseSpec]), [Offset], the errors and the tuning
// ([Config], as docket.Config.Scheduler). The engine that runs schedules is
// internal to Docket; docket.NewClient wires it in.
//
// # Wiring
//
// Schedules are configuration of the client that runs their handlers:
//
//	client, _ := docket.NewClient(pool, docket.Config{
//		Registry: reg, // has a handler for Report
//		Schedules: []schedule.Schedule{{Name: "report:acme", Spec: "@hourly",
//			Window: 10 * time.Minute, Args: Report{Tenant: "acme"}}},
//	})
//	_ = client.Start(ctx) // registers, then runs worker and reconciler
//	defer client.Stop(context.Background())
//
// The client attaches the outcome hook that writes each next run to the
// schedules' kinds, adds the middleware that skips late runs, and runs the
// reconciler from Start to Stop; none of these is a step to remember. A
// schedule whose kind has no handler fails docket.NewClient with
// [ErrNoHandler]; so does a later docket.Client.RegisterSchedules of a kind
// not among Config.Schedules'.
//
// The operations on stored schedules are in package admin:
// client.Admin().Schedules() (or admin.New(...).Schedules()) lists them,
// finds stale ones, pauses, resumes, removes, triggers and reconciles, as
// `docket schedules` and the dashboard do. Those processes have no
// registry; so that a run they trigger gets the queue, priority and
// attempts of the schedule's own runs (the schedule's, else the kind's
// handlers.KindOpts, else the defaults), the client that registers a
// schedule stores them in the schedule's row (admin.ScheduleInfo's Run).
//
// # Spec syntax
//
// Specs are parsed by github.com/robfig/cron/v3: five fields (minute hour
// day-of-month month day-of-week), or six with leading seconds; descriptors
// @yearly, @monthly, @weekly, @daily, @hourly and @every <duration> (at
// least 1s). A zone comes from a CRON_TZ=<zone> (or TZ=) prefix or from
// Schedule.TimeZone, never both; without one the spec is in UTC, whatever
// the host's local zone. Registration rejects, with an error naming the
// schedule and wrapping [ErrInvalidSpec], and writes nothing of the batch:
// unparsable specs, specs that never fire (0 0 30 2 *), a malformed zone
// prefix (which makes the cron parser panic; Docket checks it first and
// recovers any panic), unknown zones and "Local".
//
// # Next run at completion
//
// The client's outcome hook runs in the worker inside the transaction that
// completes or dead-letters a run (also a transactional handler's own
// transaction). It locks the schedule's row and, only if the row still
// expects this run's fire time, enqueues the next run and records last_fire
// and next_fire, all in that transaction. The next fire time is computed
// from the previous fire time, not from now, so schedules do not drift; the
// guard on next_fire and the unique key make two completions of one fire
// time insert one run. A run enqueued by a trigger (admin's
// Schedules().Trigger, `docket schedules trigger`) has no fire time and
// leaves the timetable alone.
//
// The reconciler (every [Config].ReconcileInterval, a minute by default,
// while the client runs) gives every active schedule without a pending run
// one: schedules whose run was deleted by hand, dead-lettered by the reaper
// (lease expired on its last attempt: no worker writes that outcome, so no
// hook runs) or that were just resumed. It is one ON CONFLICT DO NOTHING
// insert per batch under a transaction-scoped advisory lock: safe in every
// process at once. A client's reconciler looks after the schedules of its
// own kinds (those of its Config.Schedules) only, so services with different
// schedules can share a schema: schedules of other kinds are left to the
// processes that run them, and each such kind is logged once per process, at
// INFO.
//
// # Spread
//
// A run is enqueued at its fire time plus [Offset](name, Window): a stable
// hash of the schedule's name mapped into [0, Window). The offset is the
// same on every run and in every process, so a schedule is predictable,
// while 10,000 schedules with the same spec spread evenly over the window
// instead of landing in one second.
//
// # Misfire
//
// A run is late when it starts more than Config.Grace (1 minute) after its
// fire time plus offset. The misfire policy says what happens to fire
// times that passed while nothing ran the schedule (workers down, a
// backlog, a run longer than the period):
//
//   - [Skip] (the default): after an outage at most one late run executes,
//     the pending one, and only if it starts within Grace; the client's
//     middleware completes a later one without calling the handler. The
//     next run is at the first fire time still ahead, on the schedule's
//     grid: an "@every 2s" schedule stopped for 40 s runs once on restart,
//     not 20 times.
//   - [RunOnce]: the late run executes however late it is, one catch-up
//     for any number of missed fire times, followed by the first fire time
//     ahead.
//   - [CatchUp]: every missed fire time runs, oldest first, one run at a
//     time, until the schedule is on time again; for handlers that
//     process the period ending at their run's fire time and must miss
//     none.
//
// Under Skip and RunOnce a run that ends after later fire times passed is
// followed by the first fire time ahead too. When the reconciler re-creates
// a lost run that is late, Skip creates the first fire time ahead, RunOnce
// the latest missed one and CatchUp the oldest missed one, to run now.
//
// # DST policy
//
// Calendar specs are evaluated on the wall clock of their zone. A wall time
// inside a spring-forward gap (02:30 on the night clocks jump from 02:00 to
// 03:00) runs at the instant of the jump (03:00), once, even if several gap
// times map to it. A wall time that occurs twice in a fall-back overlap
// (01:30 when clocks return from 02:00 to 01:00) runs once, at its first
// occurrence; so an hourly spec in such a zone has one two-hour gap a year.
// @every specs are durations in absolute time and ignore DST. Schedules in
// UTC (the default) have neither.
//
// # What happens on failure
//
//   - A failed attempt is retried as any job; the schedule waits. A run that
//     is dead-lettered (exhausted, cancelled, undecodable) still schedules
//     the next run, in the same transaction.
//   - A worker that crashes mid-run: the lease expires, the reaper returns
//     the run to ready and it runs again (at least once). On its last
//     attempt it is dead-lettered without a hook, and the reconciler
//     re-creates it.
//   - A hook that fails (the database, a lock timeout) rolls back the
//     outcome with it; the worker retries the write, and failing that, the
//     run is reaped and runs again. An outcome is never written without
//     its next run.
//   - Pause stops new runs and Remove deletes the schedule; both withdraw
//     the pending run in the same transaction unless it is already running.
//     A late pending run under Skip is completed without running by the
//     client's middleware.
//   - A spec or template changed by a new registration applies from the
//     next run; the pending run keeps its time and payload. Schedules that
//     no process registers any more are listed by admin's
//     Schedules().Stale (and `docket schedules list --stale 24h`) for
//     removal.
package schedule
