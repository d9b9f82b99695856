package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	neturl "net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/docketq/docket/internal/engine/metricserver"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
	"github.com/docketq/docket/outbox/relay/kafkarelay"
	"github.com/docketq/docket/outbox/relay/natsrelay"
	"github.com/docketq/docket/outbox/relay/rabbitrelay"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"
)

func relayCommand() *command {
	return &command{
		name:    "relay",
		summary: "publish outbox events to a broker; triage dead events",
		about: `A relay publishes committed events (outbox.Publish) to a broker, in commit
order per key, at least once: NATS JetStream (the default, --nats-url), RabbitMQ
(--amqp-url) or Kafka (--kafka-brokers). Any number of relays may run against
one schema and share its 64 partitions (docs/outbox.md).`,
		verbs: []*command{
			{name: "run", summary: "run relays until interrupted", flags: relayRun,
				about: `Publishes committed events to NATS JetStream (--nats-url, the default),
RabbitMQ (--amqp-url) or Kafka (--kafka-brokers), until interrupted.`},
			{name: "status", summary: "backlog, lag, dead events and live relays", flags: relayStatus},
			{name: "dlq", summary: "list, replay or purge dead events", verbs: []*command{
				{name: "list", summary: "list dead events, oldest first", flags: relayDLQList},
				{name: "replay", summary: "make dead events pending again (all, or the ids given)", args: "[ID...]", flags: relayDLQReplay},
				{name: "purge", summary: "delete dead events unpublished (all, or the ids given)", args: "[ID...]", flags: relayDLQPurge},
			}},
		},
	}
}

// subjectsFlag collects --subject TOPIC=SUBJECT pairs.
type subjectsFlag map[string]string

func (s subjectsFlag) String() string { return "" }

func (s subjectsFlag) Set(v string) error {
	topic, subject, ok := strings.Cut(v, "=")
	if !ok || topic == "" || subject == "" {
		return fmt.Errorf("want TOPIC=SUBJECT, got %q", v)
	}
	s[topic] = subject
	return nil
}

