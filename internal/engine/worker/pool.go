package worker

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/queue"
)

// maxClaim bounds one claim batch.
const maxClaim = 1000

// pool is one PoolConfig at run time: a claim loop that feeds a fixed set of
// slot goroutines through a channel. busy counts jobs claimed and not yet
// finished by their handler, so the claim asks for the free slots, and
// while a backlog lasts for the prefetch's depth more, which wait in the
// channel for a slot.
type pool struct {
	w        *Worker
	cfg      PoolConfig
	prefetch *prefetch // read by the claim loop only
	jobs     chan *task
	// limited carries the jobs limits granted, which slots take before
	// any in jobs: each holds one of its limit's places until it ends, so
	// it does not wait behind prefetched jobs.
	limited chan *task
	// handed carries the jobs that serial completions claimed for this
	// pool (see handoff.go), which slots take before any other.
	handed chan *task
	// backlogged says the pool's last claim that took jobs came back
	// full: other ready jobs wait for its slots, so serial completions do
	// not hand their keys on ahead of them.
	backlogged atomic.Bool
	busy       atomic.Int64
	// limitedBusy counts the jobs of limited claimed and not yet finished
	// by their handler; limited claims ask for at most the slots and the
	// prefetch's depth less these, so limited never blocks.
	limitedBusy atomic.Int64
	done        atomic.Int64  // jobs the slots finished, for the prefetch
	slotTime    atomic.Int64  // nanoseconds the slots spent on them
	wake        chan struct{} // claim now: a notification, a promotion, a reap
	freed       chan struct{} // enough slots became free for the next claim
	// claimAt is the busy count at or below which the claim loop can start
	// a claim it waits to start, -1 when it waits for none: a slot that
	// frees wakes the loop only then, not once per job.
	claimAt atomic.Int64
	// limitWake asks for a limited claim only: a limit's wait ran out or
	// one of its places became free.
	limitWake chan struct{}
	// reconnected is set with a wake-up when the listener's connection came
	// back: the database answers again, so a claim that failed need not
	// wait out its retry backoff.
	reconnected atomic.Bool

	// limitTimes says when to ask again for the jobs of limits that held
	// some back or had none ready, and wakes the claim loop then.
	limitTimes *limitTimes
	// ahead holds the jobs of rate limits claimed before their tokens
	// were due, until they are.
	ahead *ahead

	// rewake claims once more rewakeAfter debounce windows after the last
	// notification (see notified).
	rewake      *time.Timer
	rewakeMu    sync.Mutex
	rewakeAt    time.Time
	rewakeArmed bool
}

func newPool(w *Worker, cfg PoolConfig) *pool {
	f := newPrefetch(cfg.Concurrency, cfg.Prefetch, w.hbInterval)
	p := &pool{
		w: w, cfg: cfg, prefetch: f,
		jobs:      make(chan *task, cfg.Concurrency+f.ceiling),
		limited:   make(chan *task, cfg.Concurrency+f.ceiling),
		handed:    make(chan *task, cfg.Concurrency+f.ceiling),
		wake:      make(chan struct{}, 1),
		freed:     make(chan struct{}, 1),
		limitWake: make(chan struct{}, 1),
	}
	p.limitTimes = newLimitTimes(p.wakeLimits)
	p.ahead = newAhead()
	p.rewake = time.AfterFunc(time.Hour, p.rewakeDue)
	p.rewake.Stop()
	return p
}

func (p *pool) start() {
	p.w.slotWG.Add(p.cfg.Concurrency)
	for range p.cfg.Concurrency {
		go p.slot()
	}
	p.w.claimWG.Add(1)
	go p.claimLoop()
}

// signalReconnected asks the claim loop to claim now, also if a failed
// claim's retry wait has not run out: the database is reachable again.
func (p *pool) signalReconnected() {
	p.reconnected.Store(true)
	p.signal()
}

// signal asks the claim loop to claim now.
func (p *pool) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// wakeLimits asks the claim loop for a limited claim now, without an
// ordinary one.
func (p *pool) wakeLimits() {
	select {
	case p.limitWake <- struct{}{}:
	default:
	}
}

// rewakeAfter is how many debounce windows after the last notification the
// pool claims once more. One window covers the jobs whose notification was
// skipped; the second lets those commit a little later than the job that
// was announced.
const rewakeAfter = 2

