package dockettest_test

import (
	"fmt"
	"time"

	"github.com/docketq/docket/dockettest"
	"github.com/docketq/docket/schedule"
)

// NextFires lists when a spec fires, here across a daylight-saving change.
func ExampleNextFires() {
	t := &exampleT{}
	from := time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC)
	for _, at := range dockettest.NextFires(t, "30 2 * * *", "Europe/Berlin", from, 3) {
		fmt.Println(at.Format("Mon Jan 2 15:04 MST"))
	}
	// Output:
	// Sat Mar 28 02:30 CET
	// Sun Mar 29 03:00 CEST
	// Mon Mar 30 02:30 CEST
}

// A Clock drives a schedule through its runs: each completed run enqueues
// the next, computed from the clock.
func ExampleClock() {
	t := &exampleT{}
	defer t.done()
	db := dockettest.NewDB(t)

	clock := dockettest.NewClock(time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC))
	schedules := dockettest.NewSchedules(t, db, clock)
	schedules.Register(t, schedule.Schedule{Name: "digest", Spec: "0 9 * * *", Args: EmailArgs{To: "team@example.com"}})
	show := func() {
		job := dockettest.RequireEnqueued(t, db.Pool, EmailArgs{To: "team@example.com"}, nil)
		fmt.Println("next run:", job.RunAt.UTC().Format(time.DateTime))
		clock.Advance(25 * time.Hour)
		schedules.CompleteRun(t, job)
	}
	show() // the first run; it completes at Jan 6 09:00, on time for the next
	show() // this one completes at Jan 7 10:00, after Jan 7 09:00 passed,
	show() // so Jan 7 is skipped (schedule.Skip)
	// Output:
	// next run: 2026-01-05 09:00:00
	// next run: 2026-01-06 09:00:00
	// next run: 2026-01-08 09:00:00
}
