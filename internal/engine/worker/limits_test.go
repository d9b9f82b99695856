package worker

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Kinds of the flow-control tests, run by worker processes.
type flowA struct{}

func (flowA) Kind() string { return "flow_a" }

type flowB struct{}

func (flowB) Kind() string { return "flow_b" }

// flowTenant records its run in flow_runs and sleeps SleepMS.
type flowTenant struct{ SleepMS int }

func (flowTenant) Kind() string { return "flow_tenant" }

// registerFlowKinds registers the flow-control kinds; flow_tenant writes
// (job id, tenant, start, end) to schema.flow_runs through effects.
func registerFlowKinds(reg *handlers.Registry, effects *pgxpool.Pool, schema string) {
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[flowA]) error { return nil }, handlers.KindOpts{})
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[flowB]) error { return nil }, handlers.KindOpts{})
	insert := fmt.Sprintf(`INSERT INTO %s.flow_runs (job_id, tenant, started, ended) VALUES ($1, $2, $3, $4)`, schema)
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[flowTenant]) error {
		start := time.Now()
		select {
		case <-time.After(time.Duration(j.Args.SleepMS) * time.Millisecond):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		_, err := effects.Exec(context.WithoutCancel(ctx), insert, j.ID, j.Tenant, start, time.Now())
		return err
	}, handlers.KindOpts{})
}

