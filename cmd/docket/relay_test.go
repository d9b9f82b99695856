package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
)

// The relay's help names every broker it publishes to, with the flag that
// picks it.
func TestRelayHelpNamesEveryBroker(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"relay", "--help"}, {"relay", "run", "--help"}} {
		_, out, _ := runDocket(t, args...)
		for _, want := range []string{"NATS JetStream", "RabbitMQ", "Kafka", "--nats-url", "--amqp-url", "--kafka-brokers"} {
			if !strings.Contains(out, want) {
				t.Errorf("docket %s does not name %s:\n%s", strings.Join(args, " "), want, out)
			}
		}
	}
}

// TestRelayDLQVerbs: a dead event shows in relay status and dlq list,
// replay makes it pending again, purge needs ids or --all.
func TestRelayDLQVerbs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t)
	m, _ := migrate.New(schema)
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	c, _ := outbox.New(outbox.Config{Schema: schema})
	p, err := c.Publish(ctx, pool, outbox.Message{Topic: "orders", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	// As the relay leaves an event after its last permanent refusal.
	if _, err := pool.Exec(ctx, `UPDATE "`+schema+`".docket_events SET dead_at = now(), blocks_key = true,
		attempts = 3, last_error = 'message too large' WHERE id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	conn := []string{"--database-url", pgtest.URL(t), "--schema", schema}
	code, out, errOut := runDocket(t, append([]string{"relay", "status", "--json"}, conn...)...)
	var st outbox.EventStatus
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Dead != 1 || st.BlockedKeys != 1 || st.Pending != 0 {
		t.Fatalf("relay status: %d %q %q", code, out, errOut)
	}
	code, out, _ = runDocket(t, append([]string{"relay", "dlq", "list", "--json"}, conn...)...)
	var dead []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &dead) != nil || len(dead) != 1 || dead[0]["last_error"] != "message too large" || dead[0]["blocks_key"] != true {
		t.Fatalf("dlq list: %d %q", code, out)
	}
	if code, _, errOut := runDocket(t, append([]string{"relay", "dlq", "purge"}, conn...)...); code != 2 || !strings.Contains(errOut, "--all") {
		t.Fatalf("purge without ids: %d %q", code, errOut)
	}
	if code, _, errOut := runDocket(t, "relay", "dlq", "replay", "x1"); code != 2 || !strings.Contains(errOut, "not a positive integer") {
		t.Fatalf("replay with a bad id: %d %q", code, errOut)
	}
	code, out, _ = runDocket(t, append([]string{"relay", "dlq", "replay", "--all"}, conn...)...)
	if code != 0 || out != "replayed 1 dead events\n" {
		t.Fatalf("replay: %d %q", code, out)
	}
	if st, _ := c.EventStatus(ctx, pool); st.Pending != 1 || st.Dead != 0 {
		t.Fatalf("after replay %+v", st)
	}
	// docket status shows the relay's backlog too.
	code, out, _ = runDocket(t, append([]string{"status"}, conn...)...)
	if code != 0 || !strings.Contains(out, "events: 1 pending, lag ") || !strings.Contains(out, "0 dead (0 keys blocked), 0 relays live") {
		t.Fatalf("status: %d %q", code, out)
	}
}

// relay run takes a separate URL for LISTEN (--listen-url, or
// $DOCKET_LISTEN_URL); one that does not parse is a usage error that does
// not echo its password.
func TestRelayRunBadListenURL(t *testing.T) {
	t.Parallel()
	code, _, errOut := runDocket(t, "relay", "run", "--database-url", pgtest.URL(t), "--schema", pgtest.Schema(t),
		"--listen-url", "postgres://u:hunter2@127.0.0.1:notaport/db")
	if code != 2 || !strings.Contains(errOut, "--listen-url: invalid") || strings.Contains(errOut, "hunter2") {
		t.Errorf("bad --listen-url: exit %d, %q; want a usage error (2) without the password", code, errOut)
	}
}

// relay run --amqp-url publishes to RabbitMQ; a URL that is not amqp:// is a
// usage error before anything connects, and does not echo its password.
func TestRelayRunBadAMQPURL(t *testing.T) {
	t.Parallel()
	code, _, errOut := runDocket(t, "relay", "run", "--database-url", pgtest.URL(t), "--schema", pgtest.Schema(t),
		"--amqp-url", "http://guest:guest@127.0.0.1:5672/")
	if code != 2 || !strings.Contains(errOut, "--amqp-url: not an amqp:// or amqps:// URL") || strings.Contains(errOut, "guest") {
		t.Errorf("bad --amqp-url: exit %d, %q; want a usage error (2)", code, errOut)
	}
}

// relay run --kafka-brokers takes host:port seeds; a seed without a port,
// two brokers at once, --exchange without RabbitMQ or a negative
// --refusal-backoff are usage errors before anything connects.
func TestRelayRunBrokerFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--kafka-brokers", "127.0.0.1:9092,nohost"}, `--kafka-brokers "nohost": address nohost: missing port`},
		{[]string{"--kafka-brokers", "127.0.0.1:9092", "--amqp-url", "amqp://guest:guest@127.0.0.1:5672/"}, "give one broker"},
		{[]string{"--exchange", "events"}, "--exchange needs --amqp-url"},
		{[]string{"--refusal-backoff", "-1s"}, "--refusal-backoff -1s: want 0 (the default, 2s) or more"},
	} {
		all := append([]string{"relay", "run", "--database-url", "postgres://127.0.0.1:1/nowhere", "--schema", "s"}, c.args...)
		code, _, errOut := runDocket(t, all...)
		if code != 2 || !strings.Contains(errOut, c.says) {
			t.Errorf("relay run %v: exit %d, %q; want a usage error (2) saying %q", c.args, code, errOut, c.says)
		}
	}
}

// relay run --id names the relays' identity; an id the relay could not
// hold, or --id through a transaction pooler without --listen-url, is a
// usage error before anything connects.
func TestRelayRunIDFlag(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--id", strings.Repeat("r", relay.MaxIDLen+1)}, "--id: docket: relay ID longer than"},
		{[]string{"--id", strings.Repeat("r", relay.MaxIDLen-1), "--concurrency", "2"}, "--id: docket: relay ID longer than"},
		{[]string{"--id", "a\tb"}, "control character"},
		{[]string{"--id", "a", "--pgbouncer"}, "--id with --pgbouncer needs --listen-url"},
	} {
		all := append([]string{"relay", "run", "--database-url", "postgres://127.0.0.1:1/nowhere", "--schema", "s"}, c.args...)
		code, _, errOut := runDocket(t, all...)
		if code != 2 || !strings.Contains(errOut, c.says) {
			t.Errorf("relay run %v: exit %d, %q; want a usage error (2) saying %q", c.args, code, errOut, c.says)
		}
	}
}
