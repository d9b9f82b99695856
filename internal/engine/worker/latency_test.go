package worker

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pickup measures, n times, the time from an enqueue's commit to its
// handler starting on an idle worker.
func pickup(t *testing.T, e *env, started <-chan time.Time, n int) (p50, worst time.Duration) {
	t.Helper()
	var lat []time.Duration
	for range n {
		time.Sleep(5 * time.Millisecond) // let the worker go idle, past the notify debounce
		e.enqueue(testArgs{}, enqueue.Opts{})
		// From the commit's acknowledgement: a commit slowed by a busy disk
		// (CI runs every package at once) is not the worker's latency. The
		// handler may start a hair before the client hears of the commit.
		committed := time.Now()
		select {
		case at := <-started:
			lat = append(lat, max(0, at.Sub(committed)))
		case <-time.After(10 * time.Second):
			t.Fatal("job not picked up in 10s")
		}
	}
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)-1]
}

func startRecorder(e *env, cfg Config) (<-chan time.Time, *Worker) {
	started := make(chan time.Time, 100)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		started <- time.Now()
		return nil
	}, handlers.KindOpts{})
	return started, e.worker(reg, cfg)
}

func TestIdlePickupLatency(t *testing.T) {
	t.Parallel()
	t.Run("notify", func(t *testing.T) {
		t.Parallel()
		e := setup(t, 8)
		// A poll interval of 5s: only a notification explains a quick pickup.
		started, _ := startRecorder(e, Config{PollInterval: 5 * time.Second})
		p50, worst := pickup(t, e, started, 20)
		t.Logf("idle pickup with NOTIFY: p50 %s, max %s", p50, worst)
		if p50 > 50*time.Millisecond || worst > time.Second {
			t.Errorf("pickup with NOTIFY p50 %s max %s: want a few milliseconds", p50, worst)
		}
	})
	t.Run("poll", func(t *testing.T) {
		t.Parallel()
		e := setup(t, 8)
		const poll = 200 * time.Millisecond
		started, _ := startRecorder(e, Config{PollInterval: poll, DisableNotify: true})
		p50, worst := pickup(t, e, started, 10)
		t.Logf("idle pickup by polling every %s: p50 %s, max %s", poll, p50, worst)
		// The slack covers a loaded machine (CI shares two cores with the
		// database); a stalled poll loop would miss by whole intervals.
		if worst > poll+700*time.Millisecond {
			t.Errorf("pickup by polling took up to %s, want within the %s poll interval", worst, poll)
		}
	})
}

// The listener reconnects by itself when its connection is killed; until
// then the pools poll.
func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	started, _ := startRecorder(e, Config{PollInterval: 5 * time.Second})
	listeners := func() int {
		return e.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query = $1`,
			`LISTEN "`+e.jobs.NotifyChannel()+`"`)
	}
	waitFor(t, 5*time.Second, "a LISTEN connection", func() bool { return listeners() == 1 })
	e.exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query = $1`,
		`LISTEN "`+e.jobs.NotifyChannel()+`"`)
	waitFor(t, 5*time.Second, "the listener to reconnect", func() bool {
		return listeners() == 1 && e.logs.contains("LISTEN connection is back")
	})
	p50, worst := pickup(t, e, started, 5)
	t.Logf("pickup after reconnect: p50 %s, max %s", p50, worst)
	if worst > time.Second {
		t.Errorf("pickup after reconnect took %s: notifications are not back", worst)
	}
}

// TestLastJobOfBurstIsNotLeftToThePoll: the enqueuer skips the notification
// of a job inside the debounce window of an announced one, and here that
// job commits after the claims the announcement set off, as the last job
// of a burst can. The pool claims once more two windows after the last
// notification, so the job does not wait for the poll (a minute here).
func TestLastJobOfBurstIsNotLeftToThePoll(t *testing.T) {
	t.Parallel()
	const debounce = time.Second
	e := setup(t, 8)
	jobs, err := enqueue.New(enqueue.Config{Schema: e.schema, NotifyDebounce: debounce})
	if err != nil {
		t.Fatal(err)
	}
	e.jobs = jobs
	started, _ := startRecorder(e, Config{PollInterval: time.Minute})
	announced := time.Now()
	e.enqueue(testArgs{}, enqueue.Opts{})
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the announced job was not picked up")
	}
	tx, err := e.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context())
	if _, err := jobs.Enqueue(t.Context(), tx, testArgs{N: 1}, enqueue.Opts{}); err != nil {
		t.Fatal(err)
	}
	// Commit after the first window: later than a claim one window after
	// the notification, earlier than two.
	time.Sleep(time.Until(announced.Add(debounce * 3 / 2)))
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-started:
		t.Logf("picked up %s after its commit", at.Sub(announced.Add(debounce*3/2)))
	case <-time.After(10 * time.Second):
		t.Fatal("the burst's last job waited for the poll")
	}
}

// TestPickupRightAfterOutage: while the database is unreachable the claim
// loop's retry wait grows to the poll interval. When the listener
// reconnects, the database is back: the pools claim at once instead of
// sleeping out that wait, so a job enqueued during the outage starts right
// after the reconnection, not up to a poll interval later. It runs alone,
// not beside the package's parallel tests: its bound is the target for
// the pickup itself (50 ms), and other tests' load is not the worker's.
func TestPickupRightAfterOutage(t *testing.T) {
	const poll = 4 * time.Second
	e := setup(t, 8)
	px, proxied := viaProxy(t)
	cfg, err := pgxpool.ParseConfig(proxied)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 4
	cfg.ConnConfig.ConnectTimeout = time.Second
	db, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	cut := *e
	cut.pool = db
	var backs timeList
	started, _ := startRecorder(&cut, Config{PollInterval: poll, Logger: slog.New(reconnectLog{e.logs.logger().Handler(), &backs})})
	// Claims run through the proxy while it refuses: enqueue (straight to
	// the database) so that every poll claims and fails, and the retry
	// wait grows to the poll interval.
	px.Refuse()
	e.enqueue(testArgs{}, enqueue.Opts{})
	waitFor(t, 3*poll, "the claims to fail", func() bool { return e.logs.contains("claim failed; retrying") })
	time.Sleep(2 * poll) // the retry wait reaches the poll interval
	px.Restore()
	restored := time.Now()
	waitFor(t, 15*time.Second, "the listener to reconnect", func() bool { return len(backs.all()) > 0 })
	back := backs.all()[0]
	select {
	case at := <-started:
		wait := at.Sub(back)
		t.Logf("the job started %s after the listener reconnected, %s after the database was reachable", wait, at.Sub(restored))
		if wait > 50*time.Millisecond {
			t.Errorf("the job started %s after the listener reconnected, want within 50ms (poll %s)", wait, poll)
		}
	case <-time.After(2 * poll):
		t.Fatal("the job enqueued during the outage did not start")
	}
}
