package faultsuite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/testkit/faultproxy"
	"github.com/docketq/docket/internal/testkit/pgsrv"
	"github.com/docketq/docket/migrate"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults of a SoakConfig.
const (
	DefaultSoakDuration    = 10 * time.Minute
	DefaultSoakRate        = 2000
	DefaultSoakWorkers     = 3
	DefaultSoakConcurrency = 50
	DefaultSoakSchedules   = 1000
	DefaultSoakFaultEvery  = 20 * time.Second
)

// soakLease is the workers' lease in a soak: refusals and freezes last
// twice as long.
const soakLease = 5 * time.Second

// SoakConfig configures Soak. Zero values mean the defaults above.
type SoakConfig struct {
	Duration      time.Duration // how long jobs are offered
	Rate          int           // jobs offered per second
	Workers       int           // worker processes
	Concurrency   int           // handler slots per worker process
	Schedules     int           // schedules kept by the workers; -1 means none
	ScheduleEvery time.Duration // their period: 1 minute, or seconds dividing a minute
	FaultEvery    time.Duration // time between faults
	// Command returns the program a worker process runs: one that calls
	// RunWorker when IsWorker. Required.
	Command func() *exec.Cmd
	// Progress receives a line per fault and every 10 seconds. Nil means
	// none.
	Progress io.Writer
}

// SoakFault is one fault a soak injected.
type SoakFault struct {
	AtSeconds float64 `json:"at_seconds"` // since the soak began offering jobs
	Fault     string  `json:"fault"`
	Worker    int     `json:"worker"` // the worker slot; -1 for the server restart
}

// WorkerRSS is the peak resident set size of a worker process that lived
// the whole soak, in each half.
type WorkerRSS struct {
	Worker      int     `json:"worker"`
	FirstHalfMB float64 `json:"first_half_mb"`
	SecondMB    float64 `json:"second_half_mb"`
}

// SoakResult is what a soak measured and checked.
type SoakResult struct {
	DurationSeconds float64     `json:"duration_seconds"`
	OfferedPerSec   float64     `json:"offered_per_second"`
	DrainSeconds    float64     `json:"drain_seconds"` // after offering stopped
	Counts          Counts      `json:"counts"`
	Faults          []SoakFault `json:"faults"`
	Schedules       int         `json:"schedules"`
	Periods         int         `json:"periods_checked"` // schedule periods checked, each for every schedule
	Ticks           int         `json:"ticks"`           // schedule runs recorded in the checked periods
	DuplicateTicks  int         `json:"duplicate_ticks"` // a schedule's fire recorded more than once, over the whole soak
	RSS             []WorkerRSS `json:"worker_rss"`
	// RecoveredAfterStop is how many jobs were still running, under a
	// lease, when every worker had stopped, and were finished by a worker
	// started afterwards (see recoverLeased).
	RecoveredAfterStop int      `json:"recovered_after_stop"`
	Violations         []string `json:"violations"` // empty when every invariant held
}

// soakItem is the soak's mix, by job number: 10% fail once, 1% always
// (two attempts, then dead), 5% snooze once; 10% carry one of 50 serial
// keys, 5% a unique key of their own; half are transactional. A serial
// key takes the jobs of whole hundreds, so that each key gets the mix (a
// key keeps its head through a retry's backoff: a key that drew only
// failing jobs would move one backoff at a time).
func soakItem(n int) docket.Item {
	w := Work{N: n}
	var o docket.Opts
	switch r := n % 100; {
	case r < 10:
		w.Mode = ModeFlaky
	case r == 10:
		w.Mode, o.MaxAttempts = ModeDoomed, 2
	case r < 16:
		w.Mode = ModeSnooze
	}
	if n%10 == 3 {
		o.SerialKey = fmt.Sprintf("serial-%d", n/100%50)
	}
	if n%20 == 7 {
		o.UniqueKey = fmt.Sprintf("unique-%d", n)
	}
	if n%2 == 0 {
		return docket.Item{Args: Plain{w}, Opts: o}
	}
	return docket.Item{Args: Tx{w}, Opts: o}
}

