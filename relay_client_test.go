package docket_test

import (
	"context"
	"sync"
	"testing"
	"time"

	docket "github.com/docketq/docket"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
)

// recorder is a Publisher that acknowledges everything and keeps the ids.
type recorder struct {
	mu  sync.Mutex
	ids []string
}

func (r *recorder) Publish(_ context.Context, msgs []relay.Message) []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		r.ids = append(r.ids, m.ID)
	}
	return make([]error, len(msgs))
}

func (r *recorder) Close() error { return nil }

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ids)
}

// TestClientRunsRelay: Config.Relay runs a relay in the client's process,
// on the client's schema, from Start to Stop; a Relay.Schema that is not
// the client's is refused.
func TestClientRunsRelay(t *testing.T) {
	t.Parallel()
	pool, schema := migrated(t)
	rec := &recorder{}
	if _, err := docket.NewClient(pool, docket.Config{Schema: schema,
		Relay: &relay.Config{Publisher: rec, Schema: "other"}}); err == nil {
		t.Fatal("NewClient accepted a Relay.Schema other than its own")
	}
	c, err := docket.NewClient(pool, docket.Config{Schema: schema,
		Relay: &relay.Config{Publisher: rec, PollInterval: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.Outbox().Publish(t.Context(), pool, outbox.Message{Topic: "t", Key: "k"}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for rec.count() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("relay delivered %d of 3 events", rec.count())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := count(t, pool, `SELECT count(*) FROM "`+schema+`".docket_relays`); n != 0 {
		t.Fatalf("%d relays registered after Stop, want 0", n)
	}
}
