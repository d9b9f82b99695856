package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketq/docket/internal/testkit/brokers/natssrv"
	"github.com/docketq/docket/internal/testkit/brokers/rabbitsrv"
	"github.com/docketq/docket/internal/testkit/pgsrv"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
	"github.com/docketq/docket/outbox/relay/kafkarelay"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// relayTarget is a broker the relay processes of relayProcesses publish
// to.
type relayTarget struct {
	flags   []string     // the relay run flags that reach it
	restart func() error // kills the broker and starts it again on its data
	// read returns every message the broker holds, in the order a consumer
	// gets them; want is how many distinct events it should find.
	read func(t *testing.T, want int) []delivered
}

// delivered is a message as a consumer read it.
type delivered struct {
	id, key string
	seq     int64
}

// relayProcesses runs three `docket relay run` processes publishing to b
// while eight producers publish total events over 1,000 keys in
// transactions of which every tenth rolls back. A third of the way in one
// relay is killed with SIGKILL, two thirds in the broker is killed and
// restarted. Then every committed event must be in the broker, no
// rolled-back one, each id once after de-duplication by id, and each key's
// events in sequence.
func relayProcesses(t *testing.T, b relayTarget, total int) {
	const keys, producers, perTx = 1000, 8, 100
	ctx := t.Context()
	pool := pgtest.PoolN(t, producers+2)
	schema := pgtest.Schema(t)
	m, _ := migrate.New(schema)
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	client, _ := outbox.New(outbox.Config{Schema: schema})

	relays := make([]*exec.Cmd, 3)
	logs := make([]*syncBuffer, 3)
	for i := range relays {
		logs[i] = &syncBuffer{}
		args := append([]string{"relay", "run", "--database-url", pgtest.URL(t), "--schema", schema, "--lease", "2s"}, b.flags...)
		cmd := exec.Command(os.Args[0], args...)
		cmd.Stdout, cmd.Stderr = logs[i], logs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		relays[i] = cmd
		defer func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}()
	}

	var mu sync.Mutex
	committed := map[string]bool{}
	rolledBack := map[string]bool{}
	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	txs := total / perTx / producers
	for p := range producers {
		wg.Go(func() {
			for tx := range txs {
				rollback := (tx+p)%10 == 9
				var ids []string
				msgs := make([]outbox.Message, perTx)
				for i := range msgs {
					msgs[i] = outbox.Message{Topic: "events.orders", Key: "key-" + strconv.Itoa((p*131+tx*17+i*7)%keys), Payload: []byte("x")}
				}
				err := pgx.BeginFunc(ctx, pool, func(dbtx pgx.Tx) error {
					ps, err := client.PublishMany(ctx, dbtx, msgs)
					if err != nil {
						return err
					}
					for _, pp := range ps {
						ids = append(ids, strconv.FormatInt(pp.ID, 10))
					}
					if rollback {
						return errRolledBack
					}
					return nil
				})
				if err != nil && !errors.Is(err, errRolledBack) {
					errs <- err
					return
				}
				mu.Lock()
				for _, id := range ids {
					if rollback {
						rolledBack[id] = true
					} else {
						committed[id] = true
					}
				}
				mu.Unlock()
				done.Add(perTx)
			}
		})
	}
	waitDone := func(n int64) {
		for done.Load() < n {
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitDone(int64(total / 3))
	if err := relays[0].Process.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGKILLed relay 0 at %d produced", done.Load())
	waitDone(int64(2 * total / 3))
	if err := b.restart(); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted the broker at %d produced", done.Load())
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		st, err := client.EventStatus(ctx, pool)
		if err == nil && st.Pending == 0 {
			if st.Dead != 0 {
				t.Fatalf("%d dead events%s\nrelay 1 log:\n%s", st.Dead, deadErrors(ctx, client, pool), logs[1].String())
			}
			break
		}
		if time.Since(start) > 3*time.Minute {
			t.Fatalf("still pending after 3 minutes: %+v %v%s\nrelay 1 log:\n%s", st, err, deadErrors(ctx, client, pool), logs[1].String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%d committed, %d rolled back; drained %s after the producers ended", len(committed), len(rolledBack), time.Since(start).Round(time.Millisecond))

	checkDelivered(t, b.read(t, len(committed)), committed)
}

// deadErrors lists the last errors of up to three dead events, for a
// failure message: why the broker refused them.
func deadErrors(ctx context.Context, client *outbox.Client, pool *pgxpool.Pool) string {
	dead, err := client.ListDeadEvents(ctx, pool, "", 3)
	if err != nil {
		return fmt.Sprintf("\n(dead events not listed: %v)", err)
	}
	var b strings.Builder
	for _, d := range dead {
		fmt.Fprintf(&b, "\ndead event %d (key %s, %d attempts): %s", d.ID, d.Key, d.Attempts, d.LastError)
	}
	return b.String()
}

// checkDelivered checks what a broker holds, in the order a consumer reads
// it, as a consumer de-duplicating by id would: every committed event, no
// other, each key's events in sequence 1, 2, 3...
func checkDelivered(t *testing.T, msgs []delivered, committed map[string]bool) {
	t.Helper()
	seen := map[string]bool{}
	last := map[string]int64{}
	read, dups, bad := 0, 0, 0
	for _, d := range msgs {
		read++
		if seen[d.id] {
			dups++
			continue
		}
		seen[d.id] = true
		if !committed[d.id] {
			t.Errorf("event %s delivered but never committed", d.id)
		}
		if d.seq != last[d.key]+1 {
			if bad++; bad < 10 {
				t.Errorf("key %s: seq %d after %d", d.key, d.seq, last[d.key])
			}
		}
		last[d.key] = d.seq
	}
	if len(seen) != len(committed) {
		t.Errorf("the broker holds %d distinct committed events, want %d", len(seen), len(committed))
	}
	t.Logf("broker: %d messages, %d duplicates, %d distinct; %d order violations", read, dups, len(seen), bad)
}

// Three relays to a private nats-server with JetStream, de-duplicated by
// Nats-Msg-Id (see relayProcesses). 20,000 events; DOCKET_RELAY_FULL=1
// publishes 100,000.
func TestRelayProcessesSurviveKillAndBrokerRestart(t *testing.T) {
	total := 20_000
	if os.Getenv("DOCKET_RELAY_FULL") == "1" {
		total = 100_000
	}
	srv, err := natssrv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	nc, err := nats.Connect(srv.URL, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "events", Subjects: []string{"events.>"},
		Storage: jetstream.FileStorage, Duplicates: 5 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	relayProcesses(t, relayTarget{
		flags:   []string{"--nats-url", srv.URL},
		restart: srv.Restart,
		read:    func(t *testing.T, _ int) []delivered { return readStream(t, js, "events") },
	}, total)
}

// readStream returns every message of a JetStream stream, in order.
func readStream(t *testing.T, js jetstream.JetStream, name string) []delivered {
	t.Helper()
	ctx := t.Context()
	stream, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var out []delivered
	for len(out) < int(info.State.Msgs) {
		batch, err := cons.Fetch(5000, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for msg := range batch.Messages() {
			seq, _ := strconv.ParseInt(msg.Headers().Get(relay.HeaderSeq), 10, 64)
			out = append(out, delivered{id: msg.Headers().Get(nats.MsgIdHdr), key: msg.Headers().Get(relay.HeaderKey), seq: seq})
		}
		if err := batch.Error(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// Three relays to Kafka, de-duplicated by Docket-Id (see relayProcesses):
// 10,000 events. No Kafka server can be installed on this project's
// machines: the broker is franz-go's kfake in the test process, reached
// over loopback, with its log on disk so that a restart (Close, then a new
// cluster on the same port and directory) keeps what it acknowledged.
func TestRelayProcessesToKafka(t *testing.T) {
	port, err := pgsrv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(port), kfake.DataDir(dir), kfake.SyncWrites(),
		kfake.SeedTopics(8, "events.orders")}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cluster.Close() }()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	relayProcesses(t, relayTarget{
		flags: []string{"--kafka-brokers", addr},
		restart: func() error {
			cluster.Close()
			var err error
			cluster, err = kfake.NewCluster(opts...)
			return err
		},
		read: func(t *testing.T, want int) []delivered {
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("events.orders"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			// Read until every committed event was seen and nothing more
			// comes for 3 s (duplicates may follow), or nothing at all for
			// 30 s (the caller reports what is missing).
			var out []delivered
			ids := map[string]bool{}
			progress := time.Now()
			for {
				ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
				fs := cl.PollFetches(ctx)
				cancel()
				n := 0
				fs.EachRecord(func(r *kgo.Record) {
					n++
					d := delivered{key: string(r.Key)}
					for _, h := range r.Headers {
						switch h.Key {
						case kafkarelay.HeaderID:
							d.id = string(h.Value)
						case relay.HeaderSeq:
							d.seq, _ = strconv.ParseInt(string(h.Value), 10, 64)
						}
					}
					ids[d.id] = true
					out = append(out, d)
				})
				if n > 0 {
					progress = time.Now()
				} else if len(ids) >= want || time.Since(progress) > 30*time.Second {
					return out
				}
			}
		},
	}, 10_000)
}

// Three relays to a private RabbitMQ node, into a durable queue bound to a
// durable topic exchange, de-duplicated by message_id (see
// relayProcesses): 10,000 events.
func TestRelayProcessesToRabbitMQ(t *testing.T) {
	srv, err := rabbitsrv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	const exchange, queue = "docket-events", "docket-events-all"
	declare := func() (*amqp.Connection, *amqp.Channel) {
		conn, err := amqp.Dial(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		if err := ch.ExchangeDeclare(exchange, "topic", true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		if err := ch.QueueBind(queue, "events.#", exchange, false, nil); err != nil {
			t.Fatal(err)
		}
		return conn, ch
	}
	conn, _ := declare()
	conn.Close()
	relayProcesses(t, relayTarget{
		flags:   []string{"--amqp-url", srv.URL, "--exchange", exchange},
		restart: srv.Restart,
		read: func(t *testing.T, _ int) []delivered {
			conn, ch := declare()
			defer conn.Close()
			q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := ch.Qos(1000, 0, false); err != nil {
				t.Fatal(err)
			}
			msgs, err := ch.Consume(queue, "", true, true, false, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			var out []delivered
			for len(out) < q.Messages {
				select {
				case m := <-msgs:
					key, _ := m.Headers[relay.HeaderKey].(string)
					seq, _ := strconv.ParseInt(fmt.Sprint(m.Headers[relay.HeaderSeq]), 10, 64)
					out = append(out, delivered{id: m.MessageId, key: key, seq: seq})
				case <-time.After(10 * time.Second):
					t.Fatalf("%d of %d messages read from %s", len(out), q.Messages, queue)
				}
			}
			return out
		},
	}, 10_000)
}

var errRolledBack = errors.New("rolled back on purpose")