// soak is one running soak.
type soak struct {
	cfg     SoakConfig
	cluster *pgsrv.Cluster
	db      *pgxpool.Pool
	schema  string
	began   time.Time

	mu      sync.Mutex
	slots   []*Process // the current process of each worker slot
	proxies []*faultproxy.Proxy
	urls    []string
	started []*Process // every process started, for their ids and logs
	killed  map[int]bool
	rss     [][2]int64 // per slot: peak RSS in each half
	faults  []SoakFault
}

// Soak runs a soak on a private PostgreSQL cluster it starts and removes:
// it offers cfg.Rate jobs per second of the soak's mix for cfg.Duration to
// cfg.Workers worker processes, each behind a fault proxy, which also keep
// cfg.Schedules schedules; every cfg.FaultEvery it injects a fault, in
// turn: a reset of every connection, a SIGKILL (of worker 0, started
// again), refused connections for twice the lease, a 15 s blackhole,
// 100 ms ± 50 ms latency for 15 s, a SIGSTOP for twice the lease (on the
// other workers in turn; none lasts more than three quarters of
// cfg.FaultEvery); halfway it restarts the server. Then it lets the
// workers drain, stops them and checks the invariants (Check), that every
// schedule fired exactly once in every whole period, and that no worker's
// RSS grew more than 10% from the first half to the second.
//
// It returns an error if the soak could not run; broken invariants are in
// SoakResult.Violations.
func Soak(ctx context.Context, cfg SoakConfig) (*SoakResult, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	cluster, err := pgsrv.StartCluster(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = cluster.Stop() }()
	pcfg, err := docket.ParsePoolConfig(cluster.URL())
	if err != nil {
		return nil, err
	}
	pcfg.MaxConns = 4
	db, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	s := &soak{cfg: cfg, cluster: cluster, db: db, schema: "soak", killed: map[int]bool{}}
	defer s.cleanup()
	return s.run(ctx)
}

