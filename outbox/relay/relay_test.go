package relay_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// checkOrder asserts that msgs, de-duplicated by id (first copy kept), hold
// exactly the ids of want, and that each key's messages come in sequence
// 1, 2, 3, ... It returns the de-duplicated count.
func checkOrder(t *testing.T, msgs []relay.Message, want map[string]bool) {
	t.Helper()
	seen := map[string]bool{}
	lastSeq := map[string]int64{}
	for _, m := range msgs {
		if seen[m.ID] {
			continue
		}
		seen[m.ID] = true
		if !want[m.ID] {
			t.Errorf("message %s was delivered but never committed", m.ID)
		}
		if m.Key == "" {
			continue
		}
		seq, err := strconv.ParseInt(m.Headers[relay.HeaderSeq], 10, 64)
		if err != nil {
			t.Fatalf("message %s: seq header %q", m.ID, m.Headers[relay.HeaderSeq])
		}
		if seq != lastSeq[m.Key]+1 {
			t.Errorf("key %s: seq %d after %d", m.Key, seq, lastSeq[m.Key])
		}
		lastSeq[m.Key] = seq
	}
	for id := range want {
		if !seen[id] {
			t.Errorf("committed message %s was never delivered", id)
		}
	}
}

// TestRelaysKeepKeyOrder publishes from concurrent producer transactions,
// some rolled back, while two relays run, and checks that every committed
// event and none of the rolled-back ones is delivered, each key in order.
func TestRelaysKeepKeyOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := &sink{}
	b.start(t, relay.Config{Publisher: s, BatchSize: 50, LeaseTTL: time.Second})
	b.start(t, relay.Config{Publisher: s, BatchSize: 50, LeaseTTL: time.Second})

	var mu sync.Mutex
	committed := map[string]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for p := range 4 {
		wg.Go(func() {
			for tx := range 25 {
				var ids []string
				err := pgx.BeginFunc(b.ctx, b.pool, func(dbtx pgx.Tx) error {
					// Keys in one order in every transaction: each keyed
					// Publish holds its key's lock until commit.
					for i := range 10 {
						m := outbox.Message{Topic: "orders", Key: fmt.Sprintf("k%d", i), Payload: []byte(strconv.Itoa(p))}
						if i%4 == 3 {
							m.Key = "" // some keyless
						}
						pub, err := b.client.Publish(b.ctx, dbtx, m)
						if err != nil {
							return err
						}
						ids = append(ids, strconv.FormatInt(pub.ID, 10))
					}
					if tx%5 == 4 {
						return errRollback
					}
					return nil
				})
				if errors.Is(err, errRollback) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, id := range ids {
					committed[id] = true
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(committed) != 4*20*10 {
		t.Fatalf("committed %d events, want %d", len(committed), 4*20*10)
	}
	waitFor(t, 20*time.Second, "every committed event delivered", func() bool {
		st, err := b.client.EventStatus(b.ctx, b.pool)
		var published int
		if err == nil {
			err = b.pool.QueryRow(b.ctx, `SELECT count(*) FROM "`+b.schema+`".docket_events WHERE published_at IS NOT NULL`).Scan(&published)
		}
		return err == nil && st.Pending == 0 && published == len(committed)
	})
	checkOrder(t, s.messages(), committed)
}

var errRollback = errors.New("rollback on purpose")

// TestFullRoundsPublishOnce drains a committed backlog in many full
// rounds, each fetching the next batch while it publishes, and checks that
// no event is published twice when nothing fails: the fetch ahead must
// leave out the events in flight.
func TestFullRoundsPublishOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	msgs := make([]outbox.Message, 600)
	for i := range msgs {
		msgs[i] = outbox.Message{Topic: "orders", Key: "k" + strconv.Itoa(i%40), Payload: []byte("x")}
	}
	pubs, err := b.client.PublishMany(b.ctx, b.pool, msgs)
	if err != nil {
		t.Fatal(err)
	}
	committed := map[string]bool{}
	for _, p := range pubs {
		committed[strconv.FormatInt(p.ID, 10)] = true
	}
	s := &sink{}
	b.start(t, relay.Config{Publisher: s, BatchSize: 20})
	waitFor(t, 20*time.Second, "every event marked published", func() bool {
		var published int
		err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM "`+b.schema+`".docket_events WHERE published_at IS NOT NULL`).Scan(&published)
		return err == nil && published == len(msgs)
	})
	got := s.messages()
	seen := map[string]int{}
	for _, m := range got {
		seen[m.ID]++
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("event %s published %d times", id, n)
		}
	}
	checkOrder(t, got, committed)
}

// publishOne publishes m in a transaction of its own and returns its id.
func (b *bundle) publishOne(t *testing.T, m outbox.Message) string {
	t.Helper()
	p, err := b.client.Publish(b.ctx, b.pool, m)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatInt(p.ID, 10)
}

// TestDeadLetterBlocksKey: a message the broker refuses permanently becomes
// a dead letter after MaxAttempts and holds back the later messages of its
// key, while other keys proceed; replaying it (once the broker accepts it)
// publishes the key in order.
func TestDeadLetterBlocksKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := &sink{}
	tooBig := errors.New("message too large")
	s.setRefuse(func(m relay.Message) error {
		if m.Topic == "bad" {
			return relay.Permanent(tooBig)
		}
		return nil
	})
	r := b.start(t, relay.Config{Publisher: s, MaxAttempts: 2, LeaseTTL: time.Second})
	bad := b.publishOne(t, outbox.Message{Topic: "bad", Key: "k1"})
	after := b.publishOne(t, outbox.Message{Topic: "good", Key: "k1"})
	other := b.publishOne(t, outbox.Message{Topic: "good", Key: "k2"})

	var dead []outbox.DeadEvent
	waitFor(t, 10*time.Second, "the refused message dead-lettered", func() bool {
		var err error
		dead, err = b.client.ListDeadEvents(b.ctx, b.pool, "", 0)
		return err == nil && len(dead) == 1
	})
	if d := dead[0]; strconv.FormatInt(d.ID, 10) != bad || !d.BlocksKey || d.Attempts != 2 || d.LastError != tooBig.Error() {
		t.Fatalf("dead letter %+v, want id %s blocking, 2 attempts, error %q", d, bad, tooBig)
	}
	waitFor(t, 10*time.Second, "the other key published", func() bool { return len(s.messages()) == 1 })
	// Several more rounds run; the blocked key's next message must stay.
	time.Sleep(100 * time.Millisecond)
	if got := s.messages(); len(got) != 1 || got[0].ID != other {
		t.Fatalf("delivered %v, want only %s (key k2)", ids(got), other)
	}
	if st := r.Stats(); st.Refused != 2 || st.DeadLettered != 1 {
		t.Fatalf("stats %+v, want 2 refusals and 1 dead letter", st)
	}
	st, err := b.client.EventStatus(b.ctx, b.pool)
	if err != nil || st.Dead != 1 || st.BlockedKeys != 1 || st.Pending != 1 {
		t.Fatalf("status %+v (%v), want 1 dead, 1 blocked key, 1 pending", st, err)
	}

	s.setRefuse(nil) // the operator raised the broker's limit
	replayed, err := b.client.ReplayDeadEvents(b.ctx, b.pool, nil)
	if err != nil || len(replayed) != 1 {
		t.Fatalf("replay: %v %v", replayed, err)
	}
	waitFor(t, 10*time.Second, "the key published after replay", func() bool { return len(s.messages()) == 3 })
	if got := ids(s.messages()); got[1] != bad || got[2] != after {
		t.Fatalf("delivered %v, want %s then %s after %s", got, bad, after, other)
	}
}

// TestSkipDeadLetsKeyPass: with SkipDead the dead letter does not hold its
// key back, and purging it deletes it unpublished.
func TestSkipDeadLetsKeyPass(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := &sink{refuse: func(m relay.Message) error {
		if m.Topic == "bad" {
			return relay.Permanent(errors.New("no stream for subject"))
		}
		return nil
	}}
	b.start(t, relay.Config{Publisher: s, MaxAttempts: 1, SkipDead: true, LeaseTTL: time.Second})
	bad := b.publishOne(t, outbox.Message{Topic: "bad", Key: "k1"})
	after := b.publishOne(t, outbox.Message{Topic: "good", Key: "k1"})
	waitFor(t, 10*time.Second, "the later message published", func() bool { return len(s.messages()) == 1 })
	if got := s.messages(); got[0].ID != after {
		t.Fatalf("delivered %v, want %s", ids(got), after)
	}
	dead, err := b.client.ListDeadEvents(b.ctx, b.pool, "bad", 0)
	if err != nil || len(dead) != 1 || dead[0].BlocksKey {
		t.Fatalf("dead letters %+v (%v), want one, not blocking", dead, err)
	}
	purged, err := b.client.PurgeDeadEvents(b.ctx, b.pool, []int64{dead[0].ID})
	if err != nil || len(purged) != 1 || strconv.FormatInt(purged[0], 10) != bad {
		t.Fatalf("purge: %v %v", purged, err)
	}
	// The later event's mark rides the relay's next fetch, a few
	// milliseconds after its delivery: wait for it.
	waitFor(t, 10*time.Second, "nothing pending or dead after the purge", func() bool {
		st, err := b.client.EventStatus(b.ctx, b.pool)
		return err == nil && st.Dead == 0 && st.Pending == 0
	})
}

// TestBrokerDownThenUp: while the broker fails every publish, events wait
// and the relay backs off; once it answers, all are delivered in order.
func TestBrokerDownThenUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := &sink{}
	down := errors.New("nats: no responders available")
	s.setRefuse(func(relay.Message) error { return down })
	r := b.start(t, relay.Config{Publisher: s, LeaseTTL: time.Second})
	want := map[string]bool{}
	for i := range 50 {
		want[b.publishOne(t, outbox.Message{Topic: "t", Key: fmt.Sprintf("k%d", i%3)})] = true
	}
	waitFor(t, 10*time.Second, "failed rounds", func() bool { return r.Stats().Failed >= 3 })
	if n := len(s.messages()); n != 0 {
		t.Fatalf("%d messages delivered while the broker was down", n)
	}
	if st, _ := b.client.EventStatus(b.ctx, b.pool); st.Pending != 50 || st.Dead != 0 {
		t.Fatalf("status while down %+v, want 50 pending, none dead", st)
	}
	s.setRefuse(nil)
	waitFor(t, 10*time.Second, "delivery after the broker came back", func() bool { return r.Stats().Published >= 50 })
	checkOrder(t, s.messages(), want)
	if st := r.Stats(); st.Refused != 0 || st.Published != 50 {
		t.Fatalf("stats %+v, want 50 published, no refusals", st)
	}
}

func ids(msgs []relay.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// TestCollector: the exported counters are the relays' Stats, summed.
func TestCollector(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := &sink{}
	r1 := b.start(t, relay.Config{Publisher: s, LeaseTTL: time.Second})
	r2 := b.start(t, relay.Config{Publisher: s, LeaseTTL: time.Second})
	for i := range 20 {
		b.publishOne(t, outbox.Message{Topic: "t", Key: strconv.Itoa(i)})
	}
	waitFor(t, 10*time.Second, "20 published", func() bool { return r1.Stats().Published+r2.Stats().Published == 20 })
	waitFor(t, 10*time.Second, "the partitions shared", func() bool { return r1.Stats().Parts+r2.Stats().Parts == 64 })
	reg := prometheus.NewRegistry()
	reg.MustRegister(relay.Collector(r1, r2))
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP docket_relay_published_total Events the broker acknowledged, by this process's relays.
# TYPE docket_relay_published_total counter
docket_relay_published_total 20
# HELP docket_relay_partitions Event partitions this process's relays hold now (of 64).
# TYPE docket_relay_partitions gauge
docket_relay_partitions 64
`), "docket_relay_published_total", "docket_relay_partitions"); err != nil {
		t.Fatal(err)
	}
}
