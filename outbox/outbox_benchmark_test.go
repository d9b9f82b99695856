package outbox_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/docketq/docket/internal/pgtest"
	"github.com/docketq/docket/outbox"
	"github.com/google/uuid"
)

func benchSetup(b *testing.B, cfg outbox.Config) *bundle {
	b.Helper()
	return newBundle(b, pgtest.PoolN(b, 4), cfg)
}

func BenchmarkEnqueueOne(b *testing.B) {
	s := benchSetup(b, outbox.Config{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.client.Enqueue(s.ctx, s.pool, noop{N: 1}, outbox.Opts{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEnqueueManyCopy1000(b *testing.B) {
	s := benchSetup(b, outbox.Config{})
	items := make([]outbox.Item, 1000)
	for i := range items {
		items[i] = outbox.Item{Args: noop{N: i}}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.client.EnqueueMany(s.ctx, s.pool, items); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(items))/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkClaimComplete100 runs the worker runtime's hot cycle, a claim of
// 100 jobs and the completion of that batch, timing one half at a time:
// "claim" times the claims, "complete" the completions with history on and
// off.
func BenchmarkClaimComplete100(b *testing.B) {
	b.Run("claim", func(b *testing.B) { claimCompleteCycle(b, true, true) })
	b.Run("complete/history=on", func(b *testing.B) { claimCompleteCycle(b, true, false) })
	b.Run("complete/history=off", func(b *testing.B) { claimCompleteCycle(b, false, false) })
}

func claimCompleteCycle(b *testing.B, history, timeClaim bool) {
	s := benchSetup(b, outbox.Config{DisableHistory: !history})
	items := make([]outbox.Item, 1000)
	for i := range items {
		items[i] = outbox.Item{Args: noop{N: i}}
	}
	w := uuid.New()
	params := outbox.ClaimParams{Worker: w, Queues: []string{"default"}, Kinds: []string{"noop"}, Limit: 100, Lease: time.Minute}
	runs := make([]outbox.Run, 0, 100)
	// timed runs fn with the timer on only for the half being measured.
	timed := func(on bool, fn func()) {
		if !on {
			b.StopTimer()
			defer b.StartTimer()
		}
		fn()
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%10 == 0 {
			timed(false, func() {
				if _, err := s.client.EnqueueMany(s.ctx, s.pool, items); err != nil {
					b.Fatal(err)
				}
			})
		}
		timed(timeClaim, func() {
			jobs, err := s.client.Claim(s.ctx, s.pool, params)
			if err != nil || len(jobs) != 100 {
				b.Fatalf("claimed %d: %v", len(jobs), err)
			}
			runs = runs[:0]
			for _, j := range jobs {
				runs = append(runs, outbox.RunOf(j))
			}
		})
		timed(!timeClaim, func() {
			if _, err := s.client.Complete(s.ctx, s.pool, w, runs, time.Time{}); err != nil {
				b.Fatal(err)
			}
		})
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "jobs/s")
}

func BenchmarkEncodeDecode(b *testing.B) {
	type receipt struct {
		OrderID int64    `json:"order_id"`
		Email   string   `json:"email"`
		Lines   []string `json:"lines"`
	}
	v := receipt{OrderID: 42, Email: "a@example.com", Lines: []string{"x", "y", "z"}}
	b.ReportAllocs()
	for b.Loop() {
		raw, err := json.Marshal(v)
		if err != nil {
			b.Fatal(err)
		}
		var out receipt
		if err := json.Unmarshal(raw, &out); err != nil {
			b.Fatal(err)
		}
	}
}