// notified is called for a notification on one of the pool's queues: claim
// now, and once more rewakeAfter debounce windows after the last
// notification. Enqueuers skip the notifications of jobs inside a window,
// and the last of a burst may commit after the claims the window's
// notification set off; without that claim it would wait for the poll.
func (p *pool) notified(debounce time.Duration) {
	p.limitTimes.notified()
	p.signal()
	if debounce <= 0 {
		return
	}
	wait := rewakeAfter * debounce
	p.rewakeMu.Lock()
	defer p.rewakeMu.Unlock()
	p.rewakeAt = time.Now().Add(wait)
	if !p.rewakeArmed {
		p.rewakeArmed = true
		p.rewake.Reset(wait)
	}
}

// rewakeDue runs when the rewake timer fires: it claims if the last
// notification is old enough, or waits for it to be.
func (p *pool) rewakeDue() {
	p.rewakeMu.Lock()
	if wait := time.Until(p.rewakeAt); wait > 0 {
		p.rewake.Reset(wait)
		p.rewakeMu.Unlock()
		return
	}
	p.rewakeArmed = false
	p.rewakeMu.Unlock()
	p.signal()
}

// claimsInFlight is how many claims of one pool may run at once while a
// backlog lasts. With two, one claim's round trip overlaps the other's and
// the database works on both in parallel; each asks for at most half the
// pool's slots and prefetch (fewer, larger claims cost the database less
// per job: measured, 0.55 -> 0.60 of the SQL-only drain with 100 slots).
const claimsInFlight = 2

type claimResult struct {
	limit, n int
	took     time.Duration
	err      error
}

