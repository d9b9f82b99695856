package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/handlers"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The held-xmin scenario's phases, as reported in Result.Phase.
const (
	PhaseBaseline = "baseline"
	PhaseHeld     = "held"
	PhaseRecovery = "recovery"
)

// heldLimitedProducers is how many producers enqueue the limited kind when
// heldxmin runs one.
const heldLimitedProducers = 4

// DefaultHeldWindow is the length of each reported window of the heldxmin
// scenario.
const DefaultHeldWindow = 10 * time.Second

// Defaults of the heldxmin scenario.
const (
	DefaultHeldRate     = 2000
	DefaultHeldBaseline = 60 * time.Second
	DefaultHeldHold     = 300 * time.Second
	DefaultHeldRecovery = 90 * time.Second
)

// heldXmin runs producers at cfg.Rate with a worker for cfg.Baseline, then
// opens an idle REPEATABLE READ transaction that has taken a transaction id
// — as a forgotten BEGIN in psql or a long report does — and keeps it open
// for cfg.Held, closes it, and runs on for cfg.Recovery. Every cfg.Window
// it emits one Result with what happened in that window. The
// held transaction is always closed, also when ctx is cancelled.
//
// With cfg.HeldLimitedRate, a kind under a rate limit of that many jobs/s
// runs alongside, offered at twice the rate by producers of its own, so
// its backlog never runs dry and each window's starts show what the limit
// granted; its jobs are left out of the latencies.
func (r *Runner) heldXmin(ctx context.Context, db *pgxpool.Pool, emit func(Result) error) error {
	e, err := r.setup(ctx, db, ScenarioHeldXmin)
	defer e.drop()
	if err != nil {
		return err
	}
	pdb, err := warmPool(ctx, db, r.cfg.Producers)
	if err != nil {
		return err
	}
	defer pdb.Close()
	rec := newWindowRecorder()
	e.onClaim = rec.claimed
	limRate := r.cfg.HeldLimitedRate
	var ldb *pgxpool.Pool // the limited kind's producers
	if limRate > 0 {
		err := e.ops.Limits().Set(ctx, db, admin.Limit{Name: limitName, Kind: limited{}.Kind(), Rate: limRate, Per: time.Second})
		if err != nil {
			return err
		}
		if ldb, err = warmPool(ctx, db, heldLimitedProducers); err != nil {
			return err
		}
		defer ldb.Close()
		e.register = func(reg *handlers.Registry) error {
			return handlers.Register(reg, func(ctx context.Context, j *handlers.Job[limited]) error {
				rec.limitedStarted()
				return nil
			}, handlers.KindOpts{})
		}
		e.tracer = &claimTracer{claimed: rec.claimStatement}
	}
	stopWorker, err := e.worker(ctx, func(ctx context.Context, j *handlers.Job[noop]) error {
		rec.started(j.ID, time.Now())
		return nil
	})
	if err != nil {
		return err
	}
	defer stopWorker()

	holder, err := pgx.ConnectConfig(ctx, db.Config().ConnConfig)
	if err != nil {
		return err
	}
	defer holder.Close(context.Background())
	var held pgx.Tx
	release := func() {
		if held != nil {
			_ = held.Rollback(context.Background())
			held = nil
			r.logf("heldxmin: released the held transaction")
		}
	}
	defer release()

	start := time.Now()
	total := r.cfg.Baseline + r.cfg.Held + r.cfg.Recovery
	pctx, stopProducers := context.WithCancel(ctx)
	defer stopProducers()
	produced := make(chan error, 1)
	go func() {
		produced <- e.produce(pctx, pdb, r.cfg.Producers, r.cfg.Rate, start, start.Add(total), rec.committed)
	}()
	if ldb != nil {
		go func() {
			err := e.produceArgs(pctx, ldb, limited{}, heldLimitedProducers, 2*limRate, start, start.Add(total),
				func(int64, time.Time) { rec.limitedCommitted() })
			if err != nil && pctx.Err() == nil {
				r.logf("heldxmin: limited producers: %v", err)
				stopProducers()
			}
		}()
	}

	tick := time.NewTicker(r.cfg.Window)
	defer tick.Stop()
	for elapsed := time.Duration(0); elapsed < total; {
		phase := PhaseBaseline
		switch {
		case elapsed >= r.cfg.Baseline+r.cfg.Held:
			phase = PhaseRecovery
			release()
		case elapsed >= r.cfg.Baseline:
			phase = PhaseHeld
			if held == nil {
				if held, err = hold(ctx, holder); err != nil {
					return err
				}
				r.logf("heldxmin: holding a REPEATABLE READ transaction open for %s", r.cfg.Held)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-produced:
			if err != nil {
				return err
			}
			produced <- nil // the schedule ended early; let the windows finish
			<-tick.C
		case <-tick.C:
		}
		elapsed = time.Since(start)
		w := rec.window()
		var deadTuples int64
		if err := db.QueryRow(ctx, `SELECT n_dead_tup FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'docket_jobs'`, e.schema).Scan(&deadTuples); err != nil {
			return fmt.Errorf("read dead tuples: %w", err)
		}
		secs := r.cfg.Window.Seconds()
		err := emit(Result{
			Phase: phase, ElapsedSeconds: elapsed.Seconds(), Rate: r.cfg.Rate, Workers: r.cfg.Workers,
			InsertPerSec: float64(w.committed) / secs,
			WorkedPerSec: float64(w.started) / secs,
			Backlog:      w.backlog, Latency: Summarize(w.latencies),
			ClaimMean: w.claimMean, ClaimP99: Percentile(w.sortedClaims(), 99), DeadTuples: deadTuples,
			LimitRate: limRate, LimitedInsertPerSec: float64(w.limitedCommitted) / secs,
			LimitedPerSec:  float64(w.limitedStarted) / secs,
			OrdinaryClaims: w.ordinaryClaims.summary(), LimitedClaims: w.limitedClaims.summary(),
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// hold begins the transaction that holds back the vacuum horizon: REPEATABLE
// READ keeps its snapshot, and txid_current gives it a transaction id.
func hold(ctx context.Context, conn *pgx.Conn) (pgx.Tx, error) {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `SELECT txid_current()`); err != nil {
		_ = tx.Rollback(context.Background())
		return nil, err
	}
	return tx, nil
}

// windowRecorder pairs commits with handler starts like recorder, but keeps
// only unpaired entries and hands out what happened per window.
type windowRecorder struct {
	mu       sync.Mutex
	commits  map[int64]time.Time // committed, not yet started
	starts   map[int64]time.Time // started before its commit was recorded
	commitN  int64               // totals, for the backlog
	startedN int64
	cur      windowStats
}

// windowStats is what happened in one window.
type windowStats struct {
	committed, started int64
	backlog            int64 // committed and not started, at the window's end
	latencies          []time.Duration
	claims             []time.Duration
	claimMean          time.Duration
	// The limited kind's jobs and the claim statements by kind, with
	// Config.HeldLimitedRate.
	limitedCommitted, limitedStarted int64
	ordinaryClaims, limitedClaims    claimStats
}

func newWindowRecorder() *windowRecorder {
	return &windowRecorder{commits: map[int64]time.Time{}, starts: map[int64]time.Time{}}
}

func (r *windowRecorder) committed(id int64, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.commitN++
	r.cur.committed++
	if s, ok := r.starts[id]; ok {
		delete(r.starts, id)
		r.cur.latencies = append(r.cur.latencies, max(s.Sub(at), 0))
		return
	}
	r.commits[id] = at
}

func (r *windowRecorder) started(id int64, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.commits[id]
	if !ok {
		if _, dup := r.starts[id]; !dup {
			r.starts[id] = at
			r.startedN++
			r.cur.started++
		}
		return
	}
	delete(r.commits, id)
	r.startedN++
	r.cur.started++
	r.cur.latencies = append(r.cur.latencies, max(at.Sub(c), 0))
}

func (r *windowRecorder) claimed(took time.Duration, _ int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur.claims = append(r.cur.claims, took)
}

func (r *windowRecorder) limitedCommitted() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur.limitedCommitted++
}

func (r *windowRecorder) limitedStarted() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur.limitedStarted++
}

// claimStatement records one claim statement, as claimTracer reports it.
func (r *windowRecorder) claimStatement(limited bool, took time.Duration, jobs int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if limited {
		r.cur.limitedClaims.add(took, jobs)
	} else {
		r.cur.ordinaryClaims.add(took, jobs)
	}
}

func (w windowStats) sortedClaims() []time.Duration {
	slices.Sort(w.claims)
	return w.claims
}

// window returns the current window's numbers and starts a new one.
func (r *windowRecorder) window() windowStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.cur
	r.cur = windowStats{}
	w.backlog = r.commitN - r.startedN
	var sum time.Duration
	for _, c := range w.claims {
		sum += c
	}
	if len(w.claims) > 0 {
		w.claimMean = sum / time.Duration(len(w.claims))
	}
	return w
}