func (c *SoakConfig) defaults() error {
	if c.Command == nil {
		return errors.New("faultsuite: SoakConfig.Command is required")
	}
	c.Duration = or(c.Duration, DefaultSoakDuration)
	c.Rate = or(c.Rate, DefaultSoakRate)
	c.Workers = or(c.Workers, DefaultSoakWorkers)
	c.Concurrency = or(c.Concurrency, DefaultSoakConcurrency)
	c.Schedules = or(c.Schedules, DefaultSoakSchedules)
	c.ScheduleEvery = or(c.ScheduleEvery, time.Minute)
	c.FaultEvery = or(c.FaultEvery, DefaultSoakFaultEvery)
	if c.Schedules < 0 {
		c.Schedules = 0
	}
	if c.Duration < 0 || c.Rate < 1 || c.Workers < 1 || c.Concurrency < 1 || c.FaultEvery < 0 {
		return errors.New("faultsuite: negative duration, or rate, workers or concurrency below 1")
	}
	if e := c.ScheduleEvery; e != time.Minute && (e < time.Second || e%time.Second != 0 || time.Minute%e != 0) {
		return fmt.Errorf("faultsuite: schedule period %s: want 1m or whole seconds that divide a minute", e)
	}
	return nil
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func (s *soak) logf(format string, args ...any) {
	if s.cfg.Progress != nil {
		fmt.Fprintf(s.cfg.Progress, "soak %6.1fs: %s\n", time.Since(s.began).Seconds(), fmt.Sprintf(format, args...))
	}
}

func (s *soak) run(ctx context.Context) (*SoakResult, error) {
	if _, err := s.db.Exec(ctx, "CREATE SCHEMA "+s.schema); err != nil {
		return nil, err
	}
	m, err := migrate.New(s.schema)
	if err != nil {
		return nil, err
	}
	if _, err := m.Up(ctx, s.db); err != nil {
		return nil, err
	}
	if err := CreateTables(ctx, s.db, s.schema); err != nil {
		return nil, err
	}
	ob, err := docket.NewClient(s.db, docket.Config{Schema: s.schema})
	if err != nil {
		return nil, err
	}
	s.began = time.Now()
	for i := range s.cfg.Workers {
		px, url, err := faultproxy.ForPostgres(s.cluster.URL())
		if err != nil {
			return nil, err
		}
		s.proxies, s.urls = append(s.proxies, px), append(s.urls, url)
		s.slots, s.rss = append(s.slots, nil), append(s.rss, [2]int64{})
		if err := s.startSlot(i); err != nil {
			return nil, err
		}
	}
	registered := time.Now()
	s.logf("%d worker processes started with %d schedules", s.cfg.Workers, s.cfg.Schedules)

	// Offer jobs, sample RSS, restart the server halfway, and fault, until
	// the duration is over.
	s.began = time.Now()
	end := s.began.Add(s.cfg.Duration)
	octx, stopOffering := context.WithDeadline(ctx, end)
	defer stopOffering()
	enq := &Enqueuer{DB: s.db, Client: ob, Schema: s.schema, Item: soakItem}
	var wg sync.WaitGroup
	var offerErr error
	wg.Add(3)
	go func() { defer wg.Done(); offerErr = s.offer(octx, enq) }()
	go func() { defer wg.Done(); s.sample(octx) }()
	go func() { defer wg.Done(); s.restartHalfway(octx) }()
	s.inject(octx)
	wg.Wait()
	offered := time.Since(s.began)
	if offerErr != nil && ctx.Err() == nil {
		return nil, offerErr
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	s.heal()
	res := &SoakResult{DurationSeconds: offered.Seconds(), OfferedPerSec: float64(enq.Enqueued()) / offered.Seconds(),
		Schedules: s.cfg.Schedules}
	s.logf("offered %d jobs (%.0f/s); draining", enq.Enqueued(), res.OfferedPerSec)

	// Drain, then wait for the schedules' last whole period to have run.
	drainStart := time.Now()
	if err := s.waitDrained(ctx, 30*time.Minute); err != nil {
		res.Violations = append(res.Violations, err.Error())
	}
	res.DrainSeconds = time.Since(drainStart).Seconds()
	s.logf("drained in %.1fs", res.DrainSeconds)
	if s.cfg.Schedules > 0 {
		s.checkSchedules(ctx, res, registered, s.began.Add(offered))
	}

	for i, p := range s.slots {
		if err := p.Stop(time.Minute); err != nil {
			res.Violations = append(res.Violations, fmt.Sprintf("worker %d: %v", i, err))
		}
	}
	if n, err := WaitSessionsGone(ctx, s.db, 10*time.Second, s.startedIDs()...); err != nil || n != 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("the stopped worker processes left %d server sessions (%v)", n, err))
	}
	c, err := Check(ctx, s.db, s.schema)
	if err != nil {
		return nil, err
	}
	if c.Running > 0 {
		// A worker gives a run up when its lease is about to end by the
		// local clock; a heartbeat already under way may still renew that
		// lease in the database, and the job then stays running until the
		// lease ends and another worker reaps it. In production the other
		// workers do; here they have all stopped, so one more is started.
		for _, line := range s.explainRunning(ctx) {
			s.logf("running after every worker stopped: %s", line)
		}
		res.RecoveredAfterStop = c.Running
		if err := s.recoverLeased(ctx); err != nil {
			res.Violations = append(res.Violations, err.Error())
		}
		if c, err = Check(ctx, s.db, s.schema); err != nil {
			return nil, err
		}
	}
	res.Counts = c
	res.Violations = append(res.Violations, c.Violations()...)
	if c.Running > 0 {
		res.Violations = append(res.Violations, s.explainRunning(ctx)...)
	}
	for i, r := range s.rss {
		if s.killed[i] {
			continue
		}
		w := WorkerRSS{Worker: i, FirstHalfMB: float64(r[0]) / (1 << 20), SecondMB: float64(r[1]) / (1 << 20)}
		res.RSS = append(res.RSS, w)
		if r[1] > r[0]*11/10 {
			res.Violations = append(res.Violations, fmt.Sprintf("worker %d: peak RSS grew from %.1f MB in the first half to %.1f MB in the second, more than 10%%",
				i, w.FirstHalfMB, w.SecondMB))
		}
	}
	res.Faults = s.faults
	if res.Violations == nil {
		res.Violations = []string{}
	}
	return res, nil
}

