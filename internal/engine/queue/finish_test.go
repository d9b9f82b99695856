package queue_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/jobtest"
	"github.com/google/uuid"
)

// Every one of Complete's statements refuses a run whose job an operator
// asked to cancel: the job stays, and the run is missing from the ids, so
// that the worker writes it cancelled instead.
func TestCompleteRefusesCancelRequested(t *testing.T) {
	t.Parallel()
	for _, history := range []bool{true, false} {
		for _, results := range []bool{false, true} {
			for _, serial := range []bool{false, true} {
				name := fmt.Sprintf("history=%v/results=%v/serial=%v", history, results, serial)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					b := setup(t, queue.Config{DisableHistory: !history})
					opts := enqueue.Opts{}
					if serial {
						opts.SerialKey = "a"
					}
					if _, err := b.Jobs.Enqueue(b.Ctx, b.Pool, jobtest.Noop{}, opts); err != nil {
						t.Fatal(err)
					}
					w := uuid.New()
					jobs := b.Claim(t, w, 1, time.Minute)
					if len(jobs) != 1 {
						t.Fatalf("claimed %d jobs, want 1", len(jobs))
					}
					if results {
						core.SetResult(jobs[0], json.RawMessage(`{"ok":true}`))
					}
					if _, err := b.Pool.Exec(b.Ctx, `UPDATE `+b.Table("docket_jobs")+` SET cancel_requested_at = now() WHERE id = $1`, jobs[0].ID); err != nil {
						t.Fatal(err)
					}
					done, err := b.Q.Complete(b.Ctx, b.Pool, w, jobtest.RunsOf(jobs), time.Time{})
					if err != nil {
						t.Fatal(err)
					}
					if len(done) != 0 {
						t.Errorf("completed %v, want the run refused", done)
					}
					if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE id = $1 AND state = 'running'`, jobs[0].ID); n != 1 {
						t.Errorf("the job is gone from the running jobs, want it left for its cancellation")
					}
				})
			}
		}
	}
}
