package admin

import (
	"context"
	"time"

	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/docketq/docket/internal/engine/scheduler"
)

// TxDB is a pgx handle that can also begin a transaction: *pgxpool.Pool,
// *pgx.Conn and pgx.Tx (a savepoint) satisfy it. The schedule operations
// that write a schedule and its pending run together take one.
type TxDB = pgsql.TxDB

// ScheduleInfo is a schedule as stored, for listing. Its fields:
//
//   - Name, Spec, TimeZone, Kind, Queue, Tenant, SerialKey string, Priority,
//     MaxAttempts int, Window time.Duration, Misfire schedule.Misfire,
//     Paused bool: the schedule as registered (schedule.Schedule).
//   - NextFire time.Time: the fire time of the pending run; zero when none.
//   - LastFire time.Time: the fire time of the last finished run; zero when
//     none.
//   - CreatedAt, UpdatedAt (definition last changed), RegisteredAt (last
//     registered by any process) time.Time.
//   - Run *RunOptions: the queue, priority and max attempts every run gets
//     (the schedule's, else its kind's registered options, else the
//     built-in defaults), as resolved at registration by a process whose
//     worker has the kind's handler; nil when no such process has
//     registered the schedule's current definition.
type ScheduleInfo = scheduler.Info

// RunOptions are the queue, priority and max attempts of a schedule's runs
// (fields Queue string, Priority and MaxAttempts int).
type RunOptions = scheduler.RunOptions

// Schedules are the operations on the recurring schedules of a Client.
type Schedules struct{ c *Client }

// Schedules returns the schedule operations: list, find stale, pause,
// resume, remove, trigger, reconcile.
func (c *Client) Schedules() Schedules { return Schedules{c} }

// ops is the schedule engine working through db, for one operation. It
// knows no kind's options: a trigger takes its run's options from the
// schedule's row.
func (h Schedules) ops(db TxDB) (*scheduler.Service, error) {
	jobs, err := enqueue.New(enqueue.Config{Schema: h.c.schema})
	if err != nil {
		return nil, err
	}
	return scheduler.New(scheduler.Config{DB: db, Jobs: jobs, ReconcileInterval: -1})
}

// List returns every schedule, by name.
func (h Schedules) List(ctx context.Context, db TxDB) ([]ScheduleInfo, error) {
	s, err := h.ops(db)
	if err != nil {
		return nil, err
	}
	return s.List(ctx)
}

// Stale returns the schedules that no process has registered for longer
// than olderThan: candidates for Remove once their code is gone.
func (h Schedules) Stale(ctx context.Context, db TxDB, olderThan time.Duration) ([]ScheduleInfo, error) {
	s, err := h.ops(db)
	if err != nil {
		return nil, err
	}
	return s.Stale(ctx, olderThan)
}

// Pause stops scheduling runs of the schedule until Resume and, in the same
// transaction, withdraws its pending run unless that run is already
// running. It returns an error wrapping schedule.ErrNotFound for an
// unknown name.
func (h Schedules) Pause(ctx context.Context, db TxDB, name string) error {
	s, err := h.ops(db)
	if err != nil {
		return err
	}
	return s.Pause(ctx, name)
}

// Resume undoes Pause. If the pending run was skipped meanwhile, the next
// run is created at once from the last fire time, under the misfire
// policy. It returns an error wrapping schedule.ErrNotFound for an unknown
// name.
func (h Schedules) Resume(ctx context.Context, db TxDB, name string) error {
	s, err := h.ops(db)
	if err != nil {
		return err
	}
	return s.Resume(ctx, name)
}

// Remove deletes the schedule and, in the same transaction, its pending run
// unless that run is already running (then it finishes, and no next run is
// written). It returns an error wrapping schedule.ErrNotFound for an
// unknown name.
func (h Schedules) Remove(ctx context.Context, db TxDB, name string) error {
	s, err := h.ops(db)
	if err != nil {
		return err
	}
	return s.Remove(ctx, name)
}

// Trigger enqueues a run of the schedule now, outside its timetable: the
// run has no fire time and no unique key, so the regular pending run is
// left as it is and the schedule does not advance when it ends. It runs
// even when the schedule is paused, with the options the schedule's own
// runs get (ScheduleInfo.Run, else the schedule's own). It returns the
// job's id, or an error wrapping schedule.ErrNotFound for an unknown name.
func (h Schedules) Trigger(ctx context.Context, db TxDB, name string) (int64, error) {
	s, err := h.ops(db)
	if err != nil {
		return 0, err
	}
	return s.Trigger(ctx, name)
}

// Reconcile gives every active schedule that has no pending run one (new
// schedules, runs deleted by hand or dead-lettered by the reaper), under
// each schedule's misfire policy, and returns how many it created. A
// running client does this every schedule.Config.ReconcileInterval for the
// schedules of its own kinds; this call covers every kind.
func (h Schedules) Reconcile(ctx context.Context, db TxDB) (int, error) {
	s, err := h.ops(db)
	if err != nil {
		return 0, err
	}
	return s.Reconcile(ctx)
}
