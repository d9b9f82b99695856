package dockettest_test

import (
	"testing"
	"time"

	"github.com/docketq/docket/dockettest"
	"github.com/docketq/docket/outbox"
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
	svc, err := schedule.New(schedule.Config{DB: db.Pool, Outbox: db.Client})
	if err != nil {
		t.Fatal(err)
	}
	enqueue(t, db, EmailArgs{}, outbox.Opts{})
	job := dockettest.RequireEnqueued(t, db.Pool, EmailArgs{}, nil)
	wantFailure(t, failure(func(ft dockettest.T) { dockettest.CompleteRun(ft, db, svc, job) }),
		"has no unique key: not a schedule run")

	job.UniqueKey = "schedule:gone"
	wantFailure(t, failure(func(ft dockettest.T) { dockettest.CompleteRun(ft, db, svc, job) }),
		"is not waiting in the jobs table")
}
