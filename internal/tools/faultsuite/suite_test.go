package faultsuite_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/testkit/faultproxy"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/internal/tools/faultsuite"
	"github.com/docketq/docket/migrate"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Sizes of a fault's run: 3 worker processes drain suiteJobs jobs, half
// plain and half transactional, through a fault proxy each. A quarter of
// them are done when the fault hits, so the rest keep every slot busy
// through the fault and after it; more jobs would only lengthen the drain
// that follows.
const (
	suiteJobs    = 8_000
	suiteWorkers = 3
	suiteLease   = 2 * time.Second
	// recoveryJobs are enqueued after the drain for the faulted worker
	// alone, the others stopped: it drains them only if it recovered.
	recoveryJobs = 300
)

// run is one fault's run: a schema of its own on a database, the worker
// processes and their proxies.
type run struct {
	t       *testing.T
	url     string // the database, directly
	db      *pgxpool.Pool
	schema  string
	enq     *faultsuite.Enqueuer
	proxies []*faultproxy.Proxy
	procs   []*faultsuite.Process
	ids     []string // of every worker process started
}

// newRun migrates a new schema on the database at url (db's) and creates
// the harness's tables; migrating made the history partitions, so that no
// worker runs partition DDL during a fault.
func newRun(t *testing.T, url string, db *pgxpool.Pool, schema string) *run {
	t.Helper()
	ctx := t.Context()
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := faultsuite.CreateTables(ctx, db, schema); err != nil {
		t.Fatal(err)
	}
	client, err := docket.NewClient(db, docket.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	r := &run{t: t, url: url, db: db, schema: schema}
	r.enq = &faultsuite.Enqueuer{DB: db, Client: client, Schema: schema}
	t.Cleanup(func() {
		for _, p := range r.procs {
			if t.Failed() {
				t.Logf("worker process %s logs (tail):\n%s", p.ID(), tail(p.Stderr(), 8000))
			}
			p.Kill()
		}
		for _, px := range r.proxies {
			px.Close()
		}
	})
	return r
}

// sharedRun is newRun on a new schema of the package's database.
func sharedRun(t *testing.T) *run {
	t.Helper()
	return newRun(t, pgtest.URL(t), pgtest.PoolN(t, 4), pgtest.Schema(t))
}

// enqueue puts in n more jobs in batches of 2,000.
func (r *run) enqueue(n int) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.t.Context(), 2*time.Minute)
	defer cancel()
	for n > 0 {
		b := min(n, 2000)
		if err := r.enq.Enqueue(ctx, b); err != nil {
			r.t.Fatal(err)
		}
		n -= b
	}
}

// proxy starts a fault proxy to the run's database.
func (r *run) proxy() (*faultproxy.Proxy, string) {
	r.t.Helper()
	px, url, err := faultproxy.ForPostgres(r.url)
	if err != nil {
		r.t.Fatal(err)
	}
	r.proxies = append(r.proxies, px)
	return px, url
}

// start starts a worker process through a proxy of its own and returns
// both.
func (r *run) start() (*faultsuite.Process, *faultproxy.Proxy) {
	r.t.Helper()
	px, url := r.proxy()
	p, err := faultsuite.Start(exec.Command(os.Args[0]), faultsuite.WorkerSpec{
		URL: url, Schema: r.schema, LeaseMS: int(suiteLease.Milliseconds()), Concurrency: 16,
	})
	if err != nil {
		r.t.Fatal(err)
	}
	r.procs = append(r.procs, p)
	r.ids = append(r.ids, p.ID())
	return p, px
}

// count runs a query returning one integer, -1 if it fails (the server may
// be restarting).
func (r *run) count(sql string, args ...any) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	if err := r.db.QueryRow(ctx, strings.ReplaceAll(sql, "{{schema}}", r.schema), args...).Scan(&n); err != nil {
		return -1
	}
	return n
}

// waitFor polls cond every 50ms until it holds, failing the test after
// timeout.
func (r *run) waitFor(timeout time.Duration, what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitDone waits until at least n jobs are done.
func (r *run) waitDone(n int, timeout time.Duration) {
	r.t.Helper()
	r.waitFor(timeout, "jobs done", func() bool {
		return r.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done`) >= n
	})
}

// waitDrained waits until no job is left.
func (r *run) waitDrained(timeout time.Duration) {
	r.t.Helper()
	r.waitFor(timeout, "every job finished", func() bool {
		return r.count(`SELECT count(*) FROM {{schema}}.docket_jobs`) == 0
	})
}

// fault is one fault of the suite: it breaks something while the workers
// drain and returns once it is over, and returns the process that must
// show it recovered by itself.
type fault func(r *run) *faultsuite.Process

// suite runs a fault: enqueue, start the workers, fault once a quarter is
// done, drain, then make the faulted worker alone drain recoveryJobs more,
// stop every worker and check the invariants. It returns the counts.
func (r *run) suite(f fault) faultsuite.Counts {
	r.t.Helper()
	if r.enq.Enqueued() == 0 {
		t0 := time.Now()
		r.enqueue(suiteJobs)
		r.t.Logf("enqueued %d jobs in %s", suiteJobs, time.Since(t0))
	}
	began := time.Now()
	for range suiteWorkers {
		r.start()
	}
	r.t.Logf("workers started in %s", time.Since(began))
	r.waitDone(suiteJobs/4, 2*time.Minute)
	r.t.Logf("%d jobs done after %s; fault", r.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done`), time.Since(began))
	faulted := f(r)
	over := time.Now()
	r.waitDrained(3 * time.Minute)
	r.t.Logf("drained %d jobs in %s (%s after the fault ended)", r.enq.Enqueued(), time.Since(began), time.Since(over))

	for _, p := range r.procs {
		if p != faulted {
			if err := p.Stop(30 * time.Second); err != nil {
				r.t.Error(err)
			}
		}
	}
	r.t.Logf("others stopped after %s", time.Since(began))
	r.enqueue(recoveryJobs)
	r.waitDrained(time.Minute)
	r.t.Logf("recovery jobs drained after %s", time.Since(began))
	if n := r.count(`SELECT count(*) FROM {{schema}}.effects WHERE worker = $1 AND at > $2`, faulted.ID(), over); n < recoveryJobs {
		r.t.Errorf("the faulted worker ran %d jobs after the fault, want at least the %d it was left alone with", n, recoveryJobs)
	}
	if err := faulted.Stop(30 * time.Second); err != nil {
		r.t.Error(err)
	}
	r.t.Logf("stopped after %s", time.Since(began))
	return r.verify()
}

// verify checks, once every worker process stopped, that they left no
// server session behind and the invariants hold.
func (r *run) verify() faultsuite.Counts {
	r.t.Helper()
	ctx := r.t.Context()
	if n, err := faultsuite.WaitSessionsGone(ctx, r.db, 10*time.Second, r.ids...); err != nil || n != 0 {
		r.t.Errorf("the stopped worker processes left %d server sessions (%v)", n, err)
	}
	t0 := time.Now()
	c, err := faultsuite.Check(ctx, r.db, r.schema)
	r.t.Logf("checked in %s", time.Since(t0))
	if err != nil {
		r.t.Fatal(err)
	}
	for _, v := range c.Violations() {
		r.t.Error(v)
	}
	r.t.Logf("%d jobs: %d done, %d dead, %d retried; transactional %d done, %d effects; plain %d done, %d effects (%d ran again)",
		c.Enqueued, c.Done, c.Dead, c.Retried, c.TxDone, c.TxEffects, c.PlainDone, c.PlainEffects, c.PlainEffects-(c.PlainDone-c.PlainMissing))
	return c
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }
