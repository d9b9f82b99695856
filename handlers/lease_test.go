package handlers

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/docketq/docket/internal/pgtest"
	"github.com/docketq/docket/outbox"
	"github.com/google/uuid"
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

// A worker process frozen (SIGSTOP) past its lease loses its job to another
// worker; when it resumes, its late outcome changes nothing.
func TestFrozenWorkerLosesJobAndItsLateOutcomeIsDropped(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	createEffects(t, e.pool, e.schema)
	const lease = time.Second
	// The frozen worker's handler records its run, then sleeps 3s ignoring
	// its context, then returns nil: an outcome that must be dropped.
	frozen := startProcess(t, pgtest.URL(t), e.schema, envLease+"="+strconv.Itoa(int(lease.Milliseconds())), envSleep+"=3000")
	id := e.enqueue(slowArgs{}, outbox.Opts{})
	waitFor(t, 10*time.Second, "the process to run the job", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.effects WHERE job_id = $1 AND worker = $2`, id, frozen.id) == 1
	})
	frozen.signal(syscall.SIGSTOP)
	stoppedAt := time.Now()

	// Another worker reaps the expired lease and runs the job again; its
	// handler records its run and returns at once.
	id2 := uuid.New()
	me := id2.String()
	reg := NewRegistry()
	registerProcessKinds(reg, e.pool, e.schema, &me, 0)
	e.worker(reg, Config{ID: id2, Lease: lease, PollInterval: 50 * time.Millisecond})
	e.waitWhere(id, "done", 10*time.Second)
	t.Logf("job taken over %s after the freeze", time.Since(stoppedAt))

	frozen.signal(syscall.SIGCONT)
	waitFor(t, 10*time.Second, "the resumed process to drop its outcome", func() bool {
		return frozen.stderr.contains(`"msg":"job lost`) || frozen.stderr.contains(`"msg":"outcome dropped`)
	})
	waitFor(t, 10*time.Second, "the resumed handler to return", func() bool {
		return frozen.stderr.contains(`"msg":"outcome dropped`)
	})
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done WHERE id = $1`, id); n != 1 {
		t.Errorf("job finished %d times", n)
	}
	if n := e.count(`SELECT attempts FROM {{schema}}.docket_jobs_done WHERE id = $1`, id); n != 2 {
		t.Errorf("finished with attempts %d, want 2 (the other worker's run)", n)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_dead`); n != 0 {
		t.Errorf("%d dead jobs", n)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.effects WHERE job_id = $1 AND worker = $2 AND attempt = 2`, id, me); n != 1 {
		t.Errorf("the other worker's run was not recorded")
	}
}
