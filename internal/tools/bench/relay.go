package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
	"github.com/docketq/docket/outbox/relay/natsrelay"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ScenarioRelay measures the outbox relay to NATS JetStream (RunRelay).
const ScenarioRelay = "relay"

// RelayConfig configures RunRelay.
type RelayConfig struct {
	NatsURL  string
	Events   int           // events drained for throughput; 0: 50,000
	Keys     int           // distinct keys; 0: 1,000
	Relays   int           // relays in this process; 0: 2
	Rate     int           // steady events/s for the latency phase; 0: 1,000
	Duration time.Duration // of the latency phase; 0: 10s
	Progress io.Writer
	// CPUProfile, when set, is a file that receives a Go CPU profile of
	// the throughput phase (the relays draining the backlog).
	CPUProfile string
}

// RelayResult is the one JSON line of the relay scenario.
type RelayResult struct {
	Scenario             string  `json:"scenario"`
	Events               int     `json:"events"`
	Keys                 int     `json:"keys"`
	Relays               int     `json:"relays"`
	RelayPerSec          float64 `json:"relay_msgs_per_sec"`
	BaselinePerSec       float64 `json:"baseline_msgs_per_sec"`
	FractionOfBaseline   float64 `json:"fraction_of_baseline"`
	SteadyRate           int     `json:"steady_rate"`
	SteadySamples        int     `json:"steady_samples"`
	CommitToDeliveredP50 float64 `json:"commit_to_delivered_p50_ms"`
	CommitToDeliveredP99 float64 `json:"commit_to_delivered_p99_ms"`
}

// RunRelay migrates a fresh schema, then: (1) starts Relays relays, commits
// Events events over Keys keys in one transaction and times its commit ->
// broker ack of all of them (the relay's throughput); (2) publishes the same messages straight
// to JetStream with async publish, the no-outbox baseline; (3) publishes at
// a steady Rate for Duration, one event per transaction from 8 producers,
// with the relays running at their defaults (woken by the publishers'
// NOTIFY), and measures commit -> delivery to a JetStream consumer, which
// bounds commit -> ack from above.
func RunRelay(ctx context.Context, pool *pgxpool.Pool, cfg RelayConfig) (RelayResult, error) {
	if cfg.Events <= 0 {
		cfg.Events = 50_000
	}
	if cfg.Keys <= 0 {
		cfg.Keys = 1000
	}
	if cfg.Relays <= 0 {
		cfg.Relays = 2
	}
	if cfg.Rate <= 0 {
		cfg.Rate = 1000
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 10 * time.Second
	}
	say := func(f string, a ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "relay bench: "+f+"\n", a...)
		}
	}
	res := RelayResult{Scenario: ScenarioRelay, Events: cfg.Events, Keys: cfg.Keys, Relays: cfg.Relays, SteadyRate: cfg.Rate}
	schema := "docket_bench_relay_" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	m, err := migrate.New(schema)
	if err != nil {
		return res, err
	}
	if _, err := m.Up(ctx, pool); err != nil {
		return res, err
	}
	defer pool.Exec(context.WithoutCancel(ctx), `DROP SCHEMA `+schema+` CASCADE`)
	client, _ := outbox.New(outbox.Config{Schema: schema})

	nc, err := nats.Connect(cfg.NatsURL)
	if err != nil {
		return res, err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	subject := schema + ".bench"
	for _, name := range []string{schema, schema + "_base"} {
		subj := []string{subject}
		if name != schema {
			subj = []string{schema + ".base"}
		}
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: subj, Storage: jetstream.FileStorage}); err != nil {
			return res, err
		}
		defer js.DeleteStream(context.WithoutCancel(ctx), name)
	}
	payload := make([]byte, 100)

	// (1) Relay throughput: the relays start on an empty outbox and share
	// out its partitions; then the backlog commits in one transaction and
	// the clock runs from its commit to the last acknowledgement, so that
	// relay start-up is not counted as publishing time.
	stop, err := startRelays(ctx, pool, schema, cfg)
	if err != nil {
		return res, err
	}
	defer stop()
	if err := waitShared(ctx, pool, schema, cfg.Relays); err != nil {
		return res, err
	}
	say("committing %d events over %d keys", cfg.Events, cfg.Keys)
	msgs := make([]outbox.Message, cfg.Events)
	for i := range msgs {
		msgs[i] = outbox.Message{Topic: subject, Key: "k" + strconv.Itoa(i%cfg.Keys), Payload: payload}
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return res, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := client.PublishMany(ctx, tx, msgs); err != nil {
		return res, err
	}
	stopProfile, err := startProfile(cfg.CPUProfile, say, ScenarioRelay)
	if err != nil {
		return res, err
	}
	start := time.Now()
	err = tx.Commit(ctx)
	if err == nil {
		err = waitDrained(ctx, pool, schema)
	}
	res.RelayPerSec = float64(cfg.Events) / time.Since(start).Seconds()
	if perr := stopProfile(); err == nil {
		err = perr
	}
	if err != nil {
		return res, err
	}
	say("relay: %.0f msgs/s", res.RelayPerSec)

	// (2) The baseline: the same messages, straight to JetStream.
	p, err := natsrelay.New(natsrelay.Config{URL: cfg.NatsURL})
	if err != nil {
		return res, err
	}
	defer p.Close()
	start = time.Now()
	for i := 0; i < cfg.Events; i += 500 {
		batch := make([]relay.Message, min(500, cfg.Events-i))
		for j := range batch {
			batch[j] = relay.Message{ID: "b" + strconv.Itoa(i+j), Topic: schema + ".base", Key: "k" + strconv.Itoa((i+j)%cfg.Keys), Payload: payload}
		}
		for _, err := range p.Publish(ctx, batch) {
			if err != nil {
				return res, err
			}
		}
	}
	res.BaselinePerSec = float64(cfg.Events) / time.Since(start).Seconds()
	res.FractionOfBaseline = res.RelayPerSec / res.BaselinePerSec
	say("baseline: %.0f msgs/s", res.BaselinePerSec)

	// (3) Steady rate: commit -> delivery.
	var mu sync.Mutex
	committedAt := map[string]time.Time{}
	var lat []time.Duration
	warm := make(chan struct{}, 1)
	cons, err := js.OrderedConsumer(ctx, schema, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		return res, err
	}
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		now := time.Now()
		id := msg.Headers().Get(nats.MsgIdHdr)
		if id == "warm-up" {
			select {
			case warm <- struct{}{}:
			default:
			}
			return
		}
		mu.Lock()
		if t, ok := committedAt[id]; ok {
			lat = append(lat, now.Sub(t))
			delete(committedAt, id)
		}
		mu.Unlock()
	})
	if err != nil {
		return res, err
	}
	defer cc.Stop()
	// The consumer's first delivery was seen to lag by its heartbeat (5s):
	// wait for one warm-up message to arrive before measuring.
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: subject, Header: nats.Header{nats.MsgIdHdr: []string{"warm-up"}}}); err != nil {
		return res, err
	}
	select {
	case <-warm:
	case <-time.After(30 * time.Second):
		return res, fmt.Errorf("relay bench: the consumer received nothing within 30s")
	}
	say("steady %d/s for %s from %d producers", cfg.Rate, cfg.Duration, steadyProducers)
	// One transaction per event, handed out at the rate to several
	// producers: one alone cannot commit 1,000 transactions a second here.
	ticks := make(chan int, cfg.Rate)
	var wg sync.WaitGroup
	errs := make(chan error, steadyProducers)
	for range steadyProducers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ticks {
				pub, err := client.Publish(ctx, pool, outbox.Message{Topic: subject, Key: "k" + strconv.Itoa(i%cfg.Keys), Payload: payload})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				committedAt[strconv.FormatInt(pub.ID, 10)] = time.Now()
				mu.Unlock()
			}
		}()
	}
	tick := time.NewTicker(time.Second / time.Duration(cfg.Rate))
	end := time.Now().Add(cfg.Duration)
	for i := 0; time.Now().Before(end); i++ {
		<-tick.C
		select {
		case ticks <- i:
		default: // the producers fell a second behind: offer less
		}
	}
	tick.Stop()
	close(ticks)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return res, err
	}
	if err := waitDrained(ctx, pool, schema); err != nil {
		return res, err
	}
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	slices.Sort(lat)
	res.SteadySamples = len(lat)
	res.CommitToDeliveredP50 = millis(Percentile(lat, 50))
	res.CommitToDeliveredP99 = millis(Percentile(lat, 99))
	mu.Unlock()
	return res, nil
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// steadyProducers is how many connections publish in the steady phase.
const steadyProducers = 8

