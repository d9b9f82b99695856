package outbox_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/docketq/docket/internal/pgtest"
	"github.com/docketq/docket/outbox"
	"github.com/google/uuid"
)

func benchSetup(b *testing.B, cfg outbox.Config) *bundle {
	b.Helper()
	ctx := context.Background()
	pool := pgtest.PoolN(b, 4)
	cfg.Schema = pgtest.Schema(b)
	client, err := outbox.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	m, _ := outbox.NewMigrator(cfg.Schema)
	if _, err := m.Up(ctx, pool); err != nil {
		b.Fatal(err)
	}
	if err := client.EnsurePartitions(ctx, pool, time.Now(), 1); err != nil {
		b.Fatal(err)
	}
	return &bundle{ctx: ctx, pool: pool, schema: cfg.Schema, client: client}
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

// BenchmarkClaimComplete100 claims a batch of 100 and completes it: the
// worker runtime's hot cycle, with history on.
func BenchmarkClaimComplete100(b *testing.B) {
	for _, history := range []bool{true, false} {
		name := "history=on"
		if !history {
			name = "history=off"
		}
		b.Run(name, func(b *testing.B) {
			s := benchSetup(b, outbox.Config{DisableHistory: !history})
			items := make([]outbox.Item, 1000)
			for i := range items {
				items[i] = outbox.Item{Args: noop{N: i}}
			}
			w := uuid.New()
			params := outbox.ClaimParams{Worker: w, Queues: []string{"default"}, Kinds: []string{"noop"}, Limit: 100, Lease: time.Minute}
			ids := make([]int64, 0, 100)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i%10 == 0 {
					b.StopTimer()
					if _, err := s.client.EnqueueMany(s.ctx, s.pool, items); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				jobs, err := s.client.Claim(s.ctx, s.pool, params)
				if err != nil || len(jobs) != 100 {
					b.Fatalf("claimed %d: %v", len(jobs), err)
				}
				ids = ids[:0]
				for _, j := range jobs {
					ids = append(ids, j.ID)
				}
				if _, err := s.client.Complete(s.ctx, s.pool, w, ids); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
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