// recoverLeased waits for the leases of the jobs left running to end,
// then runs one more worker process, without schedules, until no job is
// running or left of the soak's Work kinds, and stops it.
func (s *soak) recoverLeased(ctx context.Context) error {
	var wait time.Duration
	if err := s.db.QueryRow(ctx, `SELECT (COALESCE(extract(epoch FROM max(lease_until) - now()), 0) * 1000)::bigint FROM `+
		s.schema+`.docket_jobs WHERE state = 'running'`).Scan(&wait); err != nil {
		return fmt.Errorf("recovering the jobs left running: %w", err)
	}
	wait = min(max(wait*time.Millisecond, 0), 2*soakLease)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(wait):
	}
	p, err := s.start(s.urls[0], 0)
	if err != nil {
		return fmt.Errorf("recovering the jobs left running: %w", err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		err := s.db.QueryRow(ctx, `SELECT count(*) FROM `+s.schema+`.docket_jobs WHERE state = 'running' OR kind IN ($1, $2)`,
			KindPlain, KindTx).Scan(&n)
		if err == nil && n == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := p.Stop(time.Minute); err != nil {
		return fmt.Errorf("the recovering worker: %w", err)
	}
	if n, err := WaitSessionsGone(ctx, s.db, 10*time.Second, p.ID()); err != nil || n != 0 {
		return fmt.Errorf("the recovering worker left %d server sessions (%v)", n, err)
	}
	return nil
}

// startedIDs returns the worker ids of every process started.
func (s *soak) startedIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, len(s.started))
	for i, p := range s.started {
		ids[i] = p.ID()
	}
	return ids
}

// explainRunning describes the jobs left running after every worker
// stopped: the row, and every log line of any worker process about it.
func (s *soak) explainRunning(ctx context.Context) []string {
	rows, err := s.db.Query(ctx, `SELECT id, kind, attempts, locked_by::text, locked_at, lease_until FROM `+s.schema+
		`.docket_jobs WHERE state = 'running' ORDER BY id LIMIT 5`)
	if err != nil {
		return []string{fmt.Sprintf("listing the running jobs: %v", err)}
	}
	type running struct {
		id           int64
		kind, by     string
		attempts     int
		locked, till time.Time
	}
	var left []running
	for rows.Next() {
		var r running
		if err := rows.Scan(&r.id, &r.kind, &r.attempts, &r.by, &r.locked, &r.till); err != nil {
			rows.Close()
			return []string{fmt.Sprintf("listing the running jobs: %v", err)}
		}
		left = append(left, r)
	}
	rows.Close()
	s.mu.Lock()
	procs := slices.Clone(s.started)
	s.mu.Unlock()
	var out []string
	for _, r := range left {
		msg := fmt.Sprintf("job %d (%s, attempt %d) left running by worker %s, claimed at %s, lease until %s (soak began %s)",
			r.id, r.kind, r.attempts, r.by, r.locked.Format(time.TimeOnly+".000"), r.till.Format(time.TimeOnly+".000"),
			s.began.Format(time.TimeOnly+".000"))
		needle := fmt.Sprintf(`"job_id":%d,`, r.id)
		for _, p := range procs {
			for line := range strings.Lines(p.Stderr()) {
				if strings.Contains(line, needle) || (p.ID() == r.by && strings.Contains(line, "worker stopped")) {
					msg += "\n  " + p.ID() + ": " + strings.TrimSpace(line)
				}
			}
		}
		out = append(out, msg)
	}
	return out
}

// startSlot starts a worker process in slot i, through the slot's proxy.
func (s *soak) startSlot(i int) error {
	p, err := s.start(s.urls[i], s.cfg.Schedules)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slots[i] = p
	return nil
}

// start starts a worker process of the soak's settings on url, keeping
// schedules schedules, and records it among those started.
func (s *soak) start(url string, schedules int) (*Process, error) {
	p, err := Start(s.cfg.Command(), WorkerSpec{URL: url, Schema: s.schema, LeaseMS: int(soakLease.Milliseconds()),
		Concurrency: s.cfg.Concurrency, MaxConns: 10, Schedules: schedules,
		ScheduleEveryMS: int(s.cfg.ScheduleEvery.Milliseconds())})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = append(s.started, p)
	return p, nil
}

// offer enqueues at the configured rate until ctx ends, a batch every
// 100 ms, catching up after a batch that took longer.
func (s *soak) offer(ctx context.Context, enq *Enqueuer) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		due := int(time.Since(s.began).Seconds()*float64(s.cfg.Rate)) - enq.Enqueued()
		if due <= 0 {
			continue
		}
		if err := enq.Enqueue(ctx, min(due, max(s.cfg.Rate/2, 1))); err != nil {
			if ctx.Err() != nil {
				return nil // the batch did not commit: it does not count
			}
			return err
		}
	}
}