// claimLoop claims batches sized to the free slots. A wake-up (notification,
// promotion, reap) or the poll interval starts one claim. A full batch (or
// a tenant-capped batch that returned anything) means more is waiting: the
// loop keeps claimsInFlight claims going as slots free up, until a batch
// comes back short.
//
// Beside them, one limited claim at a time asks the limits that govern
// some of the pool's jobs (claimLimits), whenever the pool is woken, a
// limit's wait runs out, or a place of a limit becomes free here (see
// freePlaces): a freed place is taken by the next job of its limit one
// round trip after the run that held it was written, not at the next
// ordinary claim.
func (p *pool) claimLoop() {
	w := p.w
	defer w.claimWG.Done()
	results := make(chan claimResult, claimsInFlight)
	limResults := make(chan claimResult, 1)
	inFlight, reserved := 0, 0
	limInFlight := false
	limWant := true       // ask the limits when the limited claim is free
	wokeInFlight := false // a wake-up arrived while a claim was in flight
	defer func() {
		for ; inFlight > 0; inFlight-- {
			<-results // what they took is handed to the slots, which release it
		}
		if limInFlight {
			<-limResults
		}
		w.places.flush(p)
		p.ahead.flush()
		p.releaseQueued()
		close(p.jobs) // the slots release what is left and exit
	}()
	poll := time.NewTimer(w.poll)
	defer poll.Stop()
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	var errWait time.Duration
	var retryAt time.Time
	// lost counts the claims in a row that failed on a connection closed
	// under them; each is retried at once, up to the pool's size.
	lost := 0
	launch := 1      // claims to start as soon as slots are free
	backlog := false // the last claim came back full: prefetch
	failed := func(err error) {
		if connLost(err) && lost < int(w.db.Config().MaxConns) {
			// A pooled connection from before a restart: the database may
			// answer on the next one, so the claim is not put off.
			lost++
			return
		}
		if errWait == 0 {
			w.log.Warn("claim failed; retrying", slog.String("pool", p.cfg.Name), slog.String("error", err.Error()))
		}
		errWait = min(max(2*errWait, 50*time.Millisecond), w.poll)
		retryAt = time.Now().Add(errWait)
		retry.Reset(errWait)
	}
	for {
		if w.stopping.Load() {
			return
		}
		depth := p.prefetch.depth(p.done.Load(), time.Duration(p.slotTime.Load()))
		// A limited claim may take as many jobs as the slots and the
		// prefetch hold, less the limited ones not yet run: a rate limit
		// whose claims are slow takes what accrued meanwhile in one.
		if limWant && !limInFlight && !time.Now().Before(retryAt) && len(w.limits.load().perTenant) > 0 { // any limit at all
			if most := min(p.cfg.Concurrency+depth-int(p.limitedBusy.Load()), maxClaim); most > 0 {
				limWant, limInFlight = false, true
				perTenant := min(most, max(1, (p.cfg.Concurrency+depth)/claimsInFlight))
				go func() {
					start := time.Now()
					n, err := p.claimLimits(most, perTenant)
					limResults <- claimResult{limit: most, n: n, took: time.Since(start), err: err}
				}()
			}
		}
		perClaim := min(max(1, (p.cfg.Concurrency+depth)/claimsInFlight), maxClaim)
		capacity := p.cfg.Concurrency
		if backlog {
			capacity += depth
		}
		free := capacity - int(p.busy.Load()) - reserved
		// A claim beside one in flight waits for a full batch of free
		// slots: otherwise a backlog is taken in many small claims as
		// slots free one by one, each a round trip (measured: a third of
		// the claims of a 100-slot drain took under 10 jobs).
		need := 1
		if inFlight > 0 {
			need = perClaim
		}
		if launch > 0 && free >= need && inFlight < claimsInFlight && !time.Now().Before(retryAt) {
			limit := min(free, perClaim)
			launch--
			inFlight++
			reserved += limit
			poll.Reset(w.poll) // the next poll is due a poll interval after this claim
			go func() {
				start := time.Now()
				n, err := p.claim(limit)
				results <- claimResult{limit: limit, n: n, took: time.Since(start), err: err}
			}()
			continue
		}
		// Ask the slots for a wake-up once the claim that waits only for
		// them could start. A slot lowers busy, then reads claimAt; the
		// loop sets claimAt, then reads busy: one of the two sees the
		// other, so no freed slot goes unnoticed.
		at := int64(-1)
		if launch > 0 && inFlight < claimsInFlight && !time.Now().Before(retryAt) {
			at = int64(capacity - reserved - need)
		}
		p.claimAt.Store(at)
		if at >= 0 && p.busy.Load() <= at {
			continue
		}
		select {
		case <-w.stopClaims:
			return
		case r := <-limResults:
			limInFlight = false
			if r.err != nil {
				failed(r.err)
				limWant = true
				continue
			}
			if errWait > 0 {
				w.log.Info("claim recovered", slog.String("pool", p.cfg.Name))
				errWait = 0
			}
			lost = 0
			// Jobs were granted: more may be, until a limit holds them back
			// or has none (limitTimes then says when to ask again).
			limWant = limWant || r.n > 0
		case r := <-results:
			inFlight--
			reserved -= r.limit
			if r.err != nil {
				failed(r.err)
				launch = max(launch, 1)
				continue
			}
			if errWait > 0 {
				w.log.Info("claim recovered", slog.String("pool", p.cfg.Name))
				errWait = 0
			}
			lost = 0
			p.prefetch.claimed(r.took)
			backlog = p.cameBackFull(r.n, r.limit)
			if backlog {
				launch = claimsInFlight - inFlight
			} else {
				launch = 0
			}
			// A wake-up that came while claims were in flight may be for a
			// job committed after their snapshots: claim once more.
			if wokeInFlight {
				launch, wokeInFlight = max(launch, 1), false
			}
		case <-p.wake:
			launch, limWant = max(launch, 1), true
			if p.reconnected.Swap(false) {
				retryAt = time.Time{}
			}
			wokeInFlight = wokeInFlight || inFlight > 0
		case <-p.limitWake:
			limWant = true
		case <-poll.C:
			launch, limWant = max(launch, 1), true
			// Re-armed here too, not only when a claim starts: a poll that
			// finds no free slot or both claims in flight starts none, and
			// the pool would then claim again only when woken.
			poll.Reset(w.poll)
		case <-p.freed:
		case <-retry.C:
		}
	}
}

// claim takes up to limit jobs that no limit governs through the ordinary
// claim and hands them to the slots. The claim is not interrupted by Stop,
// so that no job it took goes untracked.
func (p *pool) claim(limit int) (int, error) {
	w := p.w
	plan := w.limits.load().plan(p.cfg.Queues, w.names)
	if len(plan.kinds) == 0 {
		return 0, nil
	}
	queues := w.pauses.active(plan.queues)
	if len(queues) == 0 {
		return 0, nil // every queue of the pool is paused
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.lease)
	start := time.Now()
	var jobs []*core.Job
	sent, err := w.claimOn(ctx, func(db queue.DB) (err error) {
		jobs, err = w.q.Claim(ctx, db, queue.ClaimParams{
			Worker: w.id, Queues: queues, Kinds: plan.kinds, Limit: limit,
			Lease: w.lease, TenantCap: p.cfg.TenantCap,
		})
		return err
	})
	cancel()
	// Whether other ready jobs wait, for the completions of the jobs it
	// took (see handOnFor): said before the slots get them, which may run
	// and complete them at once. A claim that found nothing says no more
	// than that another claim took its candidates first (two in flight,
	// or another worker's), and changes nothing.
	if len(jobs) > 0 {
		p.backlogged.Store(p.cameBackFull(len(jobs), limit))
	}
	// A capped claim runs one statement per queue and may fail after some
	// succeeded: what it took is ours either way.
	p.claimed(start, sent, jobs, err, "", nil)
	return len(jobs), err
}

