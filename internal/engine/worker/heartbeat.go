package worker

import (
	"context"
	"log/slog"
	"math"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/jackc/pgx/v5/pgxpool"
)

// heartbeat extends the leases of all of this process's in-flight runs with
// one statement per interval, each matched by its claim. Runs missing from
// the result were reaped (this process was too slow or cut off) and may run
// again elsewhere or here: their handlers are cancelled and their outcomes
// dropped. When the database cannot be reached, the leaseWatch gives up the
// runs whose lease runs out.
//
// The same statement writes the progress handlers reported since the last
// one (handlers.SetProgress) and reports the runs whose job an operator
// asked to cancel, whose handlers are then cancelled (the NOTIFY of the
// request usually comes first; this is the fallback when it is lost). A
// reported progress brings the next heartbeat forward, to at most
// progressEvery after the previous one: progress is written within about
// a second, at the cost of at most one heartbeat per progressEvery while
// handlers report it, never one per report.
//
// The heartbeat keeps a connection of the pool for its statements (see
// keptConn): handlers that write through the same pool would otherwise
// make each beat wait for a connection behind their statements, on a slow
// network past the end of every lease it was to renew.
type heartbeat struct {
	loop
	w    *Worker
	conn keptConn
}

// progressEvery is the shortest time between two heartbeats brought
// forward by reported progress (capped by the heartbeat interval).
const progressEvery = time.Second

// start takes the heartbeat's connection before the pools claim (their
// handlers may fill the pool at once) and starts the beats. Start's own
// statements just left one idle; if the application took it meanwhile,
// Start waits for one at most a second, and a connection not got now is
// asked for at the first beat.
func (h *heartbeat) start(ctx context.Context) {
	h.conn = keptConn{db: h.w.db, keep: h.w.db.Config().MaxConns >= keepConnMin}
	actx, cancel := context.WithTimeout(ctx, min(h.w.hbInterval, time.Second))
	_ = h.conn.acquire(actx)
	cancel()
	h.run(ctx, h.beats)
}

func (h *heartbeat) beats(bg context.Context) {
	w := h.w
	t := time.NewTicker(w.hbInterval)
	defer t.Stop()
	every := min(progressEvery, w.hbInterval)
	early := time.NewTimer(time.Hour)
	early.Stop()
	var (
		tasks    []*task
		runs     []queue.Run
		progress []queue.Progress
		sent     []*task // the tasks of progress, in order
		owned    = map[int64]struct{}{}
		failed   bool
		armed    bool // early is set for a progress beat
		last     time.Time
	)
	for {
		select {
		case <-bg.Done():
			early.Stop()
			h.conn.release()
			return
		case <-t.C:
		case <-w.progressKick:
			if armed {
				continue
			}
			if wait := time.Until(last.Add(every)); wait > 0 {
				early.Reset(wait)
				armed = true
				continue
			}
		case <-early.C:
			armed = false
		}
		if armed {
			// This beat writes the pending progress too.
			early.Stop()
			armed = false
		}
		tasks = w.inflight.snapshot(tasks[:0])
		if len(tasks) == 0 {
			continue
		}
		runs, progress, sent = runs[:0], progress[:0], sent[:0]
		first := int64(math.MaxInt64) // the earliest local end of a lease renewed
		for _, t := range tasks {
			runs = append(runs, queue.RunOf(t.job))
			if p := t.progress.Swap(nil); p != nil {
				progress, sent = append(progress, *p), append(sent, t)
			}
			first = min(first, t.leaseUntil.Load())
		}
		start := time.Now()
		last = start
		ctx, cancel := context.WithTimeout(bg, w.beatTimeout(start, first))
		beat, err := h.beat(ctx, runs, progress)
		cancel()
		if err != nil {
			if !failed {
				w.log.Warn("heartbeat failed; will retry", slog.Int("jobs", len(tasks)), slog.String("error", err.Error()))
			}
			failed = true
			// Keep the progress for the next heartbeat, unless newer came.
			for i, t := range sent {
				p := progress[i]
				t.progress.CompareAndSwap(nil, &p)
			}
			clear(tasks)
			clear(sent)
			continue
		}
		if failed {
			w.log.Info("heartbeat recovered", slog.Int("jobs", len(tasks)))
			failed = false
		}
		clear(owned)
		for _, id := range beat.Held {
			owned[id] = struct{}{}
		}
		until := start.Add(w.lease).UnixNano()
		for _, t := range tasks {
			if _, ok := owned[t.job.ID]; ok {
				t.leaseUntil.Store(until)
				continue
			}
			// Missing: finished meanwhile (its outcome was just written) or
			// lost. A finished run is no longer in the in-flight set.
			if w.inflight.has(t) {
				w.lose(t, "lease lost: the job was reaped")
			}
		}
		for _, id := range beat.Cancel {
			w.cancelRequested(id)
		}
		clear(tasks)
		clear(sent)
	}
}