func relayRun(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	url := fs.String("nats-url", "nats://127.0.0.1:4222", "NATS server URL")
	amqpURL := fs.String("amqp-url", "", "publish to RabbitMQ at this amqp:// URL instead of NATS")
	exchange := fs.String("exchange", "", "with --amqp-url: the exchange messages go to, the topic as routing key (default: the default exchange)")
	kafka := fs.String("kafka-brokers", "", "publish to Kafka through these seed brokers, host:port,... instead of NATS")
	subjects := subjectsFlag{}
	fs.Var(subjects, "subject", "map a topic to a NATS subject (with --amqp-url a routing key, with --kafka-brokers a Kafka topic), as TOPIC=SUBJECT (repeatable; default: the topic)")
	n := fs.Int("concurrency", 1, "relays to run in this process; each takes its share of partitions")
	id := fs.String("id", "", "the relays' identity across restarts: restarted with it after a crash, a relay takes its partitions back at once; one live relay per id, a second waits (with --concurrency N, ID/1 ... ID/N; default: the first free of HOSTNAME/SCHEMA/1, /2, ...)")
	batch := fs.Int("batch", 0, "events per publish round (default 500)")
	lease := fs.Duration("lease", 0, "partition lease: a dead relay's events are taken over after it (default 15s)")
	attempts := fs.Int("max-attempts", 0, "permanent refusals before an event is dead-lettered (default 3)")
	refusalBackoff := fs.Duration("refusal-backoff", 0, "wait before a refused event's next attempt, four times longer after each further refusal, at most 1m (default 2s)")
	skip := fs.Bool("skip-dead", false, "let a dead event's later events of its key pass instead of holding them back")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics at host:port/metrics (default: none)")
	// The default is read when starting, not shown in help: it may hold a password.
	listenURL := fs.String("listen-url", "", "PostgreSQL URL for the relays' own connections (LISTEN, and the session that holds the relay's id), straight to the server past a transaction pooler (default $DOCKET_LISTEN_URL, else the database URL; with --pgbouncer and neither, relays poll and hold no id)")
	return func(ctx context.Context, pos []string, _, errOut io.Writer) error {
		if err := wantArgs(pos, 0, ""); err != nil {
			return err
		}
		if *n < 1 || *n > 64 {
			return fmt.Errorf("%w: --concurrency %d outside 1..64", errUsage, *n)
		}
		if *lease != 0 && *lease < 300*time.Millisecond {
			return fmt.Errorf("%w: --lease %s under 300ms", errUsage, *lease)
		}
		if *refusalBackoff < 0 {
			return fmt.Errorf("%w: --refusal-backoff %s: want 0 (the default, 2s) or more", errUsage, *refusalBackoff)
		}
		if *amqpURL != "" && *kafka != "" {
			return fmt.Errorf("%w: --amqp-url and --kafka-brokers: give one broker", errUsage)
		}
		if *exchange != "" && *amqpURL == "" {
			return fmt.Errorf("%w: --exchange needs --amqp-url", errUsage)
		}
		if *listenURL == "" {
			*listenURL = os.Getenv("DOCKET_LISTEN_URL")
		}
		if err := checkRelayFlags(*batch, *attempts, *metricsAddr, *url, *amqpURL, *listenURL); err != nil {
			return err
		}
		if *id != "" && db.pgbouncer && *listenURL == "" {
			return fmt.Errorf("%w: --id with --pgbouncer needs --listen-url: a relay holds its id on a session of its own, straight to PostgreSQL", errUsage)
		}
		ids := make([]string, *n) // empty: the default
		for i := range ids {
			if *id == "" {
				continue
			}
			if ids[i] = *id; *n > 1 {
				ids[i] += "/" + strconv.Itoa(i+1)
			}
			if err := relay.CheckID(ids[i]); err != nil {
				return fmt.Errorf("%w: --id: %v", errUsage, err)
			}
		}
		// One publisher per relay, of the broker chosen; the broker is
		// logged by name, never by URL, which may hold a password.
		broker, newPublisher := "nats", func() (relay.Publisher, error) {
			return natsrelay.New(natsrelay.Config{URL: *url, Subjects: subjects})
		}
		switch {
		case *amqpURL != "":
			broker, newPublisher = "rabbitmq", func() (relay.Publisher, error) {
				return rabbitrelay.New(rabbitrelay.Config{URL: *amqpURL, Exchange: *exchange, RoutingKeys: subjects})
			}
		case *kafka != "":
			var brokers []string
			for b := range strings.SplitSeq(*kafka, ",") {
				if _, _, err := net.SplitHostPort(strings.TrimSpace(b)); err != nil {
					return fmt.Errorf("%w: --kafka-brokers %q: %v", errUsage, b, err)
				}
				brokers = append(brokers, strings.TrimSpace(b))
			}
			broker, newPublisher = "kafka", func() (relay.Publisher, error) {
				return kafkarelay.New(kafkarelay.Config{Brokers: brokers, Topics: subjects})
			}
		}
		client, err := outbox.New(outbox.Config{Schema: db.schema})
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		// Each relay runs one statement at a time; a second connection
		// each leaves room for lease renewal and partition maintenance.
		pool, err := connect(ctx, db.url, int32(2**n), db.pgbouncer)
		if err != nil {
			return err
		}
		defer pool.Close()
		log := slog.New(slog.NewTextHandler(errOut, nil))
		var relays []*relay.Relay
		for _, relayID := range ids {
			pub, err := newPublisher()
			if err != nil {
				return err
			}
			r, err := relay.New(pool, relay.Config{
				ID: relayID, Schema: client.Schema(), Publisher: pub, BatchSize: *batch, LeaseTTL: *lease,
				MaxAttempts: *attempts, RefusalBackoff: *refusalBackoff, SkipDead: *skip, Logger: log,
				// LISTEN needs a session of its own, which a transaction
				// pooler does not keep: through --listen-url, else poll.
				ListenURL: *listenURL, DisableNotify: db.pgbouncer && *listenURL == "",
			})
			if err != nil {
				pub.Close()
				return err // pgx hides a --listen-url's password
			}
			relays = append(relays, r)
		}
		if *metricsAddr != "" {
			reg := metricserver.NewRegistry()
			reg.MustRegister(relay.Collector(relays...))
			srv, err := metricserver.Serve(*metricsAddr, reg, nil, nil)
			if err != nil {
				return err
			}
			defer srv.Close(context.WithoutCancel(ctx))
		}
		for _, r := range relays {
			if err := r.Start(ctx); err != nil {
				return err
			}
		}
		log.Info("docket relay running", "relays", *n, "broker", broker)
		<-ctx.Done()
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		var published uint64
		for _, r := range relays {
			if err := r.Stop(stopCtx); err != nil {
				return err
			}
			published += r.Stats().Published
		}
		log.Info("docket relay stopped", "published", published)
		return nil
	}
}

