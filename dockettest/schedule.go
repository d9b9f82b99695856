package dockettest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/scheduler"
	"github.com/docketq/docket/schedule"
	"github.com/jackc/pgx/v5"
)

// NextFires returns the next n fire times of a schedule spec in a time zone
// (as schedule.ParseSpec takes them: "" means UTC), strictly after from, in
// the zone's location. It fails the test if the spec or zone is invalid.
// Fewer than n come back for a spec that stops firing.
func NextFires(t T, spec, zone string, from time.Time, n int) []time.Time {
	t.Helper()
	s, err := schedule.ParseSpec(spec, zone)
	if err != nil {
		t.Fatalf("dockettest: %v", err)
	}
	out := make([]time.Time, 0, n)
	for at := from; len(out) < n; {
		at = s.Next(at)
		if at.IsZero() {
			break
		}
		out = append(out, at.In(s.Location()))
	}
	return out
}

// Clock is a clock that moves only when told to, for schedule.Config.Clock
// (pass its Now method) and anything else that takes a func() time.Time. It
// is safe for concurrent use. The zero value is not usable; use [NewClock].
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (backward if d is negative) and
// returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Schedules drives recurring schedules through their runs without a
// worker, on a [Clock]: Register writes schedules as a client's Start does,
// and CompleteRun stands in for the worker that completes a run, which
// enqueues the schedule's next run, computed from the clock. Make it with
// [NewSchedules].
type Schedules struct {
	db  *DB
	svc *scheduler.Service
}

// NewSchedules returns the schedules of db's schema, on clock's time (nil:
// the wall clock). With [WithRegistry], runs get their kinds' registered
// options, as a client with that registry gives them.
func NewSchedules(t T, db *DB, clock *Clock) *Schedules {
	t.Helper()
	ecfg := enqueue.Config{Schema: db.Schema}
	if db.registry != nil { // a nil *Registry in the interface would not be nil
		ecfg.Kinds = db.registry
	}
	jobs, err := enqueue.New(ecfg)
	if err != nil {
		t.Fatalf("dockettest: %v", err)
	}
	cfg := scheduler.Config{DB: db.Pool, Jobs: jobs, Kinds: ecfg.Kinds, ReconcileInterval: -1}
	if clock != nil {
		cfg.Clock = clock.Now
	}
	svc, err := scheduler.New(cfg)
	if err != nil {
		t.Fatalf("dockettest: %v", err)
	}
	return &Schedules{db: db, svc: svc}
}

// Register writes schedules as a client's Start does (an idempotent upsert;
// a new schedule gets its pending run), and fails the test on an error.
func (s *Schedules) Register(t T, schedules ...schedule.Schedule) {
	t.Helper()
	if err := s.svc.Register(context.Background(), schedules...); err != nil {
		t.Fatalf("dockettest: register schedules: %v", err)
	}
}

// CompleteRun does to a waiting schedule run what a worker does when the
// run succeeds, without running its handler: in one transaction it
// removes the job (by its unique key, which every schedule run has) and
// enqueues the schedule's next run, as the worker of a docket.Client with
// that schedule does. It fails the test if the job is not waiting in the
// jobs table.
func (s *Schedules) CompleteRun(t T, job *docket.Job) {
	t.Helper()
	ctx := context.Background()
	if job.UniqueKey == "" {
		t.Fatalf("dockettest: job %d (kind %s) has no unique key: not a schedule run", job.ID, job.Kind)
	}
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		id, ok, err := s.db.Client.RemoveQueued(ctx, tx, job.UniqueKey)
		if err != nil {
			return err
		}
		if !ok || id != job.ID {
			return fmt.Errorf("job %d is not waiting in the jobs table", job.ID)
		}
		return s.svc.Hook()(ctx, tx, []*docket.Job{job}, nil)
	})
	if err != nil {
		t.Fatalf("dockettest: complete job %d (kind %s): %v", job.ID, job.Kind, err)
	}
}