// claimLimits takes up to most jobs that the limits governing some of the
// pool's jobs grant (see limits.go), asking each limit that may be asked
// now, and hands them to the slots. A per-tenant limit is asked for at
// most perTenant, an ordinary claim's size: its claim looks for jobs
// without a tenant among the queue's first 4 × that many ready jobs. Like
// claim, it is not interrupted by Stop.
func (p *pool) claimLimits(most, perTenant int) (int, error) {
	w := p.w
	took := 0
	var firstErr error
	for _, lc := range w.limits.load().plan(p.cfg.Queues, w.names).limited {
		if took >= most {
			break
		}
		ask := most - took
		if lc.perTenant {
			ask = min(ask, perTenant)
		}
		n, err := p.claimLimited(lc, ask)
		took += n
		if firstErr == nil {
			firstErr = err
		}
	}
	return took, firstErr
}

// claimLimited takes up to most jobs that one limit governs, when the
// limit may be asked, and notes when to ask again if it held jobs back or
// had none ready.
func (p *pool) claimLimited(lc limitedClaim, most int) (int, error) {
	w := p.w
	start := time.Now()
	if !p.limitTimes.begin(lc.name, start) {
		return 0, nil
	}
	defer func() {
		if p.limitTimes.done(lc.name) {
			p.wakeLimits()
		}
	}()
	queues := w.pauses.active(lc.queues)
	if len(queues) == 0 {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.lease)
	var res queue.LimitedClaim
	sent, err := w.claimOn(ctx, func(db queue.DB) (err error) {
		res, err = w.q.ClaimLimited(ctx, db, queue.LimitedClaimParams{
			Limit: lc.name, Worker: w.id, Queues: queues, Kinds: lc.kinds, Max: most, Lease: w.lease,
			PerTenant: lc.perTenant, Ahead: limitRateAhead,
		})
		return err
	})
	cancel()
	p.claimed(start, sent, res.Jobs, err, lc.name, &res)
	switch {
	case err != nil:
	case res.Held:
		if p.limitTimes.held(lc.name, res.Wait, start, time.Now()) {
			p.wakeLimits()
		}
	case len(res.Jobs) == 0:
		p.limitTimes.idle(lc.name, time.Now())
	default:
		p.limitTimes.free(lc.name)
	}
	return len(res.Jobs), err
}

// cameBackFull says whether an ordinary claim that took n of limit jobs
// leaves other ready jobs waiting for the pool's slots: it took all it
// asked for, or, tenant-capped, any (its cap may have left the rest).
func (p *pool) cameBackFull(n, limit int) bool {
	return n == limit || (p.cfg.TenantCap > 0 && n > 0)
}

// claimOn runs claim on a connection acquired for it and returns when it
// got the connection: the claimed jobs' leases are counted from then (see
// track), not from before a wait for one of the pool's connections, which
// behind handlers that write through the pool may take much of a lease on
// a slow network and leave the heartbeat too little of it to renew them
// in. The database counts the lease from its statement, later still.
//
// On a connection, a claim's due sweeps behind the cursors run on it
// before the claim (Queue.runSweeps), not beside it on the pool. Drains
// of 100,000 no-op jobs measured so were no slower than with the claims
// on the pool (two sittings, alternating; one with the sweeps moved back
// beside the claims read a fifth slower, the other equal).
func (w *Worker) claimOn(ctx context.Context, claim func(db queue.DB) error) (time.Time, error) {
	conn, err := w.db.Acquire(ctx)
	if err != nil {
		return time.Now(), err
	}
	defer conn.Release()
	return time.Now(), claim(conn)
}

