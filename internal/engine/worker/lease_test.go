package worker

import (
	"context"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/enqueue"
)

// A handler that runs 2.5 times longer than the lease, with heartbeats,
// runs once, although another worker reaps and claims all the while. The
// lease is 4 s, not shorter: the watchdog gives a run up when no heartbeat
// is confirmed within 0.9 of a lease, and with other packages' tests
// loading the machine a statement can take over a second.
func TestHeartbeatKeepsSlowJobFromRunningTwice(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	runs := newCounter()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		runs.add(j.ID)
		select {
		case <-time.After(10 * time.Second):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}, handlers.KindOpts{})
	cfg := Config{Lease: 4 * time.Second, PollInterval: 50 * time.Millisecond}
	e.worker(reg, cfg)
	e.worker(reg, cfg)
	id := e.enqueue(testArgs{}, enqueue.Opts{})
	e.waitWhere(id, "done", 40*time.Second)
	if n := runs.get(id); n != 1 {
		t.Errorf("slow job ran %d times, want 1", n)
	}
	if n := e.count(`SELECT attempts FROM {{schema}}.docket_jobs_done WHERE id = $1`, id); n != 1 {
		t.Errorf("attempts %d, want 1", n)
	}
}
