package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/testkit/faultproxy"
	"github.com/docketq/docket/internal/testkit/pgsrv"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// reconnectLog passes records on to a handler and notes when the listener
// said its connection was back.
type reconnectLog struct {
	slog.Handler
	back *timeList
}

func (h reconnectLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "LISTEN connection is back" {
		h.back.add(r.Time)
	}
	return h.Handler.Handle(ctx, r)
}

func (h reconnectLog) WithAttrs(a []slog.Attr) slog.Handler {
	return reconnectLog{h.Handler.WithAttrs(a), h.back}
}

func (h reconnectLog) WithGroup(name string) slog.Handler {
	return reconnectLog{h.Handler.WithGroup(name), h.back}
}

type timeList struct {
	mu sync.Mutex
	at []time.Time
}

func (l *timeList) add(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at = append(l.at, t)
}

func (l *timeList) all() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.at)
}

// TestFaultPickupAfterRestart restarts a private PostgreSQL under a steady
// load of single jobs (one enqueued every 10 ms, each in its own
// transaction; enqueues that fail while the server is down are retried),
// with every connection of the worker's pool used just before. The first
// successful claim comes within 50 ms of the listener's reconnection (a
// claim that fails on a connection from before the restart is retried at
// once, not after the retry wait the outage grew), no job committed after
// the restart waits longer than the poll interval to start, and every job
// committed runs once.
func TestFaultPickupAfterRestart(t *testing.T) {
	ctx := t.Context()
	cluster, err := pgsrv.StartCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	newPool := func(conns int32) *pgxpool.Pool {
		cfg, err := pgxpool.ParseConfig(cluster.URL())
		if err != nil {
			t.Fatal(err)
		}
		cfg.MaxConns = conns
		cfg.ConnConfig.ConnectTimeout = time.Second
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return pool
	}
	pool := newPool(10)
	const schema = "restart"
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	e := setupOn(t, pool, schema)
	producerDB := newPool(4) // the enqueuer's connections are not the worker's

	var (
		mu      sync.Mutex
		started = map[int64]time.Time{} // by job id
		runs    = map[int64]int{}
		byN     = map[int]int64{} // the job id of each acknowledged enqueue
		acked   = map[int]time.Time{}
	)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if runs[j.ID]++; runs[j.ID] == 1 {
			started[j.ID] = now
		}
		return nil
	}, handlers.KindOpts{})
	var back, claims timeList
	const poll = time.Second
	e.worker(reg, Config{
		PollInterval: poll,
		Logger:       slog.New(reconnectLog{e.logs.logger().Handler(), &back}),
		OnClaim:      func(time.Duration, int) { claims.add(time.Now()) },
	})

	// The producer: one job every 10 ms until stop, each acknowledged
	// commit timed.
	stop := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			for {
				cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				res, err := e.jobs.Enqueue(cctx, producerDB, testArgs{N: n}, enqueue.Opts{})
				cancel()
				if err == nil {
					mu.Lock()
					byN[n], acked[n] = res.ID, time.Now()
					mu.Unlock()
					break
				}
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	time.Sleep(time.Second) // steady state
	// Every connection of the worker's pool was used just now, as on a
	// busy worker: pgxpool does not ping a connection idle for less than
	// a second before handing it out, so after the restart each is found
	// dead by the first statement sent on it. The heartbeat keeps one of
	// them.
	var held []*pgxpool.Conn
	for range pool.Config().MaxConns - 1 {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	for _, c := range held {
		c.Release()
	}
	restartFrom := time.Now()
	if err := cluster.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	time.Sleep(3 * time.Second)
	close(stop)
	<-produced

	waitFor(t, 10*time.Second, "every acknowledged job to start", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range byN {
			if runs[id] == 0 {
				return false
			}
		}
		return true
	})
	time.Sleep(200 * time.Millisecond) // a second run would show by now
	mu.Lock()
	defer mu.Unlock()
	for id, n := range runs {
		if n > 1 {
			t.Errorf("job %d ran %d times", id, n)
		}
	}
	var after []time.Duration
	for n, id := range byN {
		if acked[n].After(restarted) {
			after = append(after, max(0, started[id].Sub(acked[n])))
		}
	}
	slices.Sort(after)
	if len(after) < 100 {
		t.Fatalf("%d jobs committed after the restart, want a few seconds' worth", len(after))
	}
	var reconnected time.Time
	for _, at := range back.all() {
		if at.After(restartFrom) {
			reconnected = at
			break
		}
	}
	if reconnected.IsZero() {
		t.Fatal("the listener did not say it was back after the restart")
	}
	var firstClaim time.Duration = -1
	for _, at := range claims.all() {
		if !at.Before(reconnected) {
			firstClaim = at.Sub(reconnected)
			break
		}
	}
	pct := func(p int) time.Duration { return after[(len(after)-1)*p/100] }
	t.Logf("restart took %s; the listener was back %s after it; first claim %s after that; "+
		"%d jobs committed after the restart: pickup p50 %s, p95 %s, p99 %s, max %s",
		restarted.Sub(restartFrom), reconnected.Sub(restarted), firstClaim, len(after), pct(50), pct(95), pct(99), after[len(after)-1])
	if firstClaim < 0 || firstClaim > 50*time.Millisecond {
		t.Errorf("the first claim came %s after the listener was back, want within 50ms", firstClaim)
	}
	if worst := after[len(after)-1]; worst > poll {
		t.Errorf("a job committed after the restart waited %s to start, more than the poll interval %s", worst, poll)
	}
}

// connLost tells a connection closed under a statement from a database
// that cannot be reached.
func TestConnLost(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Severity: "FATAL", Code: "57P01"}, true},
		{fmt.Errorf("batch: %w", &pgconn.PgError{Severity: "FATAL", Code: "57P02"}), true},
		{io.ErrUnexpectedEOF, true},
		{&pgconn.PgError{Code: "57P03"}, false},
		{&pgconn.PgError{Code: "40001"}, false},
		{&pgconn.ConnectError{}, false},
		{context.DeadlineExceeded, false},
	} {
		if got := connLost(c.err); got != c.want {
			t.Errorf("connLost(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// A pooled connection reset under a statement (a crashed server, a
// middlebox that dropped its state) is lost, as one the server closed is:
// the next statement may get a connection that works.
func TestConnLostOnReset(t *testing.T) {
	ctx := t.Context()
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.New(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	u.Host = proxy.Addr()
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	proxy.Cut()
	_, err = conn.Exec(ctx, "SELECT 1")
	if err == nil {
		t.Fatal("a statement on a reset connection succeeded")
	}
	if !connLost(err) {
		t.Errorf("connLost(%v) = false after a reset, want true", err)
	}
}
