package relay_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
	"github.com/jackc/pgx/v5/pgconn"
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
	r, s, bad, after := blockedKey(t, b, 30*time.Second)
	if _, err := b.client.ReplayDeadEvents(b.ctx, b.pool, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "the replayed key published", func() bool { return r.Stats().Published == 7 })
	if k1 := s.idsOf("k1"); len(k1) != 2 || k1[0] != bad || k1[1] != after {
		t.Fatalf("key k1 delivered %v, want %s then %s", k1, bad, after)
	}
}

// blockedKey starts a relay with lease on b whose publisher refuses topic
// "bad" for good, dead-letters an event of key k1 that holds back the
// key's next event, and publishes five events of key k2 until the fetch
// floor is past the held-back one. It returns the relay, its sink (which
// refuses nothing from then on) and the ids of the dead letter and of the
// event it holds back.
func blockedKey(t *testing.T, b *bundle, lease time.Duration) (r *relay.Relay, s *sink, bad, held string) {
	t.Helper()
	s = &sink{}
	s.setRefuse(func(m relay.Message) error {
		if m.Topic == "bad" {
			return relay.Permanent(errors.New("message too large"))
		}
		return nil
	})
	r = b.start(t, relay.Config{Publisher: s, MaxAttempts: 1, LeaseTTL: lease})
	bad = b.publishOne(t, outbox.Message{Topic: "bad", Key: "k1"})
	held = b.publishOne(t, outbox.Message{Topic: "good", Key: "k1"})
	heldID, _ := strconv.ParseInt(held, 10, 64)
	waitFor(t, 10*time.Second, "the dead letter", func() bool { return r.Stats().DeadLettered == 1 })
	for range 5 {
		b.publishOne(t, outbox.Message{Topic: "good", Key: "k2"})
	}
	waitFor(t, 10*time.Second, "the floor past the held-back event", func() bool { return relay.Floor(r) > heldID })
	s.setRefuse(nil)
	return r, s, bad, held
}

// idsOf returns the ids of the messages of key published so far, in the
// order they were published.
func (s *sink) idsOf(key string) []string {
	var ids []string
	for _, m := range s.messages() {
		if m.Key == key {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// heldNotify is a DB whose announcement of a replay waits until release
// is closed; committed says the replay's own statement has committed.
type heldNotify struct {
	outbox.DB
	committed, release chan struct{}
}

func (h heldNotify) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if sql == pgsql.NotifyReplay {
		close(h.committed)
		<-h.release
	}
	return h.DB.Exec(ctx, sql, args...)
}

// TestReplayBeforeAnnounced: a dead letter's replay (or purge) has
// committed but its announcement has not reached the relay, which still
// fetches from a floor above the dead letter and the event it held back.
// The key is no longer blocked, so a later event of the key, above the
// floor, can be fetched at once; it must still not be published before
// the events of its key below the floor.
func TestReplayBeforeAnnounced(t *testing.T) {
	t.Parallel()
	for _, purge := range []bool{false, true} {
		name := map[bool]string{false: "replay", true: "purge"}[purge]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			// A long lease: no renewal takes the relay back to no floor meanwhile.
			r, s, bad, held := blockedKey(t, b, 60*time.Second)

			db := heldNotify{DB: b.pool, committed: make(chan struct{}), release: make(chan struct{})}
			done := make(chan error, 1)
			go func() {
				op := b.client.ReplayDeadEvents
				if purge {
					op = b.client.PurgeDeadEvents
				}
				_, err := op(b.ctx, db, nil)
				done <- err
			}()
			<-db.committed
			// The operation is committed, its announcement held: a later
			// event of the key, then one of another key. Once the latter
			// is published, a fetch that saw both the operation and the
			// later event has run.
			later := b.publishOne(t, outbox.Message{Topic: "good", Key: "k1"})
			marker := b.publishOne(t, outbox.Message{Topic: "good", Key: "k2"})
			waitFor(t, 10*time.Second, "an event committed after the "+name+" published", func() bool {
				for _, m := range s.messages() {
					if m.ID == marker {
						return true
					}
				}
				return false
			})
			close(db.release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			want := []string{bad, held, later}
			if purge {
				want = want[1:]
			}
			waitFor(t, 10*time.Second, "every event published", func() bool { return r.Stats().Published == uint64(6+len(want)) })
			if k1 := s.idsOf("k1"); !slices.Equal(k1, want) {
				t.Fatalf("key k1 delivered %v, want %v", k1, want)
			}
		})
	}
}
