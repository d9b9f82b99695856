package dockettest_test

import (
	"context"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/dockettest"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/schedule"
)

func TestNextFiresInvalid(t *testing.T) {
	t.Parallel()
	from := time.Now()
	wantFailure(t, failure(func(ft dockettest.T) { dockettest.NextFires(ft, "61 * * * *", "", from, 1) }), "dockettest: ")
	wantFailure(t, failure(func(ft dockettest.T) { dockettest.NextFires(ft, "@hourly", "Mars/Olympus", from, 1) }), "Mars/Olympus")
}

func TestNextFiresEvery(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	got := dockettest.NextFires(t, "@every 90m", "", from, 2)
	if len(got) != 2 || got[1].Sub(got[0]) != 90*time.Minute || !got[0].After(from) {
		t.Fatalf("got %v", got)
	}
}

func TestCompleteRunNotWaiting(t *testing.T) {
	t.Parallel()
	db := dockettest.NewDB(t)
	schedules := dockettest.NewSchedules(t, db, nil)
	enqueue(t, db, EmailArgs{}, docket.Opts{})
	job := dockettest.RequireEnqueued(t, db.Pool, EmailArgs{}, nil)
	wantFailure(t, failure(func(ft dockettest.T) { schedules.CompleteRun(ft, job) }),
		"has no unique key: not a schedule run")

	job.UniqueKey = "schedule:gone"
	wantFailure(t, failure(func(ft dockettest.T) { schedules.CompleteRun(ft, job) }),
		"is not waiting in the jobs table")
}

// Register fails the test on a schedule registration refuses, writing
// nothing of the batch.
func TestSchedulesRegisterInvalid(t *testing.T) {
	t.Parallel()
	db := dockettest.NewDB(t)
	schedules := dockettest.NewSchedules(t, db, nil)
	wantFailure(t, failure(func(ft dockettest.T) {
		schedules.Register(ft,
			schedule.Schedule{Name: "good", Spec: "@hourly", Args: EmailArgs{}},
			schedule.Schedule{Name: "bad", Spec: "61 * * * *", Args: EmailArgs{}})
	}), "dockettest: register schedules: ", `schedule "bad"`)
	dockettest.RequireNotEnqueued(t, db.Pool, EmailArgs{}, nil)
}

// With WithRegistry a schedule's runs get the kind's registered options,
// as a client with that registry gives them; each run is keyed by its
// schedule.
func TestSchedulesWithRegistry(t *testing.T) {
	t.Parallel()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[EmailArgs]) error { return nil },
		handlers.KindOpts{Queue: "mail", Priority: 4, MaxAttempts: 3})
	db := dockettest.NewDB(t, dockettest.WithRegistry(reg))
	clock := dockettest.NewClock(time.Date(2026, 1, 5, 8, 30, 0, 0, time.UTC))
	schedules := dockettest.NewSchedules(t, db, clock)
	schedules.Register(t, schedule.Schedule{Name: "digest", Spec: "@hourly", Args: EmailArgs{To: "team@example.com"}})
	opts := &dockettest.RequireOpts{Queue: "mail", Priority: new(4), MaxAttempts: 3, UniqueKey: schedule.KeyPrefix + "digest",
		ScheduledAt: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)}
	job := dockettest.RequireEnqueued(t, db.Pool, EmailArgs{To: "team@example.com"}, opts)
	clock.Set(opts.ScheduledAt)
	schedules.CompleteRun(t, job)
	opts.ScheduledAt = opts.ScheduledAt.Add(time.Hour)
	dockettest.RequireEnqueued(t, db.Pool, EmailArgs{To: "team@example.com"}, opts)
}
