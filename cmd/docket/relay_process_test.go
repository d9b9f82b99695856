package main

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketq/docket/internal/natssrv"
	"github.com/docketq/docket/internal/pgtest"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRelayProcessesSurviveKillAndBrokerRestart runs three `docket relay
// run` processes against a private nats-server while eight producers
// publish over 1,000 keys in transactions of which every tenth rolls back.
// A third of the way in one relay is killed with SIGKILL, two thirds in the
// broker is killed and restarted. Then every committed event must be in the
// stream, no rolled-back one, each id once after de-duplication by
// Nats-Msg-Id, and each key's events in sequence. 20,000 events;
// DOCKET_RELAY_FULL=1 publishes 100,000.
func TestRelayProcessesSurviveKillAndBrokerRestart(t *testing.T) {
	total := 20_000
	if os.Getenv("DOCKET_RELAY_FULL") == "1" {
		total = 100_000
	}
	const keys, producers, perTx = 1000, 8, 100
	ctx := t.Context()
	srv, err := natssrv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	pool := pgtest.PoolN(t, producers+2)
	schema := pgtest.Schema(t)
	m, _ := outbox.NewMigrator(schema)
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	client, _ := outbox.New(outbox.Config{Schema: schema})
	nc, err := nats.Connect(srv.URL, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "events", Subjects: []string{"events.>"},
		Storage: jetstream.FileStorage, Duplicates: 5 * time.Minute}); err != nil {
		t.Fatal(err)
	}

	relays := make([]*exec.Cmd, 3)
	logs := make([]*syncBuffer, 3)
	for i := range relays {
		logs[i] = &syncBuffer{}
		cmd := exec.Command(os.Args[0], "relay", "run", "--database-url", pgtest.URL(t), "--schema", schema,
			"--nats-url", srv.URL, "--lease", "2s")
		cmd.Env = append(os.Environ(), envRunCLI+"=1")
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
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted nats-server at %d produced", done.Load())
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
				t.Fatalf("%d dead events", st.Dead)
			}
			break
		}
		if time.Since(start) > 3*time.Minute {
			t.Fatalf("still pending after 3 minutes: %+v %v\nrelay 1 log:\n%s", st, err, logs[1].String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%d committed, %d rolled back; drained %s after the producers ended", len(committed), len(rolledBack), time.Since(start).Round(time.Millisecond))

	// Read the stream and check it as a consumer de-duplicating by id would.
	stream, _ := js.Stream(ctx, "events")
	info, _ := stream.Info(ctx)
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	last := map[string]int64{}
	read, dups, bad := 0, 0, 0
	for read < int(info.State.Msgs) {
		batch, err := cons.Fetch(5000, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for msg := range batch.Messages() {
			read++
			id := msg.Headers().Get(nats.MsgIdHdr)
			if seen[id] {
				dups++
				continue
			}
			seen[id] = true
			if rolledBack[id] || !committed[id] {
				t.Errorf("event %s delivered but never committed", id)
			}
			key := msg.Headers().Get(relay.HeaderKey)
			seq, _ := strconv.ParseInt(msg.Headers().Get(relay.HeaderSeq), 10, 64)
			if seq != last[key]+1 {
				if bad++; bad < 10 {
					t.Errorf("key %s: seq %d after %d", key, seq, last[key])
				}
			}
			last[key] = seq
		}
		if err := batch.Error(); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != len(committed) {
		t.Errorf("stream holds %d distinct committed events, want %d", len(seen), len(committed))
	}
	t.Logf("stream: %d messages, %d duplicates, %d distinct; %d order violations", read, dups, len(seen), bad)
}

var errRolledBack = errors.New("rolled back on purpose")
