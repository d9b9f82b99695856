package natsrelay_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/docketq/docket/internal/testkit/brokers/natssrv"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
	"github.com/docketq/docket/outbox/relay/natsrelay"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var shared *natssrv.Server

func TestMain(m *testing.M) {
	s, err := natssrv.Discover()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared = s
	defer s.Stop()
	pgtest.Main(m)
}

type bundle struct {
	pool   *pgxpool.Pool
	schema string
	client *outbox.Client
	js     jetstream.JetStream
	prefix string // subjects of this test start with it
}

func setup(t *testing.T, srv *natssrv.Server) *bundle {
	t.Helper()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t)
	m, _ := migrate.New(schema)
	if _, err := m.Up(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	c, _ := outbox.New(outbox.Config{Schema: schema})
	nc, err := nats.Connect(srv.URL, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	return &bundle{pool: pool, schema: schema, client: c, js: js, prefix: schema}
}

// stream creates a file-backed stream for the test's subjects.
func (b *bundle) stream(t *testing.T, cfg jetstream.StreamConfig) jetstream.Stream {
	t.Helper()
	cfg.Name = b.prefix
	cfg.Subjects = []string{b.prefix + ".>"}
	cfg.Duplicates = time.Minute
	s, err := b.js.CreateStream(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.js.DeleteStream(context.Background(), cfg.Name) })
	return s
}

func (b *bundle) relay(t *testing.T, url string, cfg relay.Config) *relay.Relay {
	t.Helper()
	p, err := natsrelay.New(natsrelay.Config{URL: url, AckTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Schema, cfg.Publisher = b.schema, p
	cfg.PollInterval, cfg.MinBackoff, cfg.MaxBackoff = 5*time.Millisecond, 20*time.Millisecond, 200*time.Millisecond
	cfg.Logger = slog.New(slog.DiscardHandler)
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = 3 * time.Second
	}
	r, err := relay.New(b.pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.Stop(ctx)
	})
	return r
}

