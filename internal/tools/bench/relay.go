package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
	"github.com/docketq/docket/outbox/relay/natsrelay"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ScenarioRelay measures the outbox relay to NATS JetStream (RunRelay).
const ScenarioRelay = "relay"

// RelayConfig configures RunRelay.
type RelayConfig struct {
	NatsURL string
	Events  int   // events drained for throughput; 0: 50,000
	Keys    int   // distinct keys; 0: 1,000
	Relays  []int // relays per measurement, one JSON line each; empty: 1 and 3
	// Process, when set, returns the command of one relay process on
	// schema (docket relay run); each relay then runs in a process of its
	// own, and the drain from start is timed from starting the processes.
	// Nil runs the relays in the bench process.
	Process  func(schema string) *exec.Cmd
	Rate     int           // steady events/s for the latency phase; 0: 1,000
	Duration time.Duration // of the latency phase; 0: 10s
	Progress io.Writer
	// CPUProfile, when set, is a file that receives a Go CPU profile of
	// the warm drain of the first measurement. It needs Process nil.
	CPUProfile string
}

// RelayResult is one JSON line of the relay scenario: one number of
// relays.
type RelayResult struct {
	Scenario string `json:"scenario"`
	Events   int    `json:"events"`
	Keys     int    `json:"keys"`
	Relays   int    `json:"relays"`
	// Processes says whether each relay ran in a process of its own.
	Processes bool `json:"processes"`
	// From start: the backlog committed first, the relays started after,
	// timed from their start to the last event marked published.
	StartPerSec       float64 `json:"start_msgs_per_sec"`
	FractionFromStart float64 `json:"fraction_of_baseline_from_start"`
	// Warm: the relays running and sharing the partitions, timed from
	// the backlog's commit.
	RelayPerSec        float64 `json:"relay_msgs_per_sec"`
	FractionOfBaseline float64 `json:"fraction_of_baseline"`
	BaselinePerSec     float64 `json:"baseline_msgs_per_sec"`
	// The steady phase, with the relays of this line.
	SteadyRate           int     `json:"steady_rate"`
	SteadySamples        int     `json:"steady_samples"`
	CommitToDeliveredP50 float64 `json:"commit_to_delivered_p50_ms"`
	CommitToDeliveredP99 float64 `json:"commit_to_delivered_p99_ms"`
	// CPU per 1,000 events of the steady phase: the relays', the whole
	// PostgreSQL server's, and the server's without the relays (the
	// producers' transactions alone, at the same rate).
	SteadyRelayCPU     float64 `json:"steady_relay_cpu_s_per_1k"`
	SteadyPGCPU        float64 `json:"steady_pg_cpu_s_per_1k"`
	SteadyProducersCPU float64 `json:"steady_producers_pg_cpu_s_per_1k"`
	// CPU per 1,000 events of the warm drain, the relays' and the server's.
	DrainRelayCPU float64 `json:"drain_relay_cpu_s_per_1k"`
	DrainPGCPU    float64 `json:"drain_pg_cpu_s_per_1k"`
}