// sample records each worker process's peak RSS per half, and logs
// progress every 10 s.
func (s *soak) sample(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	half := s.began.Add(s.cfg.Duration / 2)
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			h := 0
			if now.After(half) {
				h = 1
			}
			s.mu.Lock()
			for i, p := range s.slots {
				if rss, err := p.RSS(); err == nil && rss > s.rss[i][h] {
					s.rss[i][h] = rss
				}
			}
			s.mu.Unlock()
			if now.Sub(last) >= 10*time.Second {
				last = now
				var done, left int
				qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				err := s.db.QueryRow(qctx, "SELECT (SELECT count(*) FROM "+s.schema+".docket_jobs_done), (SELECT count(*) FROM "+s.schema+".docket_jobs)").Scan(&done, &left)
				cancel()
				if err == nil {
					s.logf("%d jobs done, %d in the jobs table", done, left)
				}
			}
		}
	}
}

// restartHalfway restarts the server once, halfway through.
func (s *soak) restartHalfway(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(s.cfg.Duration / 2):
	}
	s.record("server restart", -1)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := s.cluster.Restart(rctx); err != nil {
		s.logf("server restart failed: %v", err)
	}
}

func (s *soak) record(fault string, worker int) {
	s.mu.Lock()
	s.faults = append(s.faults, SoakFault{AtSeconds: time.Since(s.began).Seconds(), Fault: fault, Worker: worker})
	s.mu.Unlock()
	s.logf("%s (worker %d)", fault, worker)
}

// soakFaults is the order in which faults come.
var soakFaults = []string{"reset", "kill -9", "refuse", "blackhole", "latency", "sigstop"}

// inject injects a fault every FaultEvery until ctx ends. Worker 0 is the
// one killed; the other faults go to the other workers in turn.
func (s *soak) inject(ctx context.Context) {
	if s.cfg.FaultEvery == 0 {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(s.cfg.FaultEvery)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ctx.Err() != nil {
			return
		}
		f := soakFaults[i%len(soakFaults)]
		w := 1 + i%max(s.cfg.Workers-1, 1)
		if f == "kill -9" || w >= s.cfg.Workers {
			w = 0
		}
		s.record(f, w)
		px := s.proxies[w]
		s.mu.Lock()
		p := s.slots[w]
		s.mu.Unlock()
		// A fault lasts at most three quarters of the time between faults,
		// so that the next one comes on time.
		hold := func(d time.Duration) {
			select {
			case <-ctx.Done():
			case <-time.After(min(d, s.cfg.FaultEvery*3/4)):
			}
		}
		switch f {
		case "reset":
			px.Cut()
		case "kill -9":
			p.Kill()
			s.killed[w] = true
			if err := s.startSlot(w); err != nil {
				s.logf("restarting worker %d: %v", w, err)
			}
		case "refuse":
			px.Refuse()
			hold(2 * soakLease)
			px.Restore()
		case "blackhole":
			px.Blackhole()
			hold(15 * time.Second)
			px.Restore()
		case "latency":
			px.Delay(100*time.Millisecond, 50*time.Millisecond)
			hold(15 * time.Second)
			px.Delay(0, 0)
		case "sigstop":
			_ = p.Signal(syscall.SIGSTOP)
			hold(2 * soakLease)
			_ = p.Signal(syscall.SIGCONT)
		}
	}
}

