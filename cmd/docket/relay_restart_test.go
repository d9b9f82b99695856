package main

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketq/docket/internal/testkit/brokers/natssrv"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/outbox"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// relayLease is the relays' lease in TestRelayRestartResumesAtOnce: the
// default, which a relay restarted under a new identity waits out.
const relayLease = 15 * time.Second

// TestRelayRestartResumesAtOnce runs `docket relay run` processes with the
// default lease while producers publish keyed events, and kills relays
// with SIGKILL:
//
//   - a relay with the default id (the first free hostname/schema/N),
//     restarted with the same arguments;
//   - a relay with --id, restarted with the same --id;
//   - a relay with --id while a second process with the same --id waits:
//     the second publishes nothing (it holds no partitions, is not even
//     registered) until the first is killed, then takes over.
//
// Each time, the events that piled up in the killed relay's partitions are
// all published within half the lease of the restart (or the kill, for the
// waiting process). At the end the JetStream stream holds every committed
// event, each key in sequence.
func TestRelayRestartResumesAtOnce(t *testing.T) {
	ctx := t.Context()
	srv, err := natssrv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	nc, err := nats.Connect(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "events", Subjects: []string{"events.>"},
		Duplicates: 5 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	pool := pgtest.PoolN(t, 6)
	schema := pgtest.Schema(t)
	m, _ := migrate.New(schema)
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	client, _ := outbox.New(outbox.Config{Schema: schema})
	rp := &relayProcs{t: t, pool: pool, schema: schema,
		args: []string{"relay", "run", "--database-url", pgtest.URL(t), "--schema", schema, "--nats-url", srv.URL}}
	defer rp.killAll()

	// Producers: keyed events over 300 keys, every tenth transaction
	// rolled back, until the end of the test.
	var mu sync.Mutex
	committed := map[string]bool{}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for p := range 3 {
		wg.Go(func() {
			for tx := 0; !stop.Load(); tx++ {
				var ids []string
				err := pgx.BeginFunc(ctx, pool, func(dbtx pgx.Tx) error {
					for i := range 5 {
						pub, err := client.Publish(ctx, dbtx, outbox.Message{Topic: "events.orders",
							Key: "key-" + strconv.Itoa((p*101+tx*7+i*13)%300), Payload: []byte("x")})
						if err != nil {
							return err
						}
						ids = append(ids, strconv.FormatInt(pub.ID, 10))
					}
					if tx%10 == 9 {
						return errRolledBack
					}
					return nil
				})
				if errors.Is(err, errRolledBack) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, id := range ids {
					committed[id] = true
				}
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()

	first := rp.start("first")
	rp.waitShared(1)
	firstOwner := rp.owners()[0]
	rp.start("second")
	rp.waitShared(2)

	// The default id: restarted with the same arguments, the relay is
	// again the first free hostname/schema/N, and the same row.
	rp.killAndMeasure(first, firstOwner, func() { rp.start("first, restarted") })
	if host, _ := os.Hostname(); rp.owner(host+"/"+schema+"/1") != firstOwner {
		t.Errorf("the restarted relay is not registered as %s/%s/1 with the first's row", host, schema)
	}

	// An explicit id: restarted with the same --id.
	third := rp.start("third", "--id", "relay-c")
	rp.waitShared(3)
	rp.killAndMeasure(third, rp.owner("relay-c"), func() { third = rp.start("third, restarted", "--id", "relay-c") })

	// A second process with the same --id waits while the first lives,
	// then takes over.
	rp.waitShared(3)
	standby := rp.start("standby", "--id", "relay-c")
	rp.waitLog(standby, "relay id held by another live relay; waiting until it stops")
	var live int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM "`+schema+`".docket_relays WHERE lease_until > now()`).Scan(&live); err != nil || live != 3 {
		t.Fatalf("%d live relays (%v) with one waiting, want 3", live, err)
	}
	rp.killAndMeasure(third, rp.owner("relay-c"), nil)

	stop.Store(true)
	wg.Wait()
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := client.EventStatus(ctx, pool)
		if err == nil && st.Pending == 0 && st.Dead == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events still pending a minute after the producers stopped: %+v %v%s", st, err, rp.logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	checkDelivered(t, readStream(t, js, "events"), committed)
}

// relayProcs runs `docket relay run` processes.
type relayProcs struct {
	t      *testing.T
	pool   *pgxpool.Pool
	schema string
	args   []string
	procs  []*relayProc
}

type relayProc struct {
	name string
	cmd  *exec.Cmd
	log  *syncBuffer
}

// start starts a relay process with extra flags.
func (rp *relayProcs) start(name string, flags ...string) *relayProc {
	rp.t.Helper()
	p := &relayProc{name: name, log: &syncBuffer{}}
	p.cmd = exec.Command(os.Args[0], append(append([]string(nil), rp.args...), flags...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		rp.t.Fatal(err)
	}
	rp.procs = append(rp.procs, p)
	return p
}

func (rp *relayProcs) killAll() {
	for _, p := range rp.procs {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
}

// logs returns every process's output, for a failure message.
func (rp *relayProcs) logs() string {
	var sb strings.Builder
	for _, p := range rp.procs {
		sb.WriteString("\n--- relay " + p.name + ":\n" + p.log.String())
	}
	return sb.String()
}

// poll calls cond every 20 ms until it holds, failing after d.
func (rp *relayProcs) poll(d time.Duration, what string, cond func() (bool, error)) {
	rp.t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			rp.t.Fatalf("%s: not within %s (%v)%s", what, d, err, rp.logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// owners returns the relays holding live partition leases.
func (rp *relayProcs) owners() []string {
	rp.t.Helper()
	rows, err := rp.pool.Query(rp.t.Context(), `SELECT DISTINCT owner::text FROM "`+rp.schema+`".docket_relay_parts
		WHERE lease_until > now() ORDER BY 1`)
	var owners []string
	if err == nil {
		owners, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		rp.t.Fatal(err)
	}
	return owners
}

// owner returns the row id of the live relay registered as name.
func (rp *relayProcs) owner(name string) string {
	rp.t.Helper()
	var id string
	rp.poll(30*time.Second, "relay "+name+" registered", func() (bool, error) {
		err := rp.pool.QueryRow(rp.t.Context(), `SELECT id::text FROM "`+rp.schema+`".docket_relays
			WHERE name = $1 AND lease_until > now()`, name).Scan(&id)
		return err == nil, err
	})
	return id
}

// waitShared waits until n relays hold every partition, each its share.
func (rp *relayProcs) waitShared(n int) {
	rp.t.Helper()
	rp.poll(30*time.Second, strconv.Itoa(n)+" relays sharing the partitions", func() (bool, error) {
		var owners, most, least int
		err := rp.pool.QueryRow(rp.t.Context(), `SELECT count(*), COALESCE(max(n), 0), COALESCE(min(n), 0) FROM (
			SELECT count(*) AS n FROM "`+rp.schema+`".docket_relay_parts WHERE lease_until > now() GROUP BY owner) o`).
			Scan(&owners, &most, &least)
		share := (64 + n - 1) / n
		return err == nil && owners == n && most == share && least >= 64-(n-1)*share, err
	})
}

// waitLog waits until p's output holds text.
func (rp *relayProcs) waitLog(p *relayProc, text string) {
	rp.t.Helper()
	rp.poll(30*time.Second, "relay "+p.name+" logging "+strconv.Quote(text), func() (bool, error) {
		return strings.Contains(p.log.String(), text), nil
	})
}

// killAndMeasure kills p, the relay whose row id is owner, with SIGKILL,
// lets events pile up in its partitions for a second, calls restart (nil:
// another process takes over by itself), and checks that every event of
// those partitions written before the restart is published within half the
// lease.
func (rp *relayProcs) killAndMeasure(p *relayProc, owner string, restart func()) {
	rp.t.Helper()
	ctx := rp.t.Context()
	var parts []int16
	rows, err := rp.pool.Query(ctx, `SELECT part FROM "`+rp.schema+`".docket_relay_parts
		WHERE owner = $1::uuid AND lease_until > now()`, owner)
	if err == nil {
		parts, err = pgx.CollectRows(rows, pgx.RowTo[int16])
	}
	if err != nil || len(parts) == 0 {
		rp.t.Fatalf("partitions of relay %s: %v %v", p.name, parts, err)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		rp.t.Fatal(err)
	}
	_ = p.cmd.Wait()
	killed := time.Now()
	time.Sleep(time.Second)
	var stuck int
	if err := rp.pool.QueryRow(ctx, `SELECT count(*) FROM "`+rp.schema+`".docket_events
		WHERE published_at IS NULL AND dead_at IS NULL AND part = ANY($1)`, parts).Scan(&stuck); err != nil || stuck == 0 {
		rp.t.Fatalf("%d events waiting in the killed relay's partitions (%v), want some", stuck, err)
	}
	from, since := killed, "the kill"
	if restart != nil {
		from, since = time.Now(), "the restart"
		restart()
	}
	rp.poll(relayLease/2, "relay "+p.name+"'s partitions published again", func() (bool, error) {
		var n int
		err := rp.pool.QueryRow(ctx, `SELECT count(*) FROM "`+rp.schema+`".docket_events
			WHERE published_at IS NULL AND dead_at IS NULL AND part = ANY($1) AND created_at < $2`, parts, from).Scan(&n)
		return err == nil && n == 0, err
	})
	rp.t.Logf("relay %s: %d partitions, %d events waiting a second after SIGKILL; all published %s after %s (bound %s), %s after the kill",
		p.name, len(parts), stuck, time.Since(from).Round(time.Millisecond), since, relayLease/2, time.Since(killed).Round(time.Millisecond))
}
