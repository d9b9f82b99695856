package handlers

import (
	"context"
	"testing"
	"time"

	"github.com/docketq/docket/outbox"
)

// A handler that runs 2.5 times longer than the lease, with heartbeats,
// runs once, although another worker reaps and claims all the while.
func TestHeartbeatKeepsSlowJobFromRunningTwice(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	runs := newCounter()
	reg := NewRegistry()
	MustRegister(reg, func(ctx context.Context, j *Job[testArgs]) error {
		runs.add(j.ID)
		select {
		case <-time.After(5 * time.Second):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}, KindOpts{})
	cfg := Config{Lease: 2 * time.Second, PollInterval: 50 * time.Millisecond}
	e.worker(reg, cfg)
	e.worker(reg, cfg)
	id := e.enqueue(testArgs{}, outbox.Opts{})
	e.waitWhere(id, "done", 15*time.Second)
	if n := runs.get(id); n != 1 {
		t.Errorf("slow job ran %d times, want 1", n)
	}
	if n := e.count(`SELECT attempts FROM {{schema}}.docket_jobs_done WHERE id = $1`, id); n != 1 {
		t.Errorf("attempts %d, want 1", n)
	}
}
