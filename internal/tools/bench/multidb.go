package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/testkit/pgsrv"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultDatabases are the multidb scenario's database counts when
// Config.Databases is empty.
var DefaultDatabases = []int{1, 2, 3}

// DefaultMultiDBJobs is the multidb scenario's jobs per database when
// Config.Jobs is 0.
const DefaultMultiDBJobs = 20_000

// multiDB starts as many private PostgreSQL clusters as the largest of
// cfg.Databases and, for each count k of cfg.Databases in turn, fills the
// first k clusters with cfg.Jobs jobs each (not timed), then times one
// process, one handler registry and one client per database draining them
// all, as an application serving several tenant groups does
// (docs/scaling.md). It emits one result per count, with the rate of one
// database of the same run.
func (r *Runner) multiDB(ctx context.Context, emit func(Result) error) error {
	most := slices.Max(r.cfg.Databases)
	clusters := make([]*pgsrv.Cluster, most)
	errs := make([]error, most)
	var wg sync.WaitGroup
	for i := range clusters {
		wg.Go(func() { clusters[i], errs[i] = pgsrv.StartCluster(ctx) })
	}
	wg.Wait()
	defer func() {
		for _, c := range clusters {
			if c != nil {
				_ = c.Stop()
			}
		}
	}()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	dbs := make([]*pgxpool.Pool, most)
	for i, c := range clusters {
		cfg, err := pgxpool.ParseConfig(c.URL())
		if err != nil {
			return err
		}
		cfg.MaxConns = int32(max(4, r.cfg.Inserters+1))
		if dbs[i], err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
			return err
		}
		defer dbs[i].Close()
	}
	r.logf("%s: %d private clusters", ScenarioMultiDB, most)
	var one float64
	for _, k := range r.cfg.Databases {
		res, err := r.multiDBRound(ctx, dbs[:k])
		if err != nil {
			return fmt.Errorf("%d databases: %w", k, err)
		}
		if k == 1 {
			one = res.JobsPerSec
		}
		res.OnePerSec = one
		if err := emit(res); err != nil {
			return err
		}
	}
	return nil
}

// multiDBRound drains cfg.Jobs jobs in each of dbs with one client each,
// all started at once in this process with one registry, and times them
// from the first client's start until every jobs table is empty.
func (r *Runner) multiDBRound(ctx context.Context, dbs []*pgxpool.Pool) (Result, error) {
	n, slots, sleep := r.cfg.Jobs, r.cfg.Workers, r.cfg.MultiDBHandler
	envs := make([]*env, len(dbs))
	for i, db := range dbs {
		e, err := r.setup(ctx, db, ScenarioMultiDB)
		defer e.drop()
		if err != nil {
			return Result{}, err
		}
		if err := e.backlog(ctx, n, ScenarioMultiDB, nil); err != nil {
			return Result{}, err
		}
		envs[i] = e
	}
	total := n * len(dbs)
	var ran atomic.Int64
	prog := r.progress(fmt.Sprintf("multidb %d", len(dbs)), int64(total))
	reg := handlers.NewRegistry()
	if err := handlers.Register(reg, func(ctx context.Context, j *handlers.Job[noop]) error {
		if sleep > 0 {
			time.Sleep(sleep)
		}
		ran.Add(1)
		prog.add(1)
		return nil
	}, handlers.KindOpts{}); err != nil {
		return Result{}, err
	}

	clocks := make([]*cpuClock, len(dbs))
	from := make([]cpuTimes, len(dbs))
	for i, db := range dbs {
		clocks[i] = newCPUClock(ctx, db)
		from[i] = clocks[i].read()
	}
	start := time.Now()
	var stops []func()
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	for i, e := range envs {
		stop, err := e.client(ctx, reg, slots, fmt.Sprint("db", i+1))
		if err != nil {
			return Result{}, err
		}
		stops = append(stops, stop)
	}
	err := wait(ctx, drainPoll, ran.Load, func() (bool, error) {
		if ran.Load() < int64(total) {
			return false, nil
		}
		for _, e := range envs {
			var left bool
			if err := e.db.QueryRow(ctx, `SELECT EXISTS (SELECT FROM `+e.table("docket_jobs")+`)`).Scan(&left); err != nil || left {
				return false, err
			}
		}
		return true, nil
	})
	elapsed := time.Since(start)
	var use cpuUse
	for i, c := range clocks {
		u := c.use(from[i], c.read(), total)
		if i == 0 {
			use = u
		} else {
			use.pg += u.pg
			use.pgKnown = use.pgKnown && u.pgKnown
		}
	}
	prog.finish()
	if err != nil {
		return Result{}, fmt.Errorf("after %d of %d jobs: %w", ran.Load(), total, err)
	}
	return Result{Databases: len(dbs), Jobs: total, Workers: slots, HandlerMin: sleep, Seconds: elapsed.Seconds(),
		JobsPerSec: float64(total) / elapsed.Seconds(), CPU: use}, nil
}

// client starts a client of the env's schema that runs reg's handlers in
// one pool of slots slots, on a connection pool of its own, its metrics
// labelled with database; stop stops it and closes its pool.
func (e *env) client(ctx context.Context, reg *handlers.Registry, slots int, database string) (stop func(), err error) {
	cfg := e.r.cfg
	pcfg := e.db.Config()
	pcfg.MaxConns, pcfg.MinConns = WorkerConns, 0
	wdb, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	c, err := docket.NewClient(wdb, docket.Config{
		Schema: e.schema, DisableHistory: cfg.DisableHistory, NotifyDebounce: e.debounce, Registry: reg,
		Worker: docket.WorkerConfig{
			Pools:         []docket.PoolConfig{{Name: "default", Queues: []string{docket.DefaultQueue}, Concurrency: slots}},
			DisableNotify: cfg.PollOnly, Logger: cfg.Logger, Database: database,
		},
	})
	if err == nil {
		err = c.Start(ctx)
	}
	if err != nil {
		wdb.Close()
		return nil, err
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = c.Stop(sctx)
		wdb.Close()
	}, nil
}
