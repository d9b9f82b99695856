package docket_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/testkit/pgtest"
)

func benchSetup(b *testing.B, cfg docket.Config) *bundle {
	b.Helper()
	return newBundle(b, pgtest.PoolN(b, 4), cfg)
}

func BenchmarkEnqueueOne(b *testing.B) {
	s := benchSetup(b, docket.Config{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.client.Enqueue(s.Ctx, s.Pool, noop{N: 1}, docket.Opts{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEnqueueManyCopy1000(b *testing.B) {
	s := benchSetup(b, docket.Config{})
	items := make([]docket.Item, 1000)
	for i := range items {
		items[i] = docket.Item{Args: noop{N: i}}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.client.EnqueueMany(s.Ctx, s.Pool, items); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(items))/b.Elapsed().Seconds(), "jobs/s")
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

// receipt is a typical small job: a few fields, a short list.
type receipt struct {
	OrderID int64    `json:"order_id"`
	Email   string   `json:"email"`
	Total   float64  `json:"total"`
	Lines   []string `json:"lines"`
}

func (receipt) Kind() string { return "receipt" }

// BenchmarkValidate is the work every enqueue does before it sends
// anything: resolving options, encoding the payload and checking that
// PostgreSQL can store it.
func BenchmarkValidate(b *testing.B) {
	for _, bc := range []struct {
		name string
		args receipt
	}{
		{"small", receipt{OrderID: 42, Email: "a@example.com", Total: 19.99, Lines: []string{"x", "y", "z"}}},
		{"64KiB", receipt{OrderID: 42, Email: "a@example.com", Total: 19.99, Lines: bigLines(64 << 10)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			opts := docket.Opts{Queue: "mail", Meta: map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
			b.ReportAllocs()
			for b.Loop() {
				if err := docket.Validate(bc.args, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// bigLines returns lines of text, numbers and escapes adding up to about n
// bytes of JSON.
func bigLines(n int) []string {
	var lines []string
	for size := 0; size < n; {
		l := fmt.Sprintf("line %d: 3 × widget <b>\"blue\"</b>\tat 19.99 €", len(lines))
		lines = append(lines, l)
		size += len(l) + 10
	}
	return lines
}