// RunRelay migrates a fresh schema, then: (1) the producers alone publish
// at a steady Rate for Duration, one event per transaction from 8
// producers, for the server's CPU without relays; then for each number of
// relays: (2) commits Events events over Keys keys in one transaction and
// starts the relays, timed from their start until every event is marked
// published (start-up, lease acquisition and the drain); (3) commits as
// many again while they run, timed from the commit (warm); (4) publishes
// the same messages straight to JetStream with async publish, the
// no-outbox baseline; (5) publishes at a steady Rate for Duration with the
// relays running at their defaults (woken by the publishers' NOTIFY), and
// measures commit -> delivery to a JetStream consumer, which bounds commit
// -> ack from above, and the CPU per event.
func RunRelay(ctx context.Context, pool *pgxpool.Pool, cfg RelayConfig, emit func(RelayResult) error) error {
	if cfg.Events <= 0 {
		cfg.Events = 50_000
	}
	if cfg.Keys <= 0 {
		cfg.Keys = 1000
	}
	if len(cfg.Relays) == 0 {
		cfg.Relays = []int{1, 3}
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
	schema := "docket_bench_relay_" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	m, err := migrate.New(schema)
	if err != nil {
		return err
	}
	if _, err := m.Up(ctx, pool); err != nil {
		return err
	}
	defer pool.Exec(context.WithoutCancel(ctx), `DROP SCHEMA `+schema+` CASCADE`)
	// The event partitions of the next days, as a relay that ran before
	// leaves them: events committed before any relay ran would land in the
	// default partition, and the first relay would spend its start moving
	// them.
	if _, err := pool.Exec(ctx, `SELECT `+schema+`.docket_create_event_partition(current_date + d) FROM generate_series(0, 2) d`); err != nil {
		return err
	}
	client, _ := outbox.New(outbox.Config{Schema: schema})

	nc, err := nats.Connect(cfg.NatsURL)
	if err != nil {
		return err
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
			return err
		}
		defer js.DeleteStream(context.WithoutCancel(ctx), name)
	}
	b := &relayBench{cfg: cfg, pool: pool, schema: schema, subject: subject, client: client,
		js: js, payload: make([]byte, 100), clock: newCPUClock(ctx, pool), say: say}
	cons, err := b.consume(ctx)
	if err != nil {
		return err
	}
	defer cons.Stop()

	// (1) The producers alone: their share of the server's CPU.
	if _, err := b.steady(ctx); err != nil {
		return err
	}
	from := b.clock.read()
	n, err := b.steady(ctx)
	if err != nil {
		return err
	}
	producersCPU := b.clock.use(from, b.clock.read(), n).pg
	if _, err := pool.Exec(ctx, `UPDATE `+schema+`.docket_events SET published_at = now() WHERE published_at IS NULL`); err != nil {
		return err
	}

	for i, relays := range cfg.Relays {
		res := RelayResult{Scenario: ScenarioRelay, Events: cfg.Events, Keys: cfg.Keys, Relays: relays,
			Processes: cfg.Process != nil, SteadyRate: cfg.Rate, SteadyProducersCPU: round(producersCPU, 4)}
		if err := b.measure(ctx, &res, i == 0); err != nil {
			return err
		}
		if err := emit(res); err != nil {
			return err
		}
	}
	return nil
}

// relayBench is the state of one run of the relay scenario.
type relayBench struct {
	cfg     RelayConfig
	pool    *pgxpool.Pool
	schema  string
	subject string
	client  *outbox.Client
	js      jetstream.JetStream
	payload []byte
	clock   *cpuClock
	say     func(string, ...any)

	mu          sync.Mutex
	committedAt map[string]time.Time
	lat         []time.Duration
	warm        chan struct{}
}