// claimed records a claim that started at start (its wait for a
// connection included) and sent its statement at sent, and hands the jobs
// it took to the slots; limit names the limit that granted them, if any,
// and granted is that limited claim's answer. The jobs of tenants whose
// places it reports wait for one (places.go).
func (p *pool) claimed(start, sent time.Time, jobs []*core.Job, err error, limit string, granted *queue.LimitedClaim) {
	if err == nil {
		p.noteClaim(start, jobs)
	}
	if len(jobs) == 0 {
		return
	}
	tasks := p.track(sent, jobs, limit)
	if limit == "" {
		p.busy.Add(int64(len(tasks)))
		for _, t := range tasks {
			p.jobs <- t
		}
		return
	}
	p.limitedBusy.Add(int64(len(tasks)))
	var placed []*task
	for i, t := range tasks {
		switch {
		case granted.Places != nil && t.job.Tenant != "":
			t.placed = true
			placed = append(placed, t)
		case granted.Due != nil && granted.Due[i] > 0:
			p.ahead.hold(t, granted.Due[i])
		default:
			p.toSlot(t)
		}
	}
	if granted.Places != nil {
		p.w.places.granted(limit, granted.PlacesSeq, granted.Places, placed)
	}
}

// toSlot hands a claimed job the limit granted to the slots, ahead of the
// others.
func (p *pool) toSlot(t *task) {
	p.busy.Add(1)
	p.limited <- t
}

// noteClaim counts a claim statement that started at start and took jobs
// in the claim metrics and for Config.OnClaim.
func (p *pool) noteClaim(start time.Time, jobs []*core.Job) {
	w := p.w
	took := time.Since(start)
	w.claimLat.add(start, took)
	w.met.claim(p.cfg.Name, took, jobs)
	if w.onClaim != nil {
		w.onClaim(took, len(jobs))
	}
}

// track makes the tasks of jobs claimed by a statement that started at
// start (their leases run from then), granted by limit if named, and
// counts them in flight until they have run. The caller counts them busy
// as it hands them to the slots.
func (p *pool) track(start time.Time, jobs []*core.Job, limit string) []*task {
	w := p.w
	until := start.Add(w.lease).UnixNano()
	tasks := make([]*task, len(jobs))
	for i, j := range jobs {
		t := &task{job: j, kind: w.kinds[j.Kind], pool: p, kick: w.progressKick, limit: limit}
		t.setContext(context.WithCancelCause(w.handlerCtx))
		t.leaseUntil.Store(until)
		tasks[i] = t
	}
	w.inflight.add(tasks)
	return tasks
}

// releaseQueued hands back, at shutdown, the claimed jobs still waiting
// for a slot, without waiting for the slots' running handlers to return.
// The slots release whatever they take from the channel meanwhile.
func (p *pool) releaseQueued() {
	for {
		select {
		case t := <-p.handed:
			p.w.run(t) // stopping: releases it
			p.ran(t)
		case t := <-p.limited:
			p.w.run(t) // stopping: releases it
			p.ran(t)
		case t := <-p.jobs:
			p.w.run(t)
			p.ran(t)
		default:
			return
		}
	}
}

// ran accounts for a claimed job whose run returned, and wakes the claim
// loop when that lets it claim: a limited claim waits for limited jobs to
// end, an ordinary one for claimAt.
func (p *pool) ran(t *task) {
	limited := t.limit != ""
	if limited {
		p.limitedBusy.Add(-1)
	}
	if t.placed {
		p.w.places.ran(t)
	}
	if p.busy.Add(-1) <= p.claimAt.Load() || limited {
		select {
		case p.freed <- struct{}{}:
		default:
		}
	}
}

// slot runs claimed jobs one after the other, limited ones first, until
// the claim loop closes the channel.
func (p *pool) slot() {
	defer p.w.slotWG.Done()
	for {
		t, ok := p.next()
		if !ok {
			return
		}
		began := time.Now()
		// Only runs count for the prefetch's pace: a job lost before it
		// started takes no time, and counted it would read as a quick
		// handler, deepen the prefetch and hold more jobs that a slow
		// database cannot keep leased (measured under 200 ms round trips:
		// claims of 500 held by 16 slots, lost by the hundred).
		if p.w.run(t) {
			p.slotTime.Add(int64(time.Since(began)))
			p.done.Add(1)
		}
		p.ran(t)
	}
}

// next is the next claimed job for a slot: one a serial completion
// handed on or a limit granted if any waits, else whichever comes first.
// It reports false once jobs is closed and limited and handed empty (the
// claim loop sends nothing after closing jobs; a hand-off while stopping
// releases its jobs itself).
func (p *pool) next() (*task, bool) {
	select {
	case t := <-p.handed:
		return t, true
	case t := <-p.limited:
		return t, true
	default:
	}
	select {
	case t := <-p.handed:
		return t, true
	case t := <-p.limited:
		return t, true
	case t, ok := <-p.jobs:
		if ok {
			return t, true
		}
		select {
		case t := <-p.handed:
			return t, true
		case t := <-p.limited:
			return t, true
		default:
			return nil, false
		}
	}
}
