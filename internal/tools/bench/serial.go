package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The serial scenario's defaults: DefaultSerialKeys keys, and at most
// AllSerialJobs jobs under ScenarioAll (or Config.Jobs, when smaller), so
// that all stays short.
const (
	DefaultSerialKeys = 20
	AllSerialJobs     = 20_000
)

// serialArgs is one job of the serial scenario: the Seq-th job of key Key.
type serialArgs struct {
	Key int `json:"key"`
	Seq int `json:"seq"`
}

func (serialArgs) Kind() string { return "bench.serial" }

// serialJobs is how many jobs the serial scenario runs.
func (r *Runner) serialJobs() int {
	if r.cfg.Scenario == ScenarioSerial {
		return r.cfg.Jobs
	}
	return min(r.cfg.Jobs, AllSerialJobs)
}

// serialRuns is what the serial scenario's handlers record: each job's
// start and end, in nanoseconds since base on the monotonic clock, indexed
// by key and place in its key's line.
type serialRuns struct {
	base       time.Time
	keys       int
	start, end []atomic.Int64
	runs       []atomic.Int32
}

func newSerialRuns(n, keys int) *serialRuns {
	return &serialRuns{base: time.Now(), keys: keys, start: make([]atomic.Int64, n),
		end: make([]atomic.Int64, n), runs: make([]atomic.Int32, n)}
}

// index is the slot of a key's seq-th job: job i of the fill is the
// (i / keys)-th of key i % keys.
func (s *serialRuns) index(a serialArgs) int { return a.Seq*s.keys + a.Key }

// handOffs checks the recorded runs and returns the hand-offs: for each
// key, from the end of one job's handler to the start of the next one's.
// Every job must have run once, and each after the one before it in its
// key's line had ended.
func (s *serialRuns) handOffs() ([]time.Duration, error) {
	n := len(s.start)
	out := make([]time.Duration, 0, n)
	for i := range n {
		if r := s.runs[i].Load(); r != 1 {
			return nil, fmt.Errorf("job %d of key %d ran %d times", i/s.keys, i%s.keys, r)
		}
		prev := i - s.keys
		if prev < 0 {
			continue
		}
		gap := s.start[i].Load() - s.end[prev].Load()
		if gap < 0 {
			return nil, fmt.Errorf("key %d: job %d started %s before job %d ended", i%s.keys, i/s.keys,
				time.Duration(-gap), prev/s.keys)
		}
		out = append(out, time.Duration(gap))
	}
	return out, nil
}

// serial enqueues jobs spread round robin over cfg.SerialKeys serial keys
// (not timed, from one connection, so that each key's line is the order of
// the fill), then times a worker until every job ran. Each handler records
// its start and end; the hand-offs are measured from them, and they also
// check that each key's jobs ran one at a time, in order. Then the same
// number of jobs without keys is drained the same way in a fresh schema,
// for comparison.
func (r *Runner) serial(ctx context.Context, db *pgxpool.Pool) (Result, error) {
	n, keys := r.serialJobs(), r.cfg.SerialKeys
	e, err := r.setup(ctx, db, ScenarioSerial)
	defer e.drop()
	if err != nil {
		return Result{}, err
	}
	fdb, err := warmPool(ctx, e.db, 1)
	if err != nil {
		return Result{}, err
	}
	// One inserter: the batches, and the jobs' places in their lines,
	// follow the order of the fill.
	one := *r
	one.cfg.Inserters = 1
	fill := *e
	fill.r = &one
	prog := r.progress(ScenarioSerial+": filling", int64(n))
	var next atomic.Int64
	err = fill.fillWith(ctx, fdb, n, prog, func() docket.Item {
		i := int(next.Add(1) - 1)
		return docket.Item{Args: serialArgs{Key: i % keys, Seq: i / keys},
			Opts: docket.Opts{SerialKey: "k" + strconv.Itoa(i%keys)}}
	})
	fdb.Close()
	prog.finish()
	if err == nil {
		_, err = e.db.Exec(ctx, `ANALYZE `+e.table("docket_jobs"))
	}
	if err != nil {
		return Result{}, err
	}

	runs := newSerialRuns(n, keys)
	var ran atomic.Int64
	prog = r.progress(ScenarioSerial, int64(n))
	sleep := r.cfg.SerialHandler
	e.register = func(reg *handlers.Registry) error {
		return handlers.Register(reg, func(ctx context.Context, j *handlers.Job[serialArgs]) error {
			i := runs.index(j.Args)
			if i < 0 || i >= n {
				return fmt.Errorf("job of key %d, place %d, outside the fill", j.Args.Key, j.Args.Seq)
			}
			runs.start[i].Store(int64(time.Since(runs.base)))
			if sleep > 0 {
				time.Sleep(sleep)
			}
			runs.end[i].Store(int64(time.Since(runs.base)))
			runs.runs[i].Add(1)
			ran.Add(1)
			prog.add(1)
			return nil
		}, handlers.KindOpts{})
	}
	elapsed, timed, err := e.timedDrain(ctx, db, ScenarioSerial, prog, n, ran.Load, func() (func(), error) {
		return e.worker(ctx, func(context.Context, *handlers.Job[noop]) error { return nil })
	})
	if err != nil {
		return Result{}, err
	}
	gaps, err := runs.handOffs()
	if err != nil {
		return Result{}, err
	}
	res := Result{Jobs: n, Keys: keys, Workers: r.cfg.Workers, HandlerMin: sleep, Seconds: elapsed.Seconds(),
		JobsPerSec: float64(n) / elapsed.Seconds(), Latency: Summarize(gaps), CPU: timed.cpu(n)}
	if res.PlainPerSec, err = r.plainDrain(ctx, db, n, ScenarioSerial, sleep); err != nil {
		return Result{}, fmt.Errorf("jobs without keys: %w", err)
	}
	return res, nil
}