func startRelays(ctx context.Context, pool *pgxpool.Pool, schema string, cfg RelayConfig) (func(), error) {
	var rs []*relay.Relay
	stop := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		for _, r := range rs {
			_ = r.Stop(sctx)
		}
	}
	for range cfg.Relays {
		p, err := natsrelay.New(natsrelay.Config{URL: cfg.NatsURL})
		if err != nil {
			stop()
			return nil, err
		}
		log := slog.New(slog.DiscardHandler)
		if cfg.Progress != nil {
			log = slog.New(slog.NewTextHandler(cfg.Progress, &slog.HandlerOptions{Level: slog.LevelWarn}))
		}
		r, err := relay.New(pool, relay.Config{Schema: schema, Publisher: p, Logger: log})
		if err != nil {
			stop()
			return nil, err
		}
		if err := r.Start(ctx); err != nil {
			stop()
			return nil, err
		}
		rs = append(rs, r)
	}
	return stop, nil
}

// waitShared waits until relays relays hold every partition of schema's
// outbox between them, each its share.
func waitShared(ctx context.Context, pool *pgxpool.Pool, schema string, relays int) error {
	var held int64
	err := wait(ctx, 10*time.Millisecond, func() int64 { return held }, func() (bool, error) {
		var owners int
		err := pool.QueryRow(ctx, `SELECT count(DISTINCT owner), count(owner) FROM `+schema+`.docket_relay_parts
			WHERE lease_until > now()`).Scan(&owners, &held)
		return owners == relays && held == 64, err
	})
	if err != nil {
		return fmt.Errorf("relays sharing the partitions (%d of 64 held): %w", held, err)
	}
	return nil
}

// waitDrained polls, cheaply, until no event of schema is pending.
func waitDrained(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	for {
		var pending bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+schema+`.docket_events
			WHERE published_at IS NULL AND dead_at IS NULL)`).Scan(&pending); err != nil {
			return err
		}
		if !pending {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
