package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The workflows scenario's sizes: DefaultWorkflows chains when it runs
// alone, AllWorkflows under ScenarioAll (or Config.Jobs, when smaller), so
// that all stays short.
const (
	DefaultWorkflows = 10_000
	AllWorkflows     = 2_000
	// workflowSteps is the length of each chain.
	workflowSteps = 3
	// workflowFillers is how many connections enqueue the workflows.
	workflowFillers = 8
)

// stepArgs is one step of the workflows scenario's chains.
type stepArgs struct {
	Step int `json:"step"`
}

func (stepArgs) Kind() string { return "bench.step" }

// stepResult is what each step records and its child reads.
type stepResult struct {
	Sum int `json:"sum"`
}

// workflowCount is how many chains the workflows scenario runs.
func (r *Runner) workflowCount() int {
	if r.cfg.Scenario == ScenarioWorkflows {
		return r.cfg.Jobs
	}
	return min(r.cfg.Jobs, AllWorkflows)
}

// workflows enqueues chains of workflowSteps steps (not timed), then times
// a worker until every step ran: each step records a result and the next
// reads its parent's. Then, in a fresh schema, the same number of no-op
// jobs as steps, drained by the same worker configuration, for comparison.
func (r *Runner) workflows(ctx context.Context, db *pgxpool.Pool) (Result, error) {
	w := r.workflowCount()
	n := w * workflowSteps
	e, err := r.setup(ctx, db, ScenarioWorkflows)
	defer e.drop()
	if err != nil {
		return Result{}, err
	}
	if err := e.fillWorkflows(ctx, w); err != nil {
		return Result{}, err
	}
	var ran, bad atomic.Int64
	prog := r.progress("workflows", int64(n))
	e.register = func(reg *handlers.Registry) error {
		return handlers.Register(reg, func(ctx context.Context, j *handlers.Job[stepArgs]) error {
			res := stepResult{Sum: j.Args.Step}
			if j.Args.Step > 1 {
				var parent stepResult
				if err := j.ParentResult(fmt.Sprint("s", j.Args.Step-1), &parent); err != nil {
					bad.Add(1)
					return err
				}
				if parent.Sum != (j.Args.Step-1)*j.Args.Step/2 {
					bad.Add(1)
					return fmt.Errorf("step %d read %d of its parent", j.Args.Step, parent.Sum)
				}
				res.Sum += parent.Sum
			}
			if err := j.SetResult(res); err != nil {
				return err
			}
			ran.Add(1)
			prog.add(1)
			return nil
		}, handlers.KindOpts{})
	}
	elapsed, timed, err := e.timedDrain(ctx, db, ScenarioWorkflows, prog, n, ran.Load, func() (func(), error) {
		return e.worker(ctx, func(context.Context, *handlers.Job[noop]) error { return nil })
	})
	if err != nil {
		return Result{}, err
	}
	if b := bad.Load(); b > 0 {
		return Result{}, fmt.Errorf("%d steps could not read their parent's result", b)
	}
	res := Result{Jobs: n, Workflows: w, Workers: r.cfg.Workers, Seconds: elapsed.Seconds(),
		JobsPerSec: float64(n) / elapsed.Seconds(), CPU: timed.cpu(n)}
	if res.PlainPerSec, err = r.plainDrain(ctx, db, n, ScenarioWorkflows, 0); err != nil {
		return Result{}, fmt.Errorf("plain jobs: %w", err)
	}
	return res, nil
}

// fillWorkflows enqueues w chains on workflowFillers connections.
func (e *env) fillWorkflows(ctx context.Context, w int) error {
	fdb, err := warmPool(ctx, e.db, workflowFillers)
	if err != nil {
		return err
	}
	defer fdb.Close()
	prog := e.r.progress(ScenarioWorkflows+": enqueueing workflows", int64(w))
	defer prog.finish()
	next := make(chan int)
	errs := make(chan error, workflowFillers)
	var wg sync.WaitGroup
	for range workflowFillers {
		wg.Go(func() {
			for i := range next {
				jobs := make([]docket.WorkflowJob, workflowSteps)
				for s := range workflowSteps {
					jobs[s] = docket.WorkflowJob{Ref: fmt.Sprint("s", s+1), Args: stepArgs{Step: s + 1}}
					if s > 0 {
						jobs[s].After = docket.After(fmt.Sprint("s", s))
					}
				}
				if _, err := e.jobs.EnqueueWorkflow(ctx, fdb, docket.Workflow{Name: fmt.Sprint("chain ", i), Jobs: jobs}); err != nil {
					errs <- err
					return
				}
				prog.add(1)
			}
		})
	}
	var ferr error
feed:
	for i := range w {
		select {
		case next <- i:
		case ferr = <-errs:
			break feed
		case <-ctx.Done():
			ferr = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	if ferr == nil {
		ferr = <-errs // nil when the channel is empty
	}
	if ferr != nil {
		return ferr
	}
	_, err = e.db.Exec(ctx, `ANALYZE `+e.table("docket_jobs"))
	return err
}

// plainDrain fills a fresh schema with n no-op jobs and times the same
// worker draining them, in jobs per second: the comparison of scenario,
// whose handlers sleep for sleep (0: not at all).
func (r *Runner) plainDrain(ctx context.Context, db *pgxpool.Pool, n int, scenario string, sleep time.Duration) (float64, error) {
	e, err := r.setup(ctx, db, scenario+" (plain jobs)")
	defer e.drop()
	if err != nil {
		return 0, err
	}
	if err := e.backlog(ctx, n, scenario+" (plain jobs)", nil); err != nil {
		return 0, err
	}
	var ran atomic.Int64
	prog := r.progress("plain jobs", int64(n))
	elapsed, _, err := e.timedDrain(ctx, db, scenario+"-plain", prog, n, ran.Load, func() (func(), error) {
		return e.worker(ctx, func(context.Context, *handlers.Job[noop]) error {
			if sleep > 0 {
				time.Sleep(sleep)
			}
			ran.Add(1)
			prog.add(1)
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	if elapsed <= 0 {
		return 0, errors.New("no time elapsed")
	}
	return float64(n) / elapsed.Seconds(), nil
}