// TestRateLimitAcrossProcesses runs three worker processes on a queue where
// kind flow_a is limited to 100 starts a second and flow_b is not: a
// backlog of flow_b drains about as fast as it does, at the same time, in a
// schema with no flow_a jobs at all, and then, with flow_b arriving at
// 1,000/s, flow_a starts at 100/s, 5-second window by window, for 30 s.
func TestRateLimitAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about a minute")
	}
	// The same flow_b backlog drains in two schemas at once, by three
	// worker processes each: one with rate-limited flow_a jobs beside it,
	// one without. Drained side by side, both meet the same load from the
	// rest of the machine, which a measurement before or after would not.
	e, control := setup(t, 8), setup(t, 8)
	ctx := t.Context()
	const rate, bJobs = 100, 30000
	startWorkers := func(on *env) []*proc {
		var ps []*proc
		for range 3 {
			ps = append(ps, startProcess(t, pgtest.URL(t), on.schema, envConc+"=10", envMaxConns+"=4"))
		}
		return ps
	}
	stopWorkers := func(ps []*proc) {
		for _, p := range ps {
			p.signal(syscall.SIGTERM)
		}
		for _, p := range ps {
			if _, err := p.wait(30 * time.Second); err != nil {
				t.Fatalf("worker process: %v", err)
			}
		}
	}
	enqueueN := func(on *env, args enqueue.Item, n int) {
		items := make([]enqueue.Item, n)
		for i := range items {
			items[i] = args
		}
		for len(items) > 0 {
			batch := items[:min(len(items), 5000)]
			items = items[len(batch):]
			if _, err := on.jobs.EnqueueMany(ctx, on.pool, batch); err != nil {
				t.Fatal(err)
			}
		}
	}
	// drainRate is the rate of the flow_b jobs created since since, from
	// their first start to their last finish.
	drainRate := func(on *env, since time.Time) float64 {
		var secs float64
		var n int
		err := on.pool.QueryRow(ctx, on.sql(`SELECT count(*), extract(epoch FROM max(finished_at) - min(started_at))
			FROM {{schema}}.docket_jobs_done WHERE kind = 'flow_b' AND created_at >= $1`), since).Scan(&n, &secs)
		if err != nil || n != bJobs {
			t.Fatalf("flow_b done: %d of %d, %v", n, bJobs, err)
		}
		return float64(n) / secs
	}
	waitNone := func(on *env, kind string, timeout time.Duration) {
		deadline := time.Now().Add(timeout)
		for on.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE kind = $1`, kind) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s jobs left after %s", kind, timeout)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	if err := e.ops.Limits().Set(ctx, e.pool, admin.Limit{Name: "flow_a_rate", Kind: "flow_a", Rate: rate, Per: time.Second}); err != nil {
		t.Fatal(err)
	}
	enqueueN(e, enqueue.Item{Args: flowA{}}, 20000)
	// Best of two trials: a burst of load from the rest of the machine
	// (another package's tests) can slow the side with the limit more than
	// the control, since its claim rounds that ask the limit make two
	// statements where the control's make one. A limiter that really slows
	// the other kind fails both.
	var ps []*proc
	var alone, beside float64
	for trial := 1; ; trial++ {
		var since time.Time
		if err := e.pool.QueryRow(ctx, "SELECT now()").Scan(&since); err != nil {
			t.Fatal(err)
		}
		enqueueN(e, enqueue.Item{Args: flowB{}}, bJobs)
		enqueueN(control, enqueue.Item{Args: flowB{}}, bJobs)
		if ps == nil {
			ps = startWorkers(e)
		}
		cps := startWorkers(control)
		waitNone(control, "flow_b", 2*time.Minute)
		waitNone(e, "flow_b", 2*time.Minute)
		stopWorkers(cps)
		alone, beside = drainRate(control, since), drainRate(e, since)
		if beside >= 0.7*alone || trial == 2 {
			break
		}
		t.Logf("trial %d: flow_b %.0f jobs/s alone, %.0f beside flow_a (%.2f); once more", trial, alone, beside, beside/alone)
	}

	// Then 30 s of flow_a's starts, counted in 5-second windows, while
	// flow_b keeps arriving at 1,000/s: a steady load beside it rather than
	// a backlog drained at full speed, whose pace depends on whatever else
	// the machine runs.
	const windows, window, burst = 6, 5, rate
	produce, stopProducing := context.WithCancel(ctx)
	produced := make(chan error, 1)
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-produce.Done():
				produced <- nil
				return
			case <-tick.C:
			}
			batch := make([]enqueue.Item, 50)
			for i := range batch {
				batch[i] = enqueue.Item{Args: flowB{}}
			}
			if _, err := e.jobs.EnqueueMany(ctx, e.pool, batch); err != nil {
				produced <- err
				return
			}
		}
	}()
	from := time.Now()
	time.Sleep(time.Duration(windows*window+1) * time.Second)
	stopProducing()
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	stopWorkers(ps)

	rows, err := e.pool.Query(ctx, e.sql(`SELECT floor(extract(epoch FROM started_at - $1) / $2)::int AS w, count(*)
		FROM {{schema}}.docket_jobs_done
		WHERE kind = 'flow_a' AND started_at >= $1 GROUP BY 1 ORDER BY 1`), from, window)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[int]int{}
	for rows.Next() {
		var w, n int
		if err := rows.Scan(&w, &n); err != nil {
			t.Fatal(err)
		}
		counts[w] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("flow_b: %.0f jobs/s alone (the control schema, at the same time), %.0f beside rate-limited flow_a (%.2f)", alone, beside, beside/alone)
	t.Logf("flow_a starts per %d s window after the backlogs: %v", window, counts)
	// The bucket's promise is an upper bound: no 5 s window starts more
	// than its 500 tokens plus the burst of 100 the bucket can hold (Burst
	// defaults to Rate), with a quarter burst of slack for a claim whose
	// recorded start and token count straddle a window's edge. Below the rate, a
	// window only shows the machine's load: a worker slowed by other tests
	// starts fewer, and the tokens it left catch up in the next window, up
	// to the burst. So the lower bounds are on the 30 s as a whole, and
	// half the rate in any window (a stalled limiter).
	total := 0
	for w := 0; w < windows; w++ {
		n := counts[w]
		total += n
		if most := rate*window + burst + burst/4; n > most {
			t.Errorf("window %d: %d flow_a started, the bucket allows at most %d", w, n, most)
		}
		if n < rate*window/2 {
			t.Errorf("window %d: %d flow_a started, want at least half the rate (%d)", w, n, rate*window/2)
		}
	}
	if want := rate * window * windows; math.Abs(float64(total-want)) > 0.1*float64(want) {
		t.Errorf("%d flow_a started in %d s, want %d ±10%%", total, windows*window, want)
	}
	// 0.88-0.96 measured on a quiet machine, 0.78 in CI under the race
	// detector with other packages running; an idle limit that stepped over
	// the whole queue on every claim once gave 0.59.
	if beside < 0.7*alone {
		t.Errorf("flow_b drained at %.0f/s beside flow_a, %.0f/s alone: the limited kind slowed it", beside, alone)
	}
}

// TestConcurrencyLimitAcrossProcesses runs three worker processes of 50
// slots on jobs of 20 tenants, one of them with half the jobs, under a
// limit of 5 running jobs per tenant. No tenant ever has more than 5 jobs
// running, by the handlers' own start and end times, nor more than 5 places
// in use by the database sampled throughout; a worker killed with SIGKILL holds its share only
// until its leases expire; every job runs to completion.
func TestConcurrencyLimitAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs worker processes for several seconds")
	}
	e := setup(t, 8)
	ctx := t.Context()
	e.exec(`CREATE TABLE {{schema}}.flow_runs (job_id bigint, tenant text, started timestamptz, ended timestamptz)`)
	const maxRunning, tenants = 5, 20
	if err := e.ops.Limits().Set(ctx, e.pool, admin.Limit{Name: "per_tenant", Kind: "flow_tenant", PerTenant: true, MaxRunning: maxRunning}); err != nil {
		t.Fatal(err)
	}
	var items []enqueue.Item
	for i := range 3000 {
		tenant := i % tenants
		if i%2 == 0 {
			tenant = 0 // half of all jobs
		}
		items = append(items, enqueue.Item{Args: flowTenant{SleepMS: 20 + i%30}, Opts: enqueue.Opts{Tenant: fmt.Sprintf("t%02d", tenant)}})
	}
	if _, err := e.jobs.EnqueueMany(ctx, e.pool, items); err != nil {
		t.Fatal(err)
	}

	// Sample the running jobs per tenant until the test ends.
	var mu sync.Mutex
	sampled, samples := 0, 0
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for sampleCtx.Err() == nil {
			var n int
			// A process may hold more of a tenant's jobs than the places
			// it holds, and runs at most that many (migration 027).
			err := e.pool.QueryRow(sampleCtx, e.sql(`SELECT COALESCE(max(c), 0) FROM (
				SELECT r.tenant, sum(least(r.n, COALESCE(p.places, r.n))) AS c FROM (
					SELECT tenant, locked_by, count(*) AS n FROM {{schema}}.docket_jobs
					WHERE state = 'running' AND kind = 'flow_tenant' GROUP BY 1, 2) r
				LEFT JOIN {{schema}}.docket_limit_places p ON p.name = 'per_tenant' AND p.key = r.tenant AND p.holder = r.locked_by
				GROUP BY r.tenant) s`)).Scan(&n)
			if err == nil {
				mu.Lock()
				sampled, samples = max(sampled, n), samples+1
				mu.Unlock()
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()

	var ps []*proc
	for range 3 {
		ps = append(ps, startProcess(t, pgtest.URL(t), e.schema, envConc+"=50", envLease+"=2000"))
	}
	// Kill one once it runs jobs: its share comes back when its leases expire.
	deadline := time.Now().Add(30 * time.Second)
	for e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE state = 'running' AND locked_by = $1::uuid`, ps[0].id) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first worker process ran no job")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ps[0].kill()
	killedAt := time.Now()
	// A statement the worker sent just before it died still commits: let
	// it, so that what is counted is what the reaper must take back.
	time.Sleep(300 * time.Millisecond)
	stranded := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE state = 'running' AND locked_by = $1::uuid`, ps[0].id)
	// Its jobs leave the running state, and stop counting against their
	// tenants, once their 2-second leases expire and a reaper sees them.
	for e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE state = 'running' AND locked_by = $1::uuid`, ps[0].id) > 0 {
		if time.Since(killedAt) > 30*time.Second {
			t.Fatal("the killed worker's jobs still running 30s after the kill, with 2s leases")
		}
		time.Sleep(10 * time.Millisecond)
	}
	returned := time.Since(killedAt)

	deadline = time.Now().Add(3 * time.Minute)
	for e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE kind = 'flow_tenant'`) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("flow_tenant jobs left after 3 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopSampling()
	wg.Wait()
	for _, p := range ps[1:] {
		p.signal(syscall.SIGTERM)
	}

	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done WHERE kind = 'flow_tenant'`); n != len(items) {
		t.Fatalf("%d of %d jobs done", n, len(items))
	}
	// The killed worker's jobs ran again.
	if rerun := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done WHERE kind = 'flow_tenant' AND attempts > 1`); rerun < stranded {
		t.Fatalf("%d jobs stranded by the killed worker, %d ran again", stranded, rerun)
	}

	// The most runs of one tenant that overlapped, by the handlers' clocks.
	overlap := e.count(`SELECT COALESCE(max(c), 0) FROM (
		SELECT tenant, sum(d) OVER (PARTITION BY tenant ORDER BY at, d) AS c FROM (
			SELECT tenant, started AS at, 1 AS d FROM {{schema}}.flow_runs
			UNION ALL SELECT tenant, ended, -1 FROM {{schema}}.flow_runs) ev) s`)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d samples, most running of one tenant: %d places by the database, %d by the handlers; %d stranded by SIGKILL, returned %s after the kill",
		samples, sampled, overlap, stranded, returned.Round(time.Millisecond))
	if sampled > maxRunning || overlap > maxRunning {
		t.Errorf("a tenant ran %d jobs at once by the database, %d by the handlers; the limit is %d", sampled, overlap, maxRunning)
	}
	if sampled < maxRunning || samples < 100 {
		t.Errorf("%d samples saw at most %d running of one tenant: the heavy tenant should reach the limit", samples, sampled)
	}
}

// A pool's claim splits by the most specific limit: a kind's, else a
// queue's, else the global one; what none governs is the ordinary claim.
func TestLimitPlanPrecedence(t *testing.T) {
	queues, kinds := []string{"q1", "q2"}, []string{"a", "b", "c"}
	for _, c := range []struct {
		name string
		set  limitSet
		want string
	}{
		{"none", limitSet{}, "ordinary [q1 q2] [a b c]"},
		{"kind", limitSet{byKind: map[string]string{"a": "la"}},
			"la [q1 q2] [a]; ordinary [q1 q2] [b c]"},
		{"kind and queue", limitSet{byKind: map[string]string{"a": "la"}, byQueue: map[string]string{"q2": "lq"}},
			"la [q1 q2] [a]; lq [q2] [b c]; ordinary [q1] [b c]"},
		{"global", limitSet{byKind: map[string]string{"b": "lb"}, global: "all", perTenant: map[string]bool{"all": true}},
			"lb [q1 q2] [b]; all(per tenant) [q1 q2] [a c]"},
		{"every kind", limitSet{byKind: map[string]string{"a": "la", "b": "lb", "c": "lc"}},
			"la [q1 q2] [a]; lb [q1 q2] [b]; lc [q1 q2] [c]"},
	} {
		p := c.set.plan(queues, kinds)
		var parts []string
		for _, l := range p.limited {
			name := l.name
			if l.perTenant {
				name += "(per tenant)"
			}
			parts = append(parts, fmt.Sprintf("%s %v %v", name, l.queues, l.kinds))
		}
		if len(p.kinds) > 0 {
			parts = append(parts, fmt.Sprintf("ordinary %v %v", p.queues, p.kinds))
		}
		if got := strings.Join(parts, "; "); got != c.want {
			t.Errorf("%s: plan %q, want %q", c.name, got, c.want)
		}
	}
}

// A place of a full concurrency limit that a run of this process frees
// goes to the next job of the limit when the run's outcome is written, not
// after limitRecheck: with one place, the next job starts a round trip or
// two after the previous one ended.
func TestFreedPlaceGoesToTheNextLimitedJob(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	if err := e.ops.Limits().Set(t.Context(), e.pool, admin.Limit{Name: "one_place", Kind: "test", MaxRunning: 1}); err != nil {
		t.Fatal(err)
	}
	const n = 40
	for range n {
		e.enqueue(testArgs{}, enqueue.Opts{})
	}
	var mu sync.Mutex
	var starts, ends []time.Time
	running, most := 0, 0
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		mu.Lock()
		defer mu.Unlock()
		running++
		most = max(most, running)
		starts = append(starts, time.Now())
		running--
		ends = append(ends, time.Now())
		return nil
	}, handlers.KindOpts{})
	// A poll interval of 5s: only the hand-off explains a quick start.
	e.worker(reg, Config{PollInterval: 5 * time.Second})
	waitFor(t, 30*time.Second, "every limited job run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(starts) == n
	})
	mu.Lock()
	defer mu.Unlock()
	gaps := make([]time.Duration, 0, n-1)
	for i := 1; i < n; i++ {
		gaps = append(gaps, starts[i].Sub(ends[i-1]))
	}
	slices.Sort(gaps)
	p50 := gaps[len(gaps)/2]
	t.Logf("one place, %d jobs: from a job's end to the next one's start p50 %s, max %s", n, p50, gaps[len(gaps)-1])
	if most != 1 {
		t.Errorf("%d limited jobs ran at once in one process, the limit is 1", most)
	}
	if p50 >= limitRecheck {
		t.Errorf("a freed place went to the next job after %s at the median, want less than limitRecheck (%s)", p50, limitRecheck)
	}
}

// A process holds a tenant's places and more of its jobs than places
// (migration 027): it runs at most its places' worth at once and starts
// the next the moment one ends, so a tenant's line of jobs takes about a
// claim per 4 jobs per place, not one per place's job. Two places, 40
// jobs of one tenant: never more than 2 run at once, in at most 10 claims.
func TestPlacesRunHeldJobsWithinThem(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	if err := e.ops.Limits().Set(t.Context(), e.pool, admin.Limit{Name: "two_places", Kind: "test", PerTenant: true, MaxRunning: 2}); err != nil {
		t.Fatal(err)
	}
	const n = 40
	var last int64
	for range n {
		last = e.enqueue(testArgs{}, enqueue.Opts{Tenant: "a"})
	}
	var mu sync.Mutex
	running, most, ran := 0, 0, 0
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		mu.Lock()
		running--
		ran++
		mu.Unlock()
		return nil
	}, handlers.KindOpts{})
	var claims atomic.Int64
	e.worker(reg, Config{
		PollInterval: 5 * time.Second,
		Pools:        []PoolConfig{{Queues: []string{"default"}, Concurrency: 16}},
		OnClaim: func(_ time.Duration, jobs int) {
			if jobs > 0 {
				claims.Add(1)
			}
		},
	})
	e.waitWhere(last, "done", 30*time.Second)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d jobs in %d claims that took any, at most %d at once", ran, claims.Load(), most)
	if most > 2 {
		t.Errorf("%d jobs of one tenant ran at once, its limit is 2", most)
	}
	// A claim that counted each running job as a place took at most 2
	// jobs: 20 claims at least. Held jobs make it about 5, and a few
	// more when places free while a claim is in flight and the next one
	// tops the tenant up by a job or two (11 seen in CI).
	if c := claims.Load(); c >= n/2 {
		t.Errorf("%d jobs of one tenant took %d claims, want fewer than %d: each place's next job waited for a claim", n, c, n/2)
	}
}

// A limited job's outcome is written without waiting out the flush
// interval: the next job of its limit waits for the place it frees. With
// one place and a 300 ms interval, four hand-ons take far less than the
// 1.2 s that waiting would cost.
func TestLimitedOutcomeSkipsFlushInterval(t *testing.T) {
	t.Parallel()
	const jobs, interval = 5, 300 * time.Millisecond
	e := setup(t, 8)
	if err := e.ops.Limits().Set(t.Context(), e.pool, admin.Limit{Name: "one_place", Kind: "test", MaxRunning: 1}); err != nil {
		t.Fatal(err)
	}
	var last int64
	for range jobs {
		last = e.enqueue(testArgs{}, enqueue.Opts{})
	}
	var mu sync.Mutex
	var starts, ends []time.Time
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		mu.Lock()
		defer mu.Unlock()
		starts, ends = append(starts, time.Now()), append(ends, time.Now())
		return nil
	}, handlers.KindOpts{})
	e.worker(reg, Config{FlushInterval: interval, PollInterval: 5 * time.Second})
	e.waitWhere(last, "done", 20*time.Second)
	mu.Lock()
	defer mu.Unlock()
	if took := starts[jobs-1].Sub(ends[0]); took >= 2*interval {
		t.Errorf("%d hand-ons of one place took %s: outcomes waited for the %s flush interval", jobs-1, took, interval)
	}
}

// limitTimes ends a wait for a place when a run of the limit ends here,
// also when the run ended while a claim asked the limit (the claim may
// have counted it); a run's end does not end a wait for a rate's token.
func TestLimitTimesReleasedPlaces(t *testing.T) {
	lt := newLimitTimes(func() {})
	now := time.Now()
	if !lt.begin("l", now) {
		t.Fatal("a fresh limit may not be asked")
	}
	if lt.released("l") {
		t.Fatal("released asks for a claim while one asks the limit")
	}
	lt.held("l", 0, now, now)
	if !lt.done("l") {
		t.Fatal("a claim that found the limit full after a run of it ended meanwhile does not ask again")
	}
	if !lt.begin("l", now) {
		t.Fatal("the limit may not be asked again at once after a place became free during a claim")
	}
	lt.held("l", 0, now, now)
	if lt.done("l") {
		t.Fatal("a claim that found the limit full asks again with no place freed")
	}
	if lt.begin("l", now) {
		t.Fatal("a full limit may be asked before limitRecheck")
	}
	if !lt.released("l") || !lt.begin("l", now) {
		t.Fatal("a run's end does not end the wait for a place")
	}
	lt.held("l", 50*time.Millisecond, now, now)
	lt.done("l")
	if lt.released("l") || lt.begin("l", now) {
		t.Fatal("a run's end ends a wait for a rate's token")
	}
	lt.timer.Stop()
}

// A rate's wait counts from the start of the claim that read the bucket:
// a claim slower than the wait asks again at once, a fast one no sooner
// than limitRateWait after it started.
func TestLimitTimesRateWaitCountsTheClaim(t *testing.T) {
	lt := newLimitTimes(func() {})
	defer lt.timer.Stop()
	now := time.Now()
	if !lt.begin("l", now) {
		t.Fatal("a fresh limit may not be asked")
	}
	if !lt.held("l", time.Millisecond, now.Add(-10*time.Millisecond), now) {
		t.Fatal("a claim that took 10ms for a 1ms wait does not ask again at once")
	}
	lt.done("l")
	if !lt.begin("l", now) {
		t.Fatal("the limit may not be asked at once after a claim slower than its wait")
	}
	if lt.held("l", time.Millisecond, now.Add(-time.Millisecond), now) {
		t.Fatal("a claim of 1ms asks again at once, before limitRateWait")
	}
	lt.done("l")
	if at := now.Add(limitRateWait - time.Millisecond); lt.begin("l", at.Add(-time.Microsecond)) || !lt.begin("l", at) {
		t.Fatalf("the limit may not be asked exactly limitRateWait after the claim started")
	}
}

// A rate-limited job starts at its token, not a claim after it, while the
// limit's claims stall for less than limitRateAhead: claims take the
// tokens due within it and the pool starts each job when its token is due
// (migration 029). Here another transaction holds the limit's bucket for
// 30 ms in every 110, which holds every limited claim that comes then;
// 500/s with a burst of 50 (100 ms), so no token is lost to the cap.
// Claiming only the tokens due, the jobs whose tokens fell due during a
// hold started late: p75 17–24 ms, p99 51–84 ms in three runs; claiming
// ahead, p75 1.1–1.2 ms, p99 3–9 ms.
//
// Not parallel, and not under the race detector: the package's other
// tests and the detector's own cost delay the starts too (p75 11–24 ms
// with the detector beside them, 2–5 ms alone).
func TestRateLimitedJobsStartAtTheirTokens(t *testing.T) {
	if raceDetector {
		t.Skip("times starts within milliseconds")
	}
	e := setup(t, 8)
	const rate, burst, n = 500, 50, 600
	step := time.Second / rate
	if err := e.ops.Limits().Set(t.Context(), e.pool, admin.Limit{
		Name: "test_rate", Kind: "test", Rate: rate, Per: time.Second, Burst: burst,
	}); err != nil {
		t.Fatal(err)
	}
	items := make([]enqueue.Item, n)
	for i := range items {
		items[i] = enqueue.Item{Args: testArgs{}}
	}
	if _, err := e.jobs.EnqueueMany(t.Context(), e.pool, items); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var starts []time.Time
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		mu.Lock()
		defer mu.Unlock()
		starts = append(starts, time.Now())
		return nil
	}, handlers.KindOpts{})
	holding, stopHolding := context.WithCancel(t.Context())
	held := make(chan error, 1)
	go func() {
		held <- func() error {
			for holding.Err() == nil {
				tx, err := e.pool.Begin(holding)
				if err != nil {
					return err
				}
				_, err = tx.Exec(holding, e.sql(`SELECT 1 FROM {{schema}}.docket_limit_buckets WHERE name = 'test_rate' FOR UPDATE`))
				if err == nil {
					time.Sleep(30 * time.Millisecond)
					err = tx.Commit(holding)
				}
				if err != nil {
					_ = tx.Rollback(context.WithoutCancel(holding))
					return nil // cancelled: the test is done
				}
				time.Sleep(80 * time.Millisecond)
			}
			return nil
		}()
	}()
	e.worker(reg, Config{Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 50}}})
	waitFor(t, 30*time.Second, "every limited job run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(starts) == n
	})
	stopHolding()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	// Past the first 100 ms (the burst, and the first claims, which wait
	// for their plans), job k's token is due at t0 + k tokens' time, for
	// the latest t0 that makes no job early: its lateness is its start
	// less that (the job closest to its token counts 0).
	past := starts[burst+rate/10:]
	t0 := past[0]
	for k, s := range past {
		t0 = minTime(t0, s.Add(-time.Duration(k)*step))
	}
	late := make([]time.Duration, len(past))
	for k, s := range past {
		late[k] = s.Sub(t0.Add(time.Duration(k) * step))
	}
	slices.Sort(late)
	p75, p99 := late[len(late)*3/4], late[len(late)*99/100]
	t.Logf("%d jobs at %d/s, claims held 30 ms in every 110: start after the token p75 %s, p99 %s, max %s",
		len(past), rate, p75, p99, late[len(late)-1])
	if p75 > 8*time.Millisecond {
		t.Errorf("a quarter of the jobs started more than %s after their tokens, want at most 8ms", p75)
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// A job claimed ahead of its token reaches the slots no sooner than the
// claim said it was due, and at once when the pool stops claiming: it is
// then released, not run.
func TestAheadHoldsJobsUntilTheirTokens(t *testing.T) {
	t.Parallel()
	p := &pool{limited: make(chan *task, 4)}
	a := newAhead()
	held := time.Now()
	for _, d := range []time.Duration{20 * time.Millisecond, 5 * time.Millisecond} {
		a.hold(&task{pool: p}, d)
	}
	var got []time.Duration
	for range 2 {
		<-p.limited
		got = append(got, time.Since(held))
	}
	if got[0] < 5*time.Millisecond || got[1] < 20*time.Millisecond {
		t.Fatalf("jobs due in 5ms and 20ms reached the slots after %v", got)
	}
	a.hold(&task{pool: p}, time.Hour)
	a.flush()
	select {
	case <-p.limited:
	default:
		t.Fatal("a job due in an hour was not handed to the slots when the pool stopped claiming")
	}
	a.hold(&task{pool: p}, time.Hour)
	if len(p.limited) != 1 || p.busy.Load() != 4 {
		t.Fatalf("after the pool stopped claiming, a job held ahead waits (%d handed, busy %d)", len(p.limited), p.busy.Load())
	}
}
