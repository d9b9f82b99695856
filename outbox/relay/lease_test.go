package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
	"github.com/jackc/pgx/v5"
)

// TestThreeRelaysSettle: three relays split the 64 partitions between them
// (22, 21, 21) and then stop rebalancing: none stays short of its share,
// asking the others for partitions every 250ms.
func TestThreeRelaysSettle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := &sink{}
	var rs []*relay.Relay
	for range 3 {
		rs = append(rs, b.start(t, relay.Config{Publisher: s, LeaseTTL: 3 * time.Second}))
	}
	waitFor(t, 10*time.Second, "the partitions split 22/21/21", func() bool {
		n := 0
		for _, r := range rs {
			if p := r.Stats().Parts; p < 21 || p > 22 {
				return false
			}
			n += r.Stats().Parts
		}
		return n == 64
	})
	conn, err := pgx.ConnectConfig(b.ctx, b.pool.Config().ConnConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	c, _ := outbox.New(outbox.Config{Schema: b.schema})
	if _, err := conn.Exec(b.ctx, "LISTEN "+pgx.Identifier{c.EventChannel()}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	// Longer than a renewal (LeaseTTL/3) and many short checks.
	ctx, cancel := context.WithTimeout(b.ctx, 1500*time.Millisecond)
	defer cancel()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			break // the window ended
		}
		if n.Payload == "rebalance" {
			t.Fatalf("a relay still asks for a rebalance once the partitions are split")
		}
	}
	for _, r := range rs {
		if p := r.Stats().Parts; p < 21 || p > 22 {
			t.Errorf("a relay holds %d partitions, want 21 or 22", p)
		}
	}
}
