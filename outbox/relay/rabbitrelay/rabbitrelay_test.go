package rabbitrelay_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/docketq/docket/internal/testkit/brokers/rabbitsrv"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
	"github.com/docketq/docket/outbox/relay/rabbitrelay"
	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"
)

// brokerURL is the RabbitMQ the tests use: $DOCKET_RABBITMQ_URL, else the
// machine's on 127.0.0.1:5672 (guest/guest) when it answers, else a
// private node started for the test from the installed rabbitmq-server
// (internal/testkit/brokers/rabbitsrv).
func brokerURL(t *testing.T) string {
	t.Helper()
	srv, err := rabbitsrv.Discover()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv.URL
}

// topology declares a topic exchange and a queue, both deleted when the
// test ends, binds the queue to the exchange for every routing key
// "orders.#" unless unbound, and returns the exchange's name, the queue's
// deliveries and a function that binds it.
func topology(t *testing.T, url string, unbound bool) (exchange string, deliveries <-chan amqp.Delivery, bind func()) {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	exchange = fmt.Sprintf("docket-test-%d", time.Now().UnixNano())
	if err := ch.ExchangeDeclare(exchange, "topic", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	bind = func() {
		if err := ch.QueueBind(q.Name, "orders.#", exchange, false, nil); err != nil {
			t.Error(err)
		}
	}
	if !unbound {
		bind()
	}
	deliveries, err = ch.Consume(q.Name, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return exchange, deliveries, bind
}

// outboxSchema migrates a schema of the test's own and returns its pool,
// name and outbox client.
func outboxSchema(t *testing.T) (*pgxpool.Pool, string, *outbox.Client) {
	t.Helper()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t)
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	client, err := outbox.New(outbox.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	return pool, schema, client
}

// startRelay runs a relay of cfg, publishing to exchange at url, until the
// test ends.
func startRelay(t *testing.T, pool *pgxpool.Pool, url, exchange string, cfg relay.Config) *relay.Relay {
	t.Helper()
	p, err := rabbitrelay.New(rabbitrelay.Config{URL: url, Exchange: exchange})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Publisher, cfg.Logger = p, slog.New(slog.DiscardHandler)
	r, err := relay.New(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Stop(context.Background()) })
	return r
}

// Messages arrive persistent, with the event id as message_id, their
// headers and body, in publish order; a message no queue takes is refused
// for good; a missing exchange too; a broker that cannot be reached is a
// transient failure.
func TestPublish(t *testing.T) {
	url := brokerURL(t)
	exchange, deliveries, _ := topology(t, url, false)
	p, err := rabbitrelay.New(rabbitrelay.Config{URL: url, Exchange: exchange, RoutingKeys: map[string]string{"legacy": "orders.legacy"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := t.Context()
	var msgs []relay.Message
	for i := range 20 {
		msgs = append(msgs, relay.Message{ID: fmt.Sprint(100 + i), Topic: "orders.created", Key: "k",
			Payload: []byte(fmt.Sprintf(`{"n":%d}`, i)), Headers: map[string]string{relay.HeaderKey: "k", "traceparent": "00-x"}})
	}
	msgs = append(msgs, relay.Message{ID: "200", Topic: "legacy", Payload: []byte("{}")})
	for i, err := range p.Publish(ctx, msgs) {
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	for i := range msgs {
		select {
		case d := <-deliveries:
			if d.MessageId != msgs[i].ID || string(d.Body) != string(msgs[i].Payload) || d.DeliveryMode != amqp.Persistent {
				t.Errorf("delivery %d: id %q body %s mode %d, want %q %s persistent", i, d.MessageId, d.Body, d.DeliveryMode, msgs[i].ID, msgs[i].Payload)
			}
			if i < 20 && (d.Headers[relay.HeaderKey] != "k" || d.Headers["traceparent"] != "00-x" || d.RoutingKey != "orders.created") {
				t.Errorf("delivery %d: headers %v, routing key %q", i, d.Headers, d.RoutingKey)
			}
			if i == 20 && d.RoutingKey != "orders.legacy" {
				t.Errorf("a mapped topic went out with routing key %q, want orders.legacy", d.RoutingKey)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("delivery %d never came", i)
		}
	}

	// No queue is bound for "audit.*": returned, permanent.
	errs := p.Publish(ctx, []relay.Message{{ID: "300", Topic: "audit.login", Payload: []byte("{}")}, {ID: "301", Topic: "orders.x", Payload: []byte("{}")}})
	if !relay.IsPermanent(errs[0]) || errs[1] != nil {
		t.Errorf("unroutable then routable: %v, want a permanent refusal then success", errs)
	}
	// No such exchange: permanent, and the Publisher recovers.
	gone, err := rabbitrelay.New(rabbitrelay.Config{URL: url, Exchange: exchange + "-missing"})
	if err != nil {
		t.Fatal(err)
	}
	defer gone.Close()
	if errs := gone.Publish(ctx, []relay.Message{{ID: "400", Topic: "orders.x"}}); !relay.IsPermanent(errs[0]) {
		t.Errorf("publish to a missing exchange: %v, want a permanent refusal", errs[0])
	}
	if errs := p.Publish(ctx, []relay.Message{{ID: "401", Topic: "orders.x"}}); errs[0] != nil {
		t.Errorf("publish after another publisher's refusal: %v", errs[0])
	}

	// Nobody listens on this port: transient.
	down, err := rabbitrelay.New(rabbitrelay.Config{URL: "amqp://guest:guest@127.0.0.1:1/"})
	if err != nil {
		t.Fatal(err)
	}
	errs = down.Publish(ctx, []relay.Message{{ID: "500", Topic: "orders.x"}})
	if errs[0] == nil || relay.IsPermanent(errs[0]) {
		t.Errorf("broker unreachable: %v, want a transient error", errs[0])
	}
}

// End to end through the relay: events published in committed
// transactions reach the queue, each key's in commit order (Docket-Seq),
// those of a rolled-back transaction never.
func TestRelayToRabbitMQ(t *testing.T) {
	url := brokerURL(t)
	exchange, deliveries, _ := topology(t, url, false)
	ctx := t.Context()
	pool, schema, client := outboxSchema(t)
	const keys, perKey = 3, 30
	committed := map[string]bool{}
	for round := range perKey {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for k := range keys {
			p, err := client.Publish(ctx, tx, outbox.Message{Topic: "orders.placed", Key: fmt.Sprintf("order-%d", k), Payload: []byte(fmt.Sprintf(`{"round":%d}`, round))})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, fmt.Sprint(p.ID))
		}
		if round%10 == 9 {
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			committed[id] = true
		}
	}
	startRelay(t, pool, url, exchange, relay.Config{Schema: schema})
	lastSeq := map[string]int{}
	seen := map[string]bool{}
	for len(seen) < len(committed) {
		select {
		case d := <-deliveries:
			if !committed[d.MessageId] {
				t.Fatalf("delivered %s, which no committed transaction published", d.MessageId)
			}
			seen[d.MessageId] = true
			key, _ := d.Headers[relay.HeaderKey].(string)
			seq, err := strconv.Atoi(fmt.Sprint(d.Headers[relay.HeaderSeq]))
			if err != nil || seq <= lastSeq[key] {
				t.Errorf("key %s: seq %v after %d", key, d.Headers[relay.HeaderSeq], lastSeq[key])
			}
			lastSeq[key] = seq
		case <-time.After(15 * time.Second):
			t.Fatalf("%d of %d committed events delivered", len(seen), len(committed))
		}
	}
	if len(lastSeq) != keys {
		t.Errorf("events of %d keys delivered, want %d", len(lastSeq), keys)
	}
}

// A queue that is unbound for a while (a node restarted under load
// returns messages as unroutable until it has recovered its bindings)
// does not make dead letters of the events it refuses: each waits out
// RefusalBackoff before its next attempt and is delivered, its key in
// order, once the queue is bound again.
func TestUnroutableForAWhile(t *testing.T) {
	url := brokerURL(t)
	exchange, deliveries, bind := topology(t, url, true)
	ctx := t.Context()
	pool, schema, client := outboxSchema(t)
	const keys, perKey = 3, 4
	var want []string
	for i := range keys * perKey {
		p, err := client.Publish(ctx, pool, outbox.Message{Topic: "orders.placed", Key: fmt.Sprintf("order-%d", i%keys), Payload: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprint(p.ID))
	}
	r := startRelay(t, pool, url, exchange, relay.Config{Schema: schema, MaxAttempts: 3, RefusalBackoff: 300 * time.Millisecond})
	for deadline := time.Now().Add(10 * time.Second); r.Stats().Refused < keys; {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v: the keys' first events were not refused as unroutable", r.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Unroutable for longer than the relay's rounds take (without the
	// waits, three rounds dead-lettered every key's head within 200 ms),
	// shorter than the first wait.
	time.Sleep(150 * time.Millisecond)
	bind()
	lastSeq := map[string]int{}
	seen := map[string]bool{}
	for len(seen) < len(want) {
		select {
		case d := <-deliveries:
			seen[d.MessageId] = true
			key, _ := d.Headers[relay.HeaderKey].(string)
			seq, err := strconv.Atoi(fmt.Sprint(d.Headers[relay.HeaderSeq]))
			if err != nil || seq != lastSeq[key]+1 {
				t.Errorf("key %s: seq %v after %d", key, d.Headers[relay.HeaderSeq], lastSeq[key])
			}
			lastSeq[key] = seq
		case <-time.After(15 * time.Second):
			t.Fatalf("%d of %d events delivered; stats %+v", len(seen), len(want), r.Stats())
		}
	}
	if st := r.Stats(); st.DeadLettered != 0 || st.Refused < keys {
		t.Fatalf("stats %+v: want the first events refused, none dead", st)
	}
	if st, err := client.EventStatus(ctx, pool); err != nil || st.Dead != 0 {
		t.Fatalf("event status %+v (%v): want no dead events", st, err)
	}
}