// measure fills res for res.Relays relays; profile says whether the warm
// drain is the one profiled.
func (b *relayBench) measure(ctx context.Context, res *RelayResult, profile bool) error {
	if err := b.commit(ctx); err != nil {
		return err
	}
	b.say("%d relays: starting on %d committed events over %d keys", res.Relays, b.cfg.Events, b.cfg.Keys)
	start := time.Now()
	relays, err := b.start(ctx, res.Relays)
	if err != nil {
		return err
	}
	defer relays.stop()
	if err := waitDrained(ctx, b.pool, b.schema); err != nil {
		return err
	}
	res.StartPerSec = float64(b.cfg.Events) / time.Since(start).Seconds()
	if err := waitShared(ctx, b.pool, b.schema, res.Relays); err != nil {
		return err
	}

	tx, err := b.fill(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	path := ""
	if profile {
		path = b.cfg.CPUProfile
	}
	stopProfile, err := startProfile(path, b.say, ScenarioRelay)
	if err != nil {
		return err
	}
	from, rfrom := b.clock.read(), relays.cpu()
	start = time.Now()
	err = tx.Commit(ctx)
	if err == nil {
		err = waitDrained(ctx, b.pool, b.schema)
	}
	res.RelayPerSec = float64(b.cfg.Events) / time.Since(start).Seconds()
	use := b.clock.use(from, b.clock.read(), b.cfg.Events)
	res.DrainRelayCPU, res.DrainPGCPU = round(perK(relays.cpu()-rfrom, b.cfg.Events), 4), round(use.pg, 4)
	if perr := stopProfile(); err == nil {
		err = perr
	}
	if err != nil {
		return err
	}

	if res.BaselinePerSec, err = b.baseline(ctx); err != nil {
		return err
	}
	res.FractionFromStart = round(res.StartPerSec/res.BaselinePerSec, 3)
	res.FractionOfBaseline = round(res.RelayPerSec/res.BaselinePerSec, 3)
	b.say("%d relays: %.0f msgs/s from start, %.0f warm, %.0f direct", res.Relays, res.StartPerSec, res.RelayPerSec, res.BaselinePerSec)

	from, rfrom = b.clock.read(), relays.cpu()
	b.mu.Lock()
	b.committedAt, b.lat = map[string]time.Time{}, nil
	b.mu.Unlock()
	n, err := b.steady(ctx)
	if err != nil {
		return err
	}
	if err := waitDrained(ctx, b.pool, b.schema); err != nil {
		return err
	}
	use = b.clock.use(from, b.clock.read(), n)
	res.SteadyRelayCPU, res.SteadyPGCPU = round(perK(relays.cpu()-rfrom, n), 4), round(use.pg, 4)
	time.Sleep(500 * time.Millisecond)
	b.mu.Lock()
	slices.Sort(b.lat)
	res.SteadySamples = len(b.lat)
	res.CommitToDeliveredP50 = millis(Percentile(b.lat, 50))
	res.CommitToDeliveredP99 = millis(Percentile(b.lat, 99))
	b.committedAt = nil
	b.mu.Unlock()
	return nil
}

func perK(d time.Duration, n int) float64 {
	if n <= 0 {
		return 0
	}
	return d.Seconds() * 1000 / float64(n)
}

// fill writes Events events over Keys keys in a transaction left open.
func (b *relayBench) fill(ctx context.Context) (pgx.Tx, error) {
	msgs := make([]outbox.Message, b.cfg.Events)
	for i := range msgs {
		msgs[i] = outbox.Message{Topic: b.subject, Key: "k" + strconv.Itoa(i%b.cfg.Keys), Payload: b.payload}
	}
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := b.client.PublishMany(ctx, tx, msgs); err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	return tx, nil
}

// commit fills and commits, then analyzes the events.
func (b *relayBench) commit(ctx context.Context) error {
	tx, err := b.fill(ctx)
	if err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	_, err = b.pool.Exec(ctx, `ANALYZE `+b.schema+`.docket_events`)
	return err
}

// baseline publishes Events messages straight to JetStream, 500 at a time
// with async publish, and returns the rate.
func (b *relayBench) baseline(ctx context.Context) (float64, error) {
	p, err := natsrelay.New(natsrelay.Config{URL: b.cfg.NatsURL})
	if err != nil {
		return 0, err
	}
	defer p.Close()
	start := time.Now()
	for i := 0; i < b.cfg.Events; i += 500 {
		batch := make([]relay.Message, min(500, b.cfg.Events-i))
		for j := range batch {
			batch[j] = relay.Message{ID: "b" + strconv.Itoa(i+j), Topic: b.schema + ".base", Key: "k" + strconv.Itoa((i+j)%b.cfg.Keys), Payload: b.payload}
		}
		for _, err := range p.Publish(ctx, batch) {
			if err != nil {
				return 0, err
			}
		}
	}
	return float64(b.cfg.Events) / time.Since(start).Seconds(), nil
}

// consume starts the consumer of the steady phase, which records commit
// -> delivery of the events in committedAt.
func (b *relayBench) consume(ctx context.Context) (jetstream.ConsumeContext, error) {
	b.warm = make(chan struct{}, 1)
	cons, err := b.js.OrderedConsumer(ctx, b.schema, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		return nil, err
	}
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		now := time.Now()
		id := msg.Headers().Get(nats.MsgIdHdr)
		if id == "warm-up" {
			select {
			case b.warm <- struct{}{}:
			default:
			}
			return
		}
		b.mu.Lock()
		if t, ok := b.committedAt[id]; ok {
			b.lat = append(b.lat, now.Sub(t))
			delete(b.committedAt, id)
		}
		b.mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	// The consumer's first delivery was seen to lag by its heartbeat (5s):
	// wait for one warm-up message to arrive before measuring.
	if _, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: b.subject, Header: nats.Header{nats.MsgIdHdr: []string{"warm-up"}}}); err != nil {
		cc.Stop()
		return nil, err
	}
	select {
	case <-b.warm:
	case <-time.After(30 * time.Second):
		cc.Stop()
		return nil, fmt.Errorf("relay bench: the consumer received nothing within 30s")
	}
	return cc, nil
}

