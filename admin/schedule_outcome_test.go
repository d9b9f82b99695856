package admin_test

import (
	"testing"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/google/uuid"
)

// Each schedule's last outcome comes from the run of its last fire: the
// pending run once due (due, running, retrying), else the run that ended
// (dead when its dead letter is found, else completed).
func TestScheduleOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(t, `INSERT INTO `+b.Table("docket_schedules")+` (name, spec, kind, queue, payload, paused, next_fire, last_fire) VALUES
		('new', '@hourly', 'noop', 'default', '{}', false, NULL, NULL),
		('dead', '@hourly', 'noop', 'default', '{}', false, now() + interval '1 hour', now() - interval '10 minutes'),
		('running', '@hourly', 'noop', 'default', '{}', false, now(), now() - interval '1 hour'),
		('retrying', '@hourly', 'noop', 'default', '{}', false, now(), now() - interval '1 hour'),
		('due', '@hourly', 'noop', 'default', '{}', false, now(), now() - interval '1 hour'),
		('completed', '@hourly', 'noop', 'default', '{}', false, now() + interval '1 hour', now() - interval '10 minutes'),
		('finished', '@hourly', 'busy', 'default', '{}', false, now() + interval '1 hour', now() - interval '10 minutes')`)
	// More dead jobs of kind busy since its last fire than Outcomes reads:
	// whether its run died among them is not known.
	b.exec(t, `INSERT INTO `+b.Table("docket_jobs_dead")+` (id, queue, kind, priority, tenant, attempts, max_attempts,
		created_at, run_at, dead_at, reason, last_error, payload)
	SELECT nextval('`+b.Schema+`.docket_jobs_id_seq'), 'default', 'busy', 0, '', 1, 1, now(), now(), now() - interval '5 minutes',
		'exhausted', 'x', '{}' FROM generate_series(1, 25)`)
	ids := map[string]int64{}
	for _, name := range []string{"dead", "running", "retrying"} {
		ids[name] = b.EnqueueN(t, 1, enqueue.Opts{UniqueKey: "schedule:" + name})[0]
	}
	w := uuid.New()
	jobs := b.Claim(t, w, 3, time.Minute)
	runs := map[int64]queue.Run{}
	for _, j := range jobs {
		runs[j.ID] = queue.RunOf(j)
	}
	if _, err := b.Q.DeadLetter(b.Ctx, b.Pool, w, []queue.Dead{{Run: runs[ids["dead"]], Reason: admin.ReasonExhausted, Error: "boom"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Q.Fail(b.Ctx, b.Pool, w, []queue.Failure{{Run: runs[ids["retrying"]], Delay: time.Minute, Error: "try again"}}); err != nil {
		t.Fatal(err)
	}
	ids["due"] = b.EnqueueN(t, 1, enqueue.Opts{UniqueKey: "schedule:due"})[0]
	// Another schedule's pending run, not yet due: not an outcome.
	b.EnqueueN(t, 1, enqueue.Opts{UniqueKey: "schedule:completed", Delay: time.Hour})

	got, err := b.ops.Schedules().Outcomes(b.Ctx, b.Pool)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]struct {
		outcome string
		job     int64
		err     string
	}{
		"new": {}, "dead": {admin.OutcomeDead, ids["dead"], "boom"}, "running": {admin.OutcomeRunning, ids["running"], ""},
		"retrying": {admin.OutcomeRetrying, ids["retrying"], "try again"}, "due": {admin.OutcomeDue, ids["due"], ""},
		"completed": {admin.OutcomeCompleted, 0, ""}, "finished": {admin.OutcomeFinished, 0, ""},
	} {
		o := got[name]
		if o.Outcome != want.outcome || o.JobID != want.job || o.Error != want.err {
			t.Errorf("%s: %+v, want %s of job %d, error %q", name, o, want.outcome, want.job, want.err)
		}
		if want.outcome != "" && o.At.IsZero() {
			t.Errorf("%s: no time", name)
		}
	}
}