// heal ends every fault still on.
func (s *soak) heal() {
	for _, px := range s.proxies {
		px.Restore()
		px.Delay(0, 0)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.slots {
		_ = p.Signal(syscall.SIGCONT)
	}
}

// waitDrained waits until no Work job is left.
func (s *soak) waitDrained(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var n int
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := s.db.QueryRow(qctx, `SELECT count(*) FROM `+s.schema+`.docket_jobs WHERE kind IN ($1, $2)`, KindPlain, KindTx).Scan(&n)
		cancel()
		if err == nil && n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d jobs still in the jobs table %s after offering stopped (%v)", n, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// checkSchedules checks that every schedule fired exactly once in each
// whole period between the workers' start and the end of offering: it
// waits for the last period's runs (spread over five sixths of it), then
// counts the fires recorded in the ticks table.
func (s *soak) checkSchedules(ctx context.Context, res *SoakResult, registered, end time.Time) {
	every := s.cfg.ScheduleEvery
	first := registered.Truncate(every).Add(every)
	last := end.Truncate(every).Add(-every)
	if last.Before(first) {
		res.Violations = append(res.Violations, "the soak was too short to hold a whole schedule period")
		return
	}
	res.Periods = int(last.Sub(first)/every) + 1
	want := res.Periods * s.cfg.Schedules
	q := `SELECT count(*), count(DISTINCT (name, fire)) FROM ` + s.schema + `.ticks WHERE fire BETWEEN $1 AND $2`
	deadline := last.Add(every + 2*time.Minute)
	var n, distinct int
	for {
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := s.db.QueryRow(qctx, q, first, last).Scan(&n, &distinct)
		cancel()
		if err == nil && distinct >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	res.Ticks = n
	if err := s.db.QueryRow(ctx, `SELECT count(*) - count(DISTINCT (name, fire)) FROM `+s.schema+`.ticks`).Scan(&res.DuplicateTicks); err != nil {
		res.Violations = append(res.Violations, err.Error())
	}
	if n != want || distinct != want || res.DuplicateTicks != 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d schedules over %d periods (%s to %s) want %d runs, one each; %d recorded for %d distinct fires; %d fires recorded twice over the soak",
			s.cfg.Schedules, res.Periods, first.Format(time.TimeOnly), last.Format(time.TimeOnly), want, n, distinct, res.DuplicateTicks))
		res.Violations = append(res.Violations, s.missingTicks(ctx, first, last)...)
	}
}

// missingTicks describes up to five fires of the checked periods that no
// run recorded, each with the run of the fire before it: when it was to
// run (its job's run_at), when its last attempt started and finished, and
// that attempt's number.
func (s *soak) missingTicks(ctx context.Context, first, last time.Time) []string {
	q := `WITH want AS (
	SELECT format('tick-%s', lpad(i::text, 4, '0')) AS name, f AS fire
	FROM generate_series(0, $3 - 1) i, generate_series($1::timestamptz, $2::timestamptz, $4::interval) f)
SELECT w.name, w.fire, p.fire, d.run_at, d.started_at, d.finished_at, d.attempts
FROM want w
LEFT JOIN LATERAL (SELECT t.fire, t.job_id FROM ` + s.schema + `.ticks t
	WHERE t.name = w.name AND t.fire < w.fire ORDER BY t.fire DESC LIMIT 1) p ON true
LEFT JOIN ` + s.schema + `.docket_jobs_done d ON d.id = p.job_id
WHERE NOT EXISTS (SELECT 1 FROM ` + s.schema + `.ticks t WHERE t.name = w.name AND t.fire = w.fire)
ORDER BY w.fire, w.name LIMIT 5`
	rows, err := s.db.Query(ctx, q, first, last, s.cfg.Schedules, s.cfg.ScheduleEvery.String())
	if err != nil {
		return []string{fmt.Sprintf("listing the missing schedule runs: %v", err)}
	}
	defer rows.Close()
	var out []string
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format("15:04:05.000")
	}
	for rows.Next() {
		var name string
		var fire time.Time
		var prev, due, started, finished *time.Time
		var attempts *int
		if err := rows.Scan(&name, &fire, &prev, &due, &started, &finished, &attempts); err != nil {
			return append(out, fmt.Sprintf("listing the missing schedule runs: %v", err))
		}
		line := fmt.Sprintf("no run of %s recorded fire %s", name, at(&fire))
		if prev != nil {
			line += fmt.Sprintf("; the run of fire %s was to run at %s, started %s, finished %s", at(prev), at(due), at(started), at(finished))
			if attempts != nil {
				line += fmt.Sprintf(" (attempt %d)", *attempts)
			}
		}
		out = append(out, line)
	}
	if err := rows.Err(); err != nil {
		out = append(out, fmt.Sprintf("listing the missing schedule runs: %v", err))
	}
	return out
}

// cleanup kills what a failed soak left running and closes the proxies.
func (s *soak) cleanup() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.slots {
		if p != nil {
			p.Kill()
		}
	}
	for _, px := range s.proxies {
		px.Close()
	}
}