// checkRelayFlags checks relay run's numbers, address and URLs before
// anything is dialled; an empty string is a flag not given. Its errors
// never repeat a URL, which may hold a password.
func checkRelayFlags(batch, attempts int, metricsAddr, natsURL, amqpURL, listenURL string) error {
	switch {
	case batch < 0:
		return fmt.Errorf("%w: --batch %d: want 0 (the default, 500) or more", errUsage, batch)
	case attempts < 0:
		return fmt.Errorf("%w: --max-attempts %d: want 0 (the default, 3) or more", errUsage, attempts)
	}
	if metricsAddr != "" {
		if err := checkAddr("--metrics-addr", metricsAddr); err != nil {
			return err
		}
	}
	// As the NATS client reads it: servers separated by commas, nats:// the
	// default scheme.
	for server := range strings.SplitSeq(natsURL, ",") {
		server = strings.TrimSpace(server)
		if server == "" {
			continue
		}
		if !strings.Contains(server, "://") {
			server = "nats://" + server
		}
		if _, err := neturl.Parse(server); err != nil {
			return fmt.Errorf("%w: --nats-url: not a server URL (nats://host:port, comma-separated): %v", errUsage, errors.Unwrap(err))
		}
	}
	if amqpURL != "" {
		if _, err := amqp.ParseURI(amqpURL); err != nil {
			return fmt.Errorf("%w: --amqp-url: not an amqp:// or amqps:// URL", errUsage)
		}
	}
	if listenURL != "" {
		if _, err := pgx.ParseConfig(listenURL); err != nil {
			return fmt.Errorf("%w: --listen-url: invalid: %v", errUsage, err) // pgconn hides the password
		}
	}
	return nil
}

func relayDLQList(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	topic := fs.String("topic", "", "only this topic")
	limit := fs.Int("limit", 100, "most events to list")
	asJSON := fs.Bool("json", false, "print JSON")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		if err := wantArgs(pos, 0, ""); err != nil {
			return err
		}
		if *limit < 1 {
			return fmt.Errorf("%w: --limit must be at least 1", errUsage)
		}
		client, pool, err := db.openEvents(ctx)
		if err != nil {
			return err
		}
		defer pool.Close()
		dead, err := client.ListDeadEvents(ctx, pool, *topic, *limit)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(out, deadEventsFrom(dead), true)
		}
		if len(dead) == 0 {
			fmt.Fprintln(out, "no dead events")
		}
		for _, d := range dead {
			blocks := ""
			if d.BlocksKey {
				blocks = "\tblocks key"
			}
			fmt.Fprintf(out, "%d\t%s\tkey=%q seq=%d\t%d attempts\t%s\t%s%s\n", d.ID, d.Topic, d.Key, d.Seq, d.Attempts,
				d.DeadAt.UTC().Format(time.RFC3339), d.LastError, blocks)
		}
		return nil
	}
}

func relayDLQReplay(fs *flag.FlagSet) action {
	return relayDLQAct(fs, "replayed", func(ctx context.Context, r relayDLQ, ids []int64) ([]int64, error) {
		return r.client.ReplayDeadEvents(ctx, r.pool, ids)
	})
}

func relayDLQPurge(fs *flag.FlagSet) action {
	return relayDLQAct(fs, "purged", func(ctx context.Context, r relayDLQ, ids []int64) ([]int64, error) {
		return r.client.PurgeDeadEvents(ctx, r.pool, ids)
	})
}

// relayDLQAct is replay and purge: ids from the arguments (none: all), the
// operation, then a count.
func relayDLQAct(fs *flag.FlagSet, verb string, op func(context.Context, relayDLQ, []int64) ([]int64, error)) action {
	var db dbFlags
	db.register(fs)
	all := fs.Bool("all", false, "act on every dead event (required when no id is given)")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		var ids []int64
		for _, p := range pos {
			id, err := strconv.ParseInt(p, 10, 64)
			if err != nil || id <= 0 {
				return fmt.Errorf("%w: event id %q is not a positive integer", errUsage, p)
			}
			ids = append(ids, id)
		}
		if len(ids) == 0 && !*all {
			return fmt.Errorf("%w: give event ids, or --all", errUsage)
		}
		if len(ids) > 0 && *all {
			return fmt.Errorf("%w: give event ids or --all, not both", errUsage)
		}
		client, pool, err := db.openEvents(ctx)
		if err != nil {
			return err
		}
		defer pool.Close()
		done, err := op(ctx, relayDLQ{client: client, pool: pool}, ids)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s %d dead events\n", verb, len(done))
		return nil
	}
}

// relayDLQ is what replay and purge act through.
type relayDLQ struct {
	client *outbox.Client
	pool   *pgxpool.Pool
}

func relayStatus(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		if err := wantArgs(pos, 0, ""); err != nil {
			return err
		}
		client, pool, err := db.openEvents(ctx)
		if err != nil {
			return err
		}
		defer pool.Close()
		st, err := client.EventStatus(ctx, pool)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(out, eventStatusFrom(st), true)
		}
		lag := "none"
		if !st.OldestPending.IsZero() {
			lag = st.Lag.Round(time.Millisecond).String()
		}
		fmt.Fprintf(out, "pending\t%d\nlag\t%s\ndead\t%d\nblocked keys\t%d\nrelays\t%d\n",
			st.Pending, lag, st.Dead, st.BlockedKeys, st.Relays)
		return nil
	}
}