// beat runs one heartbeat statement on the kept connection (on the pool
// when none is kept). A kept connection closed under it (a restart, a
// reset) is let go and the statement tried again at once on another, up
// to the pool's size (after a restart each of the pool's idle connections
// may fail its first statement too), so that the leases are renewed in
// this beat.
func (h *heartbeat) beat(ctx context.Context, runs []queue.Run, progress []queue.Progress) (queue.Beat, error) {
	w := h.w
	for try := 1; ; try++ {
		db, err := h.conn.get(ctx)
		if err != nil {
			return queue.Beat{}, err
		}
		beat, err := w.q.Heartbeat(ctx, db, w.id, runs, w.lease, progress)
		if err == nil || !h.conn.failed(err) || !connLost(err) || try >= int(w.db.Config().MaxConns) || ctx.Err() != nil {
			return beat, err
		}
	}
}

// beatTimeout is how long a heartbeat starting at start may wait for its
// answer when the first of the leases it renews ends at first (local
// clock, unix ns): at least an interval, and up to when the watchdog gives
// that run up. An answer that comes later than the next beat was due
// still saves every run it renews, and on a slow network (a round trip of
// a few hundred milliseconds, a connection waited for behind the
// handlers') a heartbeat given up after an interval left every lease to
// run out.
func (w *Worker) beatTimeout(start time.Time, first int64) time.Duration {
	return max(w.hbInterval, time.Unix(0, first).Add(-w.watchMargin()).Sub(start))
}

// leaseWatch is the lease's watchdog. A run whose lease is about to run
// out by the local clock (the heartbeats that should have renewed it failed
// or were slow: the database is unreachable, or this process was frozen)
// may be reaped by another process at any moment, so its handler is
// cancelled without waiting for the database. The local lease is counted
// from before the statement that set it, so it ends no later than the
// database's; the watchdog acts leaseMargin of a lease before that, which
// a healthy heartbeat, renewing every third of a lease, never lets come. A
// run whose handler has already returned keeps its pending outcome: if
// nobody reaped the job, that outcome still lands, fenced by its claim.
type leaseWatch struct {
	loop
	w *Worker
}

func (l *leaseWatch) start(ctx context.Context) { l.run(ctx, l.watch) }

func (l *leaseWatch) watch(ctx context.Context) {
	w := l.w
	margin := w.watchMargin()
	t := time.NewTicker(max(w.lease/20, 5*time.Millisecond))
	defer t.Stop()
	var tasks []*task
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now().Add(margin)
		tasks = w.inflight.snapshot(tasks[:0])
		given := 0
		for _, t := range tasks {
			if t.state.Load() == stRunning && t.leaseExpired(now) {
				if w.giveBack(t, "lease about to run out before the database confirmed it") {
					given++
				}
			}
		}
		if given > 0 {
			w.log.Warn("jobs held for a slot are given back: their leases were about to run out before they started",
				slog.Int("jobs", given))
		}
		clear(tasks)
	}
}

// giveBack gives up a run whose lease is about to run out, if no slot
// took it yet: the run is marked lost, so that no slot starts it from then
// on, and released, so that its job, unless reaped meanwhile, is ready
// again at once without the attempt its claim counted. A job held ahead
// of the slots on a database slow to answer the heartbeats would otherwise
// spend attempts without ever running (and could end dead that way). A
// run a slot took is lost as lose does; it reports whether it gave the
// run back.
func (w *Worker) giveBack(t *task, why string) bool {
	if !t.state.CompareAndSwap(stRunning, stLost) {
		w.lose(t, why) // finishing meanwhile
		return false
	}
	if t.started.Load() {
		w.lost(t, why)
		return false
	}
	t.cancel(core.ErrLeaseLost)
	t.state.Store(stReleased)
	w.fin.add(outcome{task: t, what: oRelease})
	return true
}

