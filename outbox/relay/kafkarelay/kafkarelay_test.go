package kafkarelay_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
	"github.com/docketq/docket/outbox/relay/kafkarelay"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// No Kafka server can be installed on this project's machines: these tests
// run against franz-go's kfake, a Kafka wire-protocol cluster in the test
// process.
func cluster(t *testing.T, topics ...string) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// consume reads n records of topic from the start.
func consume(t *testing.T, c *kfake.Cluster, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d records read from %s", len(out), n, topic)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// Records carry the event key as record key (one partition per key, in
// publish order), the id in Docket-Id and the event's headers; a record
// over the producer's size limit is refused for good; a cluster that is
// gone is a transient failure.
func TestPublish(t *testing.T) {
	c := cluster(t, "orders")
	p, err := kafkarelay.New(kafkarelay.Config{Brokers: c.ListenAddrs(), Topics: map[string]string{"legacy": "orders"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var msgs []relay.Message
	for i := range 30 {
		key := fmt.Sprintf("k%d", i%3)
		msgs = append(msgs, relay.Message{ID: fmt.Sprint(100 + i), Topic: "orders", Key: key, Payload: []byte(fmt.Sprintf(`{"n":%d}`, i)),
			Headers: map[string]string{relay.HeaderKey: key, relay.HeaderSeq: fmt.Sprint(i/3 + 1), "traceparent": "00-x"}})
	}
	msgs = append(msgs, relay.Message{ID: "200", Topic: "legacy", Payload: []byte("{}")})
	for i, err := range p.Publish(t.Context(), msgs) {
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	records := consume(t, c, "orders", len(msgs))
	partition := map[string]int32{}
	seq := map[string]int{}
	ids := map[string]bool{}
	for _, r := range records {
		ids[header(r, kafkarelay.HeaderID)] = true
		if len(r.Key) == 0 {
			continue
		}
		key := string(r.Key)
		if p, ok := partition[key]; ok && p != r.Partition {
			t.Errorf("key %s on partitions %d and %d", key, p, r.Partition)
		}
		partition[key] = r.Partition
		n, _ := strconv.Atoi(header(r, relay.HeaderSeq))
		if n != seq[key]+1 || header(r, "traceparent") != "00-x" {
			t.Errorf("key %s: seq %d after %d, headers %v", key, n, seq[key], r.Headers)
		}
		seq[key] = n
	}
	if len(ids) != len(msgs) {
		t.Errorf("%d distinct Docket-Id headers for %d messages", len(ids), len(msgs))
	}

	big := relay.Message{ID: "300", Topic: "orders", Payload: make([]byte, 2<<20)}
	if errs := p.Publish(t.Context(), []relay.Message{big}); !relay.IsPermanent(errs[0]) {
		t.Errorf("a record over the size limit: %v, want a permanent refusal", errs[0])
	}

	c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if errs := p.Publish(ctx, []relay.Message{{ID: "400", Topic: "orders"}}); errs[0] == nil || relay.IsPermanent(errs[0]) {
		t.Errorf("cluster gone: %v, want a transient error", errs[0])
	}
}

// End to end through the relay: events of committed transactions reach the
// topic, each key in commit order, those of a rolled-back one never.
func TestRelayToKafka(t *testing.T) {
	c := cluster(t, "orders.placed")
	ctx := t.Context()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t)
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	client, err := outbox.New(outbox.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	committed := map[string]bool{}
	for round := range 20 {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for k := range 3 {
			p, err := client.Publish(ctx, tx, outbox.Message{Topic: "orders.placed", Key: fmt.Sprintf("order-%d", k)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, fmt.Sprint(p.ID))
		}
		if round%5 == 4 {
			_ = tx.Rollback(ctx)
			continue
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			committed[id] = true
		}
	}
	p, err := kafkarelay.New(kafkarelay.Config{Brokers: c.ListenAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	r, err := relay.New(pool, relay.Config{Schema: schema, Publisher: p, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer r.Stop(context.Background())
	records := consume(t, c, "orders.placed", len(committed))
	seq := map[string]int{}
	for _, rec := range records {
		id := header(rec, kafkarelay.HeaderID)
		if !committed[id] {
			t.Fatalf("record %s: no committed transaction published it", id)
		}
		n, _ := strconv.Atoi(header(rec, relay.HeaderSeq))
		key := string(rec.Key)
		if n <= seq[key] || !strings.HasPrefix(key, "order-") {
			t.Errorf("key %q: seq %d after %d", key, n, seq[key])
		}
		seq[key] = n
	}
}
