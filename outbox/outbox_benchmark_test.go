package outbox_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/docketq/docket/internal/pgtest"
	"github.com/docketq/docket/outbox"
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

// BenchmarkPublishMany1000 publishes 1,000 events in one call, half of them
// keyed (100 keys), the other half unordered.
func BenchmarkPublishMany1000(b *testing.B) {
	s := benchSetup(b, outbox.Config{})
	msgs := make([]outbox.Message, 1000)
	for i := range msgs {
		msgs[i] = outbox.Message{Topic: "orders.created", Payload: []byte(`{"order":1}`)}
		if i%2 == 0 {
			msgs[i].Key = fmt.Sprintf("order-%d", i%100)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.client.PublishMany(s.ctx, s.pool, msgs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(msgs))/b.Elapsed().Seconds(), "events/s")
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
