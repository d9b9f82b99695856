package relay_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
)

// TestFloorWaitsForOpenTransaction: a transaction draws an event id, with
// no xid yet (as a batch publish does before it copies its rows), and
// stays open while later events are committed and published. The relay's
// fetch floor must not pass that id before the transaction ends, and the
// event is delivered once it commits; after that the floor passes every
// published event, so a caught-up fetch no longer walks their index
// entries.
func TestFloorWaitsForOpenTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := &sink{}
	// A long lease: no renewal takes the relay back to no floor meanwhile.
	r := b.start(t, relay.Config{Publisher: s, LeaseTTL: 30 * time.Second})

	tx, err := b.pool.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(b.ctx)
	var early int64
	if err := tx.QueryRow(b.ctx, `SELECT nextval('"`+b.schema+`".docket_events_id_seq')`).Scan(&early); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	var last int64
	for i := range 30 {
		id := b.publishOne(t, outbox.Message{Topic: "t", Key: "k" + strconv.Itoa(i%3)})
		want[id] = true
		last, _ = strconv.ParseInt(id, 10, 64)
	}
	waitFor(t, 10*time.Second, "the committed events published", func() bool { return r.Stats().Published == 30 })
	// Many rounds run (the relay polls every 5ms) while the transaction
	// stays open.
	time.Sleep(300 * time.Millisecond)
	if f := relay.Floor(r); f > early {
		t.Fatalf("floor %d passed id %d of a transaction still open", f, early)
	}
	if _, err := tx.Exec(b.ctx, `INSERT INTO "`+b.schema+`".docket_events (id, topic, part, payload) VALUES ($1, 't', 0, '')`, early); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	want[strconv.FormatInt(early, 10)] = true
	waitFor(t, 10*time.Second, "the late commit published", func() bool { return r.Stats().Published == 31 })
	checkOrder(t, s.messages(), want)
	waitFor(t, 10*time.Second, "the floor past the published events", func() bool { return relay.Floor(r) > last })
}

// TestReplayBelowFloor: the later events of a key held back by a dead
// letter are left behind by the fetch floor while other keys move on;
// replaying the dead letter takes the relay back to no floor at once (not
// at its next lease renewal), and the key is published in order.
func TestReplayBelowFloor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := &sink{}
	s.setRefuse(func(m relay.Message) error {
		if m.Topic == "bad" {
			return relay.Permanent(errors.New("message too large"))
		}
		return nil
	})
	r := b.start(t, relay.Config{Publisher: s, MaxAttempts: 1, LeaseTTL: 30 * time.Second})
	bad := b.publishOne(t, outbox.Message{Topic: "bad", Key: "k1"})
	after := b.publishOne(t, outbox.Message{Topic: "good", Key: "k1"})
	afterID, _ := strconv.ParseInt(after, 10, 64)
	waitFor(t, 10*time.Second, "the dead letter", func() bool { return r.Stats().DeadLettered == 1 })
	for range 5 {
		b.publishOne(t, outbox.Message{Topic: "good", Key: "k2"})
	}
	waitFor(t, 10*time.Second, "the floor past the held-back event", func() bool { return relay.Floor(r) > afterID })
	s.setRefuse(nil)
	if _, err := b.client.ReplayDeadEvents(b.ctx, b.pool, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "the replayed key published", func() bool { return r.Stats().Published == 7 })
	var k1 []string
	for _, m := range s.messages() {
		if m.Key == "k1" {
			k1 = append(k1, m.ID)
		}
	}
	if len(k1) != 2 || k1[0] != bad || k1[1] != after {
		t.Fatalf("key k1 delivered %v, want %s then %s", k1, bad, after)
	}
}