// leaseMargin is how long, as a fraction of the lease, before its local end
// the watchdog gives a run up.
const leaseMargin = 0.1

// watchMargin is how long before a run's local lease end the watchdog
// gives it up: leaseMargin of the lease.
func (w *Worker) watchMargin() time.Duration {
	return time.Duration(float64(w.lease) * leaseMargin)
}

// cancelRequested cancels the handler of job id, if this process runs it,
// because an operator asked to cancel the job (admin Jobs.Cancel). The run
// then ends cancelled whatever the handler returns: the outcome statements
// refuse anything else for the job. A job this process does not hold (it
// finished, or its lease was lost) is left alone.
func (w *Worker) cancelRequested(id int64) {
	t := w.inflight.get(id)
	if t == nil || t.state.Load() != stRunning || !t.cancelSeen.CompareAndSwap(false, true) {
		return
	}
	w.log.Warn("job cancelled by an operator while running; cancelling its handler", core.JobAttrs(t.job)...)
	t.cancel(core.ErrCancelled)
}

// lose marks a run as lost: a running handler is cancelled and whatever it
// returns is dropped; a buffered outcome is skipped. Only runs that were
// still running are logged.
func (w *Worker) lose(t *task, why string) {
	if t.state.CompareAndSwap(stRunning, stLost) {
		w.lost(t, why)
		return
	}
	if t.state.CompareAndSwap(stFinishing, stLost) {
		w.inflight.remove(t)
	}
}

// lost cancels the handler of a run just marked lost, logs it and forgets
// it.
func (w *Worker) lost(t *task, why string) {
	t.cancel(core.ErrLeaseLost)
	w.met.leaseLost()
	w.log.Warn("job lost; cancelling its handler and dropping its outcome",
		append(core.JobAttrs(t.job), slog.String("why", why))...)
	w.inflight.remove(t)
}

// keepConnMin is the smallest pool (MaxConns) of which the heartbeat
// keeps a connection: with fewer, the one kept would leave too few for the
// claims, the outcomes and a transactional job (see Worker.connSem), and
// the heartbeat acquires one for each statement instead.
const keepConnMin = 4

// keptConn is the connection of the pool the heartbeat keeps for its
// statements, acquired once and held until the worker stops, so that no
// beat waits for a connection behind the handlers' statements. One lost
// (the statement on it failed and the connection is closed: a restart, a
// reset, a timeout) is released, which makes the pool discard it, and
// another is acquired for the next statement. Each statement on it is a
// transaction of its own, so it holds no server connection between beats
// behind a pooler in transaction mode. Used by the heartbeat's goroutine
// only.
type keptConn struct {
	db   *pgxpool.Pool
	keep bool          // the pool is large enough to keep one
	conn *pgxpool.Conn // nil: none held now
}

// acquire takes a connection from the pool to keep, if one is to be kept
// and none is held.
func (c *keptConn) acquire(ctx context.Context) error {
	if !c.keep || c.conn != nil {
		return nil
	}
	conn, err := c.db.Acquire(ctx)
	if err != nil {
		return err
	}
	c.conn = conn
	return nil
}

// get returns the handle to run a heartbeat on: the kept connection,
// acquired first if none is held, or the pool when none is kept.
func (c *keptConn) get(ctx context.Context) (queue.DB, error) {
	if !c.keep {
		return c.db, nil
	}
	if err := c.acquire(ctx); err != nil {
		return nil, err
	}
	return c.conn, nil
}

// failed is told of a statement that failed with err on the handle get
// returned; it lets the kept connection go if it is closed or was lost,
// and reports whether it did.
func (c *keptConn) failed(err error) bool {
	if c.conn == nil || !c.conn.Conn().IsClosed() && !connLost(err) {
		return false
	}
	c.release()
	return true
}

// release gives the kept connection back to the pool, which discards it
// if it is closed or was left in a statement.
func (c *keptConn) release() {
	if c.conn != nil {
		c.conn.Release()
		c.conn = nil
	}
}
