package outbox_test

import (
	"fmt"
	"testing"

	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/outbox"
)

func benchSetup(b *testing.B, cfg outbox.Config) *bundle {
	b.Helper()
	return newBundle(b, pgtest.PoolN(b, 4), cfg)
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
