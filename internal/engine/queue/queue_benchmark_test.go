package queue_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/google/uuid"
)

func benchSetup(b *testing.B, cfg queue.Config) *bundle {
	b.Helper()
	return newBundle(b, pgtest.PoolN(b, 4), cfg)
}

// BenchmarkClaimComplete100 runs the worker runtime's hot cycle, a claim of
// 100 jobs and the completion of that batch, timing one half at a time:
// "claim" times the claims, "complete" the completions with history on and
// off.
func BenchmarkClaimComplete100(b *testing.B) {
	b.Run("claim", func(b *testing.B) { claimCompleteCycle(b, queue.Config{}, 0, true) })
	b.Run("complete/history=on", func(b *testing.B) { claimCompleteCycle(b, queue.Config{}, 0, false) })
	b.Run("complete/history=off", func(b *testing.B) { claimCompleteCycle(b, queue.Config{DisableHistory: true}, 0, false) })
}

// BenchmarkSerialClaimComplete100 is BenchmarkClaimComplete100 (history
// on) for jobs spread over 1,000 serial keys, the serial bench's backlog: a
// claim of 100 ready heads, then their completion, which makes the next job
// of each key ready.
func BenchmarkSerialClaimComplete100(b *testing.B) {
	b.Run("claim", func(b *testing.B) { claimCompleteCycle(b, queue.Config{}, 1000, true) })
	b.Run("complete", func(b *testing.B) { claimCompleteCycle(b, queue.Config{}, 1000, false) })
}

// claimCompleteCycle claims 100 jobs and completes them, over and over,
// timing the claims (timeClaim) or the completions. With keys, the jobs
// are spread round robin over that many serial keys, and the backlog is
// kept deep enough for 100 ready heads.
func claimCompleteCycle(b *testing.B, cfg queue.Config, keys int, timeClaim bool) {
	s := benchSetup(b, cfg)
	fill, low := 1000, 100
	if keys > 0 {
		fill, low = 5000, 2000
	}
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
	// timed runs fn with the timer on only for the half being measured.
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
		if left < low {
			timed(false, func() {
				if _, err := s.Jobs.EnqueueMany(s.Ctx, s.Pool, items); err != nil {
					b.Fatal(err)
				}
				if keys == 0 {
					return
				}
				// Statistics of the fill, as the serial bench takes them
				// after its own.
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

// BenchmarkClaimFail100 times the failure half of a failure-heavy cycle: a
// claim of 100 jobs (not timed), then one Fail of the batch. Jobs have 5
// attempts, so of every 5 failures 4 are retried and 1 dead-letters; each
// writes its run to the job's attempt history.
func BenchmarkClaimFail100(b *testing.B) {
	s := benchSetup(b, queue.Config{})
	items := make([]enqueue.Item, 1000)
	for i := range items {
		items[i] = enqueue.Item{Args: noop{N: i}, Opts: enqueue.Opts{MaxAttempts: 5}}
	}
	w := uuid.New()
	params := queue.ClaimParams{Worker: w, Queues: []string{"default"}, Kinds: []string{"noop"}, Limit: 100, Lease: time.Minute}
	fails := make([]queue.Failure, 0, 100)
	errText := "upstream: 503 service unavailable (retry later); request id 4f1c2a9e"
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		jobs, err := s.Q.Claim(s.Ctx, s.Pool, params)
		if err == nil && len(jobs) < 100 {
			if _, err = s.Jobs.EnqueueMany(s.Ctx, s.Pool, items); err == nil {
				more, cerr := s.Q.Claim(s.Ctx, s.Pool, queue.ClaimParams{Worker: w, Queues: []string{"default"},
					Kinds: []string{"noop"}, Limit: 100 - len(jobs), Lease: time.Minute})
				jobs, err = append(jobs, more...), cerr
			}
		}
		if err != nil || len(jobs) != 100 {
			b.Fatalf("claimed %d: %v", len(jobs), err)
		}
		fails = fails[:0]
		for _, j := range jobs {
			fails = append(fails, queue.Failure{Run: queue.RunOf(j), Error: errText})
		}
		b.StartTimer()
		if _, err := s.Q.Fail(s.Ctx, s.Pool, w, fails); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "jobs/s")
}
