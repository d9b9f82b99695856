package worker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/enqueue"
)

type tenantArgs struct{}

func (tenantArgs) Kind() string { return "tenant" }

// Tenant A floods 50,000 jobs, then tenant B enqueues 100. With a tenant
// cap, B's jobs all finish while more than half of A's still wait; without
// it, B waits behind A's whole flood.
func TestTenantCapStopsNoisyNeighbour(t *testing.T) {
	t.Parallel()
	const flood, small = 50_000, 100
	run := func(t *testing.T, tenantCap int) (doneA, doneB *atomic.Int64, e *env, w *Worker) {
		e = setup(t, 8)
		doneA, doneB = &atomic.Int64{}, &atomic.Int64{}
		reg := handlers.NewRegistry()
		handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[tenantArgs]) error {
			if j.Tenant == "b" {
				doneB.Add(1)
			} else {
				doneA.Add(1)
			}
			return nil
		}, handlers.KindOpts{})
		items := make([]enqueue.Item, flood)
		for i := range items {
			items[i] = enqueue.Item{Args: tenantArgs{}, Opts: enqueue.Opts{Tenant: "a"}}
		}
		if _, err := e.jobs.EnqueueMany(t.Context(), e.pool, items); err != nil {
			t.Fatal(err)
		}
		items = items[:small]
		for i := range items {
			items[i].Opts.Tenant = "b"
		}
		if _, err := e.jobs.EnqueueMany(t.Context(), e.pool, items); err != nil {
			t.Fatal(err)
		}
		w = e.worker(reg, Config{Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 20, TenantCap: tenantCap}}})
		return doneA, doneB, e, w
	}

	t.Run("capped", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		doneA, doneB, _, w := run(t, 5)
		waitFor(t, 60*time.Second, "all of B's jobs", func() bool { return doneB.Load() == small })
		a := doneA.Load()
		t.Logf("with cap: B's %d jobs done after %s, when A had done %d of %d", small, time.Since(start), a, flood)
		if waiting := flood - a; waiting <= flood/2 {
			t.Errorf("only %d of A's jobs still waiting when B finished, want more than half", waiting)
		}
		_ = w.Stop(context.Background())
	})
	t.Run("uncapped", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		doneA, doneB, _, w := run(t, 0)
		waitFor(t, 60*time.Second, "half of A's jobs", func() bool { return doneA.Load() >= flood/2 })
		b := doneB.Load()
		t.Logf("without cap: after %s A had done %d and B %d of %d: B starves", time.Since(start), doneA.Load(), b, small)
		if b != 0 {
			t.Errorf("B got %d jobs done behind A's flood without a cap; the test no longer shows starvation", b)
		}
		_ = w.Stop(context.Background())
	})
}