// steady publishes at Rate for Duration, one event per transaction handed
// out to several producers (one alone cannot commit 1,000 transactions a
// second here), recording each commit's time while committedAt is set. It
// returns how many it published.
func (b *relayBench) steady(ctx context.Context) (int, error) {
	b.say("steady %d/s for %s from %d producers", b.cfg.Rate, b.cfg.Duration, steadyProducers)
	ticks := make(chan int, b.cfg.Rate)
	var wg sync.WaitGroup
	var published atomic.Int64
	errs := make(chan error, steadyProducers)
	for range steadyProducers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ticks {
				pub, err := b.client.Publish(ctx, b.pool, outbox.Message{Topic: b.subject, Key: "k" + strconv.Itoa(i%b.cfg.Keys), Payload: b.payload})
				if err != nil {
					errs <- err
					return
				}
				published.Add(1)
				b.mu.Lock()
				if b.committedAt != nil {
					b.committedAt[strconv.FormatInt(pub.ID, 10)] = time.Now()
				}
				b.mu.Unlock()
			}
		}()
	}
	tick := time.NewTicker(time.Second / time.Duration(b.cfg.Rate))
	end := time.Now().Add(b.cfg.Duration)
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
	return int(published.Load()), <-errs
}

// relaySet is the relays of one measurement.
type relaySet struct {
	stop func()
	cpu  func() time.Duration // the relays' CPU time so far
}

// start starts n relays: n processes of cfg.Process, or n relays in this
// process.
func (b *relayBench) start(ctx context.Context, n int) (*relaySet, error) {
	if b.cfg.Process == nil {
		return startRelays(ctx, b.pool, b.schema, b.cfg, n)
	}
	var cmds []*exec.Cmd
	s := &relaySet{
		stop: func() {
			for _, c := range cmds {
				_ = c.Process.Signal(os.Interrupt)
			}
			for _, c := range cmds {
				_ = c.Wait()
			}
		},
		cpu: func() time.Duration {
			var d time.Duration
			for _, c := range cmds {
				if _, _, used, ok := procStat(c.Process.Pid); ok {
					d += used
				}
			}
			return d
		},
	}
	for range n {
		c := b.cfg.Process(b.schema)
		c.Stderr = b.cfg.Progress
		if err := c.Start(); err != nil {
			s.stop()
			return nil, err
		}
		cmds = append(cmds, c)
	}
	return s, nil
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// steadyProducers is how many connections publish in the steady phase.
const steadyProducers = 8

// startRelays starts n relays in this process, each with a pool and a
// broker connection of its own, as a process of its own would have.
func startRelays(ctx context.Context, pool *pgxpool.Pool, schema string, cfg RelayConfig, n int) (*relaySet, error) {
	var rs []*relay.Relay
	var pools []*pgxpool.Pool
	stop := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		for _, r := range rs {
			_ = r.Stop(sctx)
		}
		for _, p := range pools {
			p.Close()
		}
	}
	s := &relaySet{stop: stop, cpu: func() time.Duration {
		var ru syscall.Rusage
		if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
			return 0
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}}
	for range n {
		pc := pool.Config().Copy()
		pc.MaxConns = 2
		p, err := pgxpool.NewWithConfig(ctx, pc)
		if err != nil {
			stop()
			return nil, err
		}
		pools = append(pools, p)
		pub, err := natsrelay.New(natsrelay.Config{URL: cfg.NatsURL})
		if err != nil {
			stop()
			return nil, err
		}
		log := slog.New(slog.DiscardHandler)
		if cfg.Progress != nil {
			log = slog.New(slog.NewTextHandler(cfg.Progress, &slog.HandlerOptions{Level: slog.LevelWarn}))
		}
		r, err := relay.New(p, relay.Config{Schema: schema, Publisher: pub, Logger: log})
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
	return s, nil
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
