package worker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/enqueue"
)

// BenchmarkDrain drains b.N no-op jobs through one worker and reports
// jobs/s. Enqueueing is not timed. The database does most of the work; the
// numbers say how close the runtime gets to it.
func BenchmarkDrain(b *testing.B) {
	for _, bc := range []struct {
		name        string
		history     bool
		concurrency int
	}{
		{"history/c100", true, 100},
		{"history/c400", true, 400},
		{"nohistory/c400", false, 400},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := setup(b, 16)
			reg := handlers.NewRegistry()
			handlers.MustRegister(reg, func(context.Context, *handlers.Job[testArgs]) error { return nil }, handlers.KindOpts{})
			items := make([]enqueue.Item, b.N)
			for i := range items {
				items[i] = enqueue.Item{Args: testArgs{N: i}}
			}
			for i := 0; i < len(items); i += 50_000 {
				if _, err := e.jobs.EnqueueMany(b.Context(), e.pool, items[i:min(i+50_000, len(items))]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			w := e.worker(reg, Config{DisableHistory: !bc.history,
				Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: bc.concurrency}}})
			for e.count(`SELECT count(*) FROM {{schema}}.docket_jobs`) > 0 {
				time.Sleep(2 * time.Millisecond)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
			_ = w.Stop(context.Background())
		})
	}
}

// BenchmarkSerialDrain drains b.N no-op jobs with three workers of 40 slots
// each (the shape of TestSerialKeysInOrderAcrossProcesses, in one
// process), once spread over 20 serial keys and once without keys, and
// reports jobs/s. Serial keys cost one hand-over per job: the next job of a
// key is made ready in the transaction that completes the previous one,
// and claimed from there.
func BenchmarkSerialDrain(b *testing.B) {
	for _, bc := range []struct {
		name string
		keys int
	}{
		{"keys20", 20},
		{"nokeys", 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := setup(b, 16)
			reg := handlers.NewRegistry()
			handlers.MustRegister(reg, func(context.Context, *handlers.Job[serialArgs]) error { return nil }, handlers.KindOpts{})
			items := make([]enqueue.Item, b.N)
			for i := range items {
				items[i] = enqueue.Item{Args: serialArgs{}}
				if bc.keys > 0 {
					key := fmt.Sprintf("k%02d", i%bc.keys)
					items[i] = enqueue.Item{Args: serialArgs{Key: key}, Opts: enqueue.Opts{SerialKey: key}}
				}
			}
			for i := 0; i < len(items); i += 50_000 {
				if _, err := e.jobs.EnqueueMany(b.Context(), e.pool, items[i:min(i+50_000, len(items))]); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			start := time.Now()
			var ws []*Worker
			for range 3 {
				ws = append(ws, e.worker(reg, Config{Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 40}}}))
			}
			for e.count(`SELECT count(*) FROM {{schema}}.docket_jobs`) > 0 {
				time.Sleep(2 * time.Millisecond)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
			for _, w := range ws {
				_ = w.Stop(context.Background())
			}
		})
	}
}
