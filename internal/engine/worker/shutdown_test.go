package worker

import (
	"context"
	"errors"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/testkit/pgtest"
)

type stopArgs struct {
	Block bool // wait for the context instead of finishing
}

func (stopArgs) Kind() string { return "stop" }

// With jobs in flight, Stop lets quick handlers finish, cancels and releases
// the ones still running at the deadline and the ones not started, and
// returns within the deadline with nothing left running.
func TestStopFinishesOrReleasesInFlightJobs(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	var running, finished, cancelled atomic.Int64
	// Quick handlers hold until shutdown begins, so that exactly the pool's
	// 10 slots are busy when it does, however slowly the machine runs them.
	stopping := make(chan struct{})
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[stopArgs]) error {
		running.Add(1)
		if j.Args.Block {
			<-ctx.Done()
			if errors.Is(context.Cause(ctx), core.ErrShutdown) {
				cancelled.Add(1)
			}
			return ctx.Err()
		}
		select {
		case <-stopping:
		case <-ctx.Done(): // the test failed before shutdown
			return ctx.Err()
		}
		time.Sleep(300 * time.Millisecond)
		finished.Add(1)
		return nil
	}, handlers.KindOpts{})
	var quick, blocked []int64
	for i := range 10 {
		id := e.enqueue(stopArgs{Block: i%2 == 0}, enqueue.Opts{})
		if i%2 == 0 {
			blocked = append(blocked, id)
		} else {
			quick = append(quick, id)
		}
	}
	// 10 more than the pool's slots, behind the first 10: never claimed.
	for range 10 {
		e.enqueue(stopArgs{Block: true}, enqueue.Opts{})
	}
	const timeout = time.Second
	w := e.worker(reg, Config{
		Pools:           []PoolConfig{{Queues: []string{"default"}, Concurrency: 10}},
		ShutdownTimeout: timeout,
	})
	waitFor(t, 20*time.Second, "10 handlers running", func() bool { return running.Load() == 10 })
	close(stopping)
	start := time.Now()
	if err := w.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("Stop took %s (ShutdownTimeout %s)", took, timeout)
	if took > timeout+500*time.Millisecond {
		t.Errorf("Stop took %s, want within the %s deadline", took, timeout)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE state = 'running'`); n != 0 {
		t.Errorf("%d jobs still running after Stop", n)
	}
	for _, id := range quick {
		if s := e.where(id); s != "done" {
			t.Errorf("quick job %d is %s, want done", id, s)
		}
	}
	if n := finished.Load(); n != int64(len(quick)) {
		t.Errorf("%d quick handlers finished, want %d", n, len(quick))
	}
	for _, id := range blocked {
		if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE id = $1 AND state = 'ready' AND attempts = 0`, id); n != 1 {
			t.Errorf("blocked job %d is %s, want ready with its attempt given back", id, e.where(id))
		}
	}
	if cancelled.Load() != int64(len(blocked)) {
		t.Errorf("%d handlers saw core.ErrShutdown, want %d", cancelled.Load(), len(blocked))
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE state = 'ready'`); n != 15 {
		t.Errorf("%d jobs ready after Stop, want 15", n)
	}
	// Idempotent.
	if err := w.Stop(context.Background()); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// A worker process stops gracefully on SIGTERM: in-flight jobs finish or
// are released, and it exits within its shutdown deadline.
func TestSIGTERMStopsWorkerProcess(t *testing.T) {
	t.Parallel()
	e := setup(t, 4)
	createEffects(t, e.pool, e.schema)
	var blocked, quick []int64
	for i := range 8 {
		id := e.enqueue(blockArgs{Block: i%2 == 0}, enqueue.Opts{})
		if i%2 == 0 {
			blocked = append(blocked, id)
		} else {
			quick = append(quick, id)
		}
	}
	p := startProcess(t, pgtest.URL(t), e.schema, envConc+"=8", envGrace+"=3000", envSleep+"=500")
	// Handlers running, not just jobs claimed: a job claimed but not yet
	// started when shutdown begins is handed back without running.
	waitFor(t, 10*time.Second, "8 handlers running", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.effects WHERE kind = $1`, blockStarted) == 8
	})
	p.signal(syscall.SIGTERM)
	took, err := p.wait(10 * time.Second)
	t.Logf("worker process exited %s after SIGTERM (err %v)", took, err)
	if err != nil {
		t.Errorf("exit: %v", err)
	}
	if took > 4*time.Second {
		t.Errorf("took %s to exit, want within the 3s shutdown deadline (and a moment to exit)", took)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE state = 'running'`); n != 0 {
		t.Errorf("%d jobs still running", n)
	}
	for _, id := range quick {
		if s := e.where(id); s != "done" {
			t.Errorf("quick job %d is %s", id, s)
		}
	}
	for _, id := range blocked {
		if s := e.where(id); s != "ready" {
			t.Errorf("blocked job %d is %s, want ready (released)", id, s)
		}
	}
}