// read returns every message in stream s, in stream order.
func read(t *testing.T, s jetstream.Stream) []jetstream.Msg {
	t.Helper()
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	n := int(info.State.Msgs)
	if n == 0 {
		return nil
	}
	c, err := s.OrderedConsumer(t.Context(), jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.Fetch(n, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var out []jetstream.Msg
	for m := range batch.Messages() {
		out = append(out, m)
	}
	if len(out) != n {
		t.Fatalf("read %d of %d stream messages", len(out), n)
	}
	return out
}

// check asserts that the stream holds each committed id exactly once after
// de-duplication by Nats-Msg-Id, nothing else, and each key in sequence.
func check(t *testing.T, msgs []jetstream.Msg, want map[string]bool) {
	t.Helper()
	seen := map[string]bool{}
	last := map[string]int64{}
	for _, m := range msgs {
		id := m.Headers().Get(nats.MsgIdHdr)
		if seen[id] {
			continue
		}
		seen[id] = true
		if !want[id] {
			t.Errorf("stream holds %q, never committed", id)
		}
		if key := m.Headers().Get(relay.HeaderKey); key != "" {
			seq, _ := strconv.ParseInt(m.Headers().Get(relay.HeaderSeq), 10, 64)
			if seq != last[key]+1 {
				t.Errorf("key %s: seq %d after %d", key, seq, last[key])
			}
			last[key] = seq
		}
	}
	if len(seen) != len(want) {
		t.Errorf("stream holds %d distinct ids, want %d", len(seen), len(want))
	}
}

func waitPending(t *testing.T, b *bundle, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		st, err := b.client.EventStatus(t.Context(), b.pool)
		if err == nil && st.Pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("events still pending after %s: %+v %v", d, st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRelayToJetStream: committed events reach the stream once each, in key
// order, with Nats-Msg-Id, their headers and the trace context.
func TestRelayToJetStream(t *testing.T) {
	t.Parallel()
	b := setup(t, shared)
	s := b.stream(t, jetstream.StreamConfig{})
	b.relay(t, shared.URL, relay.Config{BatchSize: 64})
	want := map[string]bool{}
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for i := range 300 {
		m := outbox.Message{Topic: b.prefix + ".orders", Key: fmt.Sprintf("k%d", i%5), Payload: []byte(strconv.Itoa(i)),
			Headers: map[string]string{"traceparent": tp}}
		if i%10 == 0 {
			m.Key = ""
		}
		p, err := b.client.Publish(t.Context(), b.pool, m)
		if err != nil {
			t.Fatal(err)
		}
		want[strconv.FormatInt(p.ID, 10)] = true
	}
	waitPending(t, b, 20*time.Second)
	msgs := read(t, s)
	check(t, msgs, want)
	if len(msgs) != 300 {
		t.Errorf("stream holds %d messages, want 300", len(msgs))
	}
	if got := msgs[0].Headers().Get("traceparent"); got != tp {
		t.Errorf("traceparent %q, want %q", got, tp)
	}

	// A second publish of the same id is dropped by the stream.
	p, _ := natsrelay.New(natsrelay.Config{URL: shared.URL})
	defer p.Close()
	again := relay.Message{ID: msgs[0].Headers().Get(nats.MsgIdHdr), Topic: b.prefix + ".orders"}
	if errs := p.Publish(t.Context(), []relay.Message{again}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if info, _ := s.Info(t.Context()); info.State.Msgs != 300 {
		t.Errorf("after a duplicate the stream holds %d, want 300", info.State.Msgs)
	}
}

// TestPermanentRefusals: no stream for the subject, or a message over the
// stream's size limit, are permanent refusals and end as dead letters.
func TestPermanentRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, shared)
	b.stream(t, jetstream.StreamConfig{MaxMsgSize: 1024})
	p, err := natsrelay.New(natsrelay.Config{URL: shared.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	errs := p.Publish(t.Context(), []relay.Message{
		{ID: "a1", Topic: "nostream-" + b.prefix},
		{ID: "a2", Topic: b.prefix + ".big", Payload: make([]byte, 4096)},
		{ID: "a3", Topic: b.prefix + ".ok"},
	})
	if !relay.IsPermanent(errs[0]) || !relay.IsPermanent(errs[1]) || errs[2] != nil {
		t.Fatalf("errors %v, want permanent, permanent, nil", errs)
	}

	b.relay(t, shared.URL, relay.Config{MaxAttempts: 2})
	if _, err := b.client.Publish(t.Context(), b.pool, outbox.Message{Topic: b.prefix + ".big", Key: "k", Payload: make([]byte, 4096)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		dead, err := b.client.ListDeadEvents(t.Context(), b.pool, "", 0)
		if err == nil && len(dead) == 1 {
			if !dead[0].BlocksKey || dead[0].Attempts != 2 {
				t.Fatalf("dead letter %+v", dead[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no dead letter")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBrokerRestart: with a private server killed and restarted while the
// relay publishes, every committed event ends up in the stream, once after
// de-duplication, each key in order.
func TestBrokerRestart(t *testing.T) {
	t.Parallel()
	srv, err := natssrv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	b := setup(t, srv)
	s := b.stream(t, jetstream.StreamConfig{Storage: jetstream.FileStorage})
	b.relay(t, srv.URL, relay.Config{BatchSize: 50})
	want := map[string]bool{}
	publish := func(n int) {
		msgs := make([]outbox.Message, n)
		for i := range msgs {
			msgs[i] = outbox.Message{Topic: b.prefix + ".t", Key: fmt.Sprintf("k%d", i%20)}
		}
		ps, err := b.client.PublishMany(t.Context(), b.pool, msgs)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			want[strconv.FormatInt(p.ID, 10)] = true
		}
	}
	publish(2000)
	time.Sleep(50 * time.Millisecond)
	srv.Kill()
	publish(1000) // written while the broker is down
	time.Sleep(300 * time.Millisecond)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	publish(1000)
	waitPending(t, b, 60*time.Second)
	check(t, read(t, s), want)
	if st, _ := b.client.EventStatus(t.Context(), b.pool); st.Dead != 0 {
		t.Errorf("%d dead letters after a restart", st.Dead)
	}
}
