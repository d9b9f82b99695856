package queue_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/google/uuid"
)

// BenchmarkSerialClaimComplete100 is BenchmarkClaimComplete100 for jobs
// spread over 1,000 serial keys, the serial bench's backlog: a claim of
// 100 ready heads, then their completion, which makes the next job of each
// key ready. "claim" times the claims, "complete" the completions; keys=0
// is the same cycle without keys, for comparison.
func BenchmarkSerialClaimComplete100(b *testing.B) {
	for _, keys := range []int{0, 1000} {
		b.Run(fmt.Sprintf("keys=%d/claim", keys), func(b *testing.B) { serialCycle(b, keys, true) })
		b.Run(fmt.Sprintf("keys=%d/complete", keys), func(b *testing.B) { serialCycle(b, keys, false) })
	}
}

func serialCycle(b *testing.B, keys int, timeClaim bool) {
	s := benchSetup(b, queue.Config{})
	const fill = 5000
	items := make([]enqueue.Item, fill)
	for i := range items {
		items[i] = enqueue.Item{Args: noop{N: i}}
		if keys > 0 {
			items[i].Opts.SerialKey = fmt.Sprintf("k%d", i%keys)
		}
	}
	w := uuid.New()
	params := queue.ClaimParams{Worker: w, Queues: []string{"default"}, Kinds: []string{"noop"}, Limit: 100, Lease: time.Minute}
	runs := make([]queue.Run, 0, 100)
	timed := func(on bool, fn func()) {
		if !on {
			b.StopTimer()
			defer b.StartTimer()
		}
		fn()
	}
	b.ReportAllocs()
	left := 0
	for b.Loop() {
		if left < 2000 {
			timed(false, func() {
				if _, err := s.Jobs.EnqueueMany(s.Ctx, s.Pool, items); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Pool.Exec(s.Ctx, `ANALYZE `+s.Table("docket_jobs")); err != nil {
					b.Fatal(err)
				}
			})
			left += fill
		}
		timed(timeClaim, func() {
			jobs, err := s.Q.Claim(s.Ctx, s.Pool, params)
			if err != nil || len(jobs) != 100 {
				b.Fatalf("claimed %d: %v", len(jobs), err)
			}
			runs = runs[:0]
			for _, j := range jobs {
				runs = append(runs, queue.RunOf(j))
			}
		})
		timed(!timeClaim, func() {
			if _, err := s.Q.Complete(s.Ctx, s.Pool, w, runs, time.Time{}); err != nil {
				b.Fatal(err)
			}
		})
		left -= 100
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "jobs/s")
}
