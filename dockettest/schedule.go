package dockettest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	docket "github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/schedwire"
	"github.com/docketq/docket/schedule"
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

// CompleteRun does to a waiting schedule run what a worker does when the
// run succeeds, without running its handler: in one transaction on db's
// pool it removes the job (by its unique key, which every schedule run
// has) and calls svc's outcome hook, which enqueues the schedule's next
// run, as the worker of a docket.Client with that schedule does. Together with a [Clock] given to the service it
// drives a schedule through its runs. It fails the test if the job is not
// waiting in the jobs table or the hook fails.
func CompleteRun(t T, db *DB, svc *schedule.Service, job *docket.Job) {
	t.Helper()
	ctx := context.Background()
	if job.UniqueKey == "" {
		t.Fatalf("dockettest: job %d (kind %s) has no unique key: not a schedule run", job.ID, job.Kind)
	}
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		id, ok, err := db.Client.RemoveQueued(ctx, tx, job.UniqueKey)
		if err != nil {
			return err
		}
		if !ok || id != job.ID {
			return fmt.Errorf("job %d is not waiting in the jobs table", job.ID)
		}
		return schedwire.Of(svc).Hook(ctx, tx, []*docket.Job{job}, nil)
	})
	if err != nil {
		t.Fatalf("dockettest: complete job %d (kind %s): %v", job.ID, job.Kind, err)
	}
}
