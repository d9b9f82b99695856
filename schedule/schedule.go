package schedule

import (
	"log/slog"
	"time"

	"github.com/docketq/docket/internal/engine/scheduler"
)

// Schedule is a recurring job: its name, when it fires and the job each
// run enqueues. docket.Config.Schedules registers them at Start (an
// idempotent upsert by name), and docket.Client.RegisterSchedules later.
// The zero values of the optional fields mean the documented defaults. Its
// fields:
//
//   - Name string: identifies the schedule and keys its pending run
//     ("schedule:<name>"). Required; at most docket.MaxKeyLen-9 bytes, no
//     spaces or control characters.
//   - Spec string: the cron spec: 5 fields, 6 with leading seconds, a
//     descriptor (@hourly, @every 10m), optionally prefixed by
//     CRON_TZ=<zone>.
//   - TimeZone string: an IANA zone for a Spec without a CRON_TZ= prefix.
//     Empty means UTC.
//   - Args docket.Args: the payload of every run; its Kind() is the run's
//     kind. Required. It is encoded to JSON at registration.
//   - Queue string: the runs' queue. Empty means the args' own Opts' queue
//     (when Args implements docket.OptsProvider), else the queue the kind
//     was registered with (handlers.KindOpts), else "default", as for any
//     enqueue.
//   - Priority int: the runs' priority, -10..10. Zero means the args' own
//     Opts', else the kind's registered priority, if any.
//   - Tenant, SerialKey string: as docket.Opts has them. Empty means the
//     args' own Opts', else none.
//   - MaxAttempts int: each run's attempts. Zero means the args' own
//     Opts', else the kind's registered max attempts, else 25.
//   - Window time.Duration: spreads the runs of many schedules with the
//     same spec: each run is enqueued at its fire time plus an offset in
//     [0, Window) taken from a hash of Name ([Offset]), the same on every
//     run. Zero means no spread.
//   - Misfire Misfire: the policy for missed fire times. Empty means
//     [Skip].
//   - Paused bool: registers a new schedule paused. It does not change the
//     pause state of a schedule that exists: pausing and resuming (admin,
//     `docket schedules pause|resume`) own it, so a restart does not undo
//     an operator's pause.
type Schedule = scheduler.Schedule

// Misfire says what happens to fire times that passed while no worker ran
// the schedule (workers down, a backlog, a run longer than the period): a
// string, one of the constants below.
type Misfire = scheduler.Misfire

const (
	// Skip drops missed fire times: after an outage at most one late run
	// executes (the pending run, if it starts within the grace period of
	// its time; a later start completes it without calling the handler),
	// and the next run is at the first fire time still ahead, on the
	// schedule's grid. The zero value of Misfire means Skip.
	Skip = scheduler.Skip
	// RunOnce catches up with a single run for any number of missed fire
	// times, however late it starts, then continues at the first fire time
	// still ahead.
	RunOnce = scheduler.RunOnce
	// CatchUp runs every missed fire time, oldest first and one at a time
	// (a schedule has one pending run at most), until the schedule is back
	// on time. Each run carries its own fire time (meta MetaFire), so a
	// handler that processes the period ending at its fire time misses
	// none. After a long outage of a frequent schedule that is many runs in
	// a row: a day of "@every 1m" is 1,440.
	CatchUp = scheduler.CatchUp
)

// MetaSchedule and MetaFire are the meta keys of a schedule run's job: the
// schedule's name, and the fire time (RFC 3339, UTC) the run is for. A run
// enqueued by a trigger has MetaSchedule and MetaTrigger but no MetaFire.
const (
	MetaSchedule = scheduler.MetaSchedule
	MetaFire     = scheduler.MetaFire
	MetaTrigger  = scheduler.MetaTrigger
)

// KeyPrefix prefixes a schedule's name in the unique key of its pending run.
const KeyPrefix = scheduler.KeyPrefix

// Errors of registering and operating schedules; each is wrapped with the
// schedule's name.
var (
	// ErrInvalidSchedule: a schedule given to docket.NewClient or
	// RegisterSchedules is invalid (its spec errors wrap ErrInvalidSpec
	// instead).
	ErrInvalidSchedule = scheduler.ErrInvalidSchedule
	// ErrInvalidSpec: a cron spec or time zone that does not parse, or a
	// spec that never fires.
	ErrInvalidSpec = scheduler.ErrInvalidSpec
	// ErrNotFound: no schedule has that name.
	ErrNotFound = scheduler.ErrNotFound
	// ErrNoHandler: a schedule's kind has no handler in the client that
	// runs the schedules, so no one would run it or write its next run.
	// Nothing of the schedules is registered.
	ErrNoHandler = scheduler.ErrNoHandler
)

// Config tunes a client's schedules (docket.Config.Scheduler). Every zero
// value means the documented default.
type Config struct {
	// ReconcileInterval is how often a running client re-creates lost
	// pending runs. Zero means 1 minute; -1 disables the loop (reconcile
	// with admin's Schedules().Reconcile yourself).
	ReconcileInterval time.Duration
	// Grace is how late a run may start before it counts as a misfire.
	// Zero means 1 minute.
	Grace time.Duration
	// Clock returns the current time. Nil means time.Now. Tests inject one
	// to simulate days in a second; fire times are computed from it, while
	// the database decides when a job is due by its own clock.
	Clock func() time.Time
	// Logger receives the schedules' logs. Nil means the worker's logger.
	Logger *slog.Logger
}

// Defaults of Config's zero values.
const (
	DefaultReconcileInterval = scheduler.DefaultReconcileInterval
	DefaultGrace             = scheduler.DefaultGrace
)

// Spec is a parsed cron spec with its time zone; Next gives the next fire
// time after a time, zero when the spec fires no more.
type Spec = scheduler.Spec

// ParseSpec parses a cron spec (5 fields, 6 with leading seconds, or a
// descriptor; optionally prefixed by CRON_TZ=<zone>) in zone, an IANA
// name, for a spec without a CRON_TZ= prefix ("" means UTC). It returns an
// error wrapping ErrInvalidSpec for a spec or zone that does not parse, or
// a spec that never fires.
func ParseSpec(spec, zone string) (*Spec, error) { return scheduler.ParseSpec(spec, zone) }

// Offset returns the spread offset of a schedule: a stable hash of name
// mapped into [0, window), in whole milliseconds. It is the same on every
// run and in every process, and spreads names evenly. A window of zero or
// less gives zero.
func Offset(name string, window time.Duration) time.Duration {
	return scheduler.Offset(name, window)
}
