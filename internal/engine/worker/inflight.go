package worker

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/queue"
	"go.opentelemetry.io/otel/trace"
)

// Execution states. A claimed job starts running; exactly one of the
// transitions out of running wins (compare-and-swap), which is how a late
// outcome of a lost or released job is dropped.
const (
	stRunning   int32 = iota // claimed: queued for a slot or in its handler
	stFinishing              // outcome handed to the finisher (or written in the job's tx)
	stLost                   // lease lost: outcome is dropped
	stReleased               // released at shutdown: outcome is dropped
)

// task is one claimed job in this process, from claim until its outcome is
// written. Fields other than state and leaseUntil are set before it is
// published and never change.
type task struct {
	job  *core.Job
	kind *kindRun
	pool *pool
	// limit is the limit whose claim granted the run, "" for none: when
	// the run leaves the running state, its place goes to the next job
	// of the limit (limitTimes.released).
	limit string
	// placed says the run takes one of its tenant's places held by this
	// process (places.go) while a slot has it.
	placed bool
	ctx    context.Context // the handler's context, cancelled on lease loss and hard shutdown
	cancel context.CancelCauseFunc
	span   trace.Span // the run's span (tracing.go); nil outside a worker's run

	state      atomic.Int32
	leaseUntil atomic.Int64 // local clock, unix ns: after it the lease may have been reaped
	// started is set by the slot that takes the run before it reads state,
	// and read by the lease's watchdog after it marked the run lost: a run
	// it finds not started never starts, and is given back (leaseWatch).
	started atomic.Bool

	// progress is what the handler reported last and the heartbeat has not
	// written yet (nil: nothing new); kick wakes the heartbeat for it (nil
	// outside a worker's run).
	progress atomic.Pointer[queue.Progress]
	kick     chan<- struct{}
	// cancelSeen is set once the worker learnt that an operator cancelled
	// the job (Worker.cancelRequested): the run can only end cancelled.
	cancelSeen atomic.Bool
	rctx       runCtx // what ctx points to
}

// runCtx is a run's context: the handler's cancellable context, which
// also answers core.ProgressKey with the run. It lives in its task, so it
// costs no allocation of its own.
type runCtx struct {
	context.Context
	t *task
}

// Value answers core.ProgressKey with the run, and any other key as the
// wrapped context does.
func (c *runCtx) Value(key any) any {
	if _, ok := key.(core.ProgressKey); ok {
		return core.ProgressReporter(c.t)
	}
	return c.Context.Value(key)
}

// setContext sets the task's context: ctx, cancelled by cancel.
func (t *task) setContext(ctx context.Context, cancel context.CancelCauseFunc) {
	t.rctx = runCtx{Context: ctx, t: t}
	t.ctx, t.cancel = &t.rctx, cancel
}

// ReportProgress keeps the handler's latest progress for the next
// heartbeat (core.ProgressReporter) and wakes the heartbeat.
func (t *task) ReportProgress(value json.RawMessage, message string) {
	t.progress.Store(&queue.Progress{ID: t.job.ID, Value: value, Message: message})
	if t.kick != nil {
		select {
		case t.kick <- struct{}{}:
		default:
		}
	}
}

func (t *task) leaseExpired(now time.Time) bool { return now.UnixNano() > t.leaseUntil.Load() }

// inflight is the set of this process's claimed jobs whose outcome is not
// written yet. The heartbeat extends their leases; shutdown releases them.
type inflight struct {
	mu sync.Mutex
	m  map[int64]*task
}

func newInflight() *inflight { return &inflight{m: make(map[int64]*task)} }

// add publishes freshly claimed jobs. A job id already present belongs to an
// earlier run in this process that lost its lease without noticing (the
// process was frozen past its lease and the job was reaped and claimed again
// by us): that run is marked lost so its outcome is dropped.
func (s *inflight) add(tasks []*task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range tasks {
		if old := s.m[t.job.ID]; old != nil {
			old.state.Store(stLost)
			old.cancel(core.ErrLeaseLost)
		}
		s.m[t.job.ID] = t
	}
}

// remove forgets tasks whose outcome is written (or given up on), unless a
// newer run of the same job took their place.
func (s *inflight) remove(tasks ...*task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range tasks {
		if s.m[t.job.ID] == t {
			delete(s.m, t.job.ID)
		}
	}
}

// snapshot appends the tasks not yet lost or released to dst.
func (s *inflight) snapshot(dst []*task) []*task {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.m {
		if st := t.state.Load(); st == stRunning || st == stFinishing {
			dst = append(dst, t)
		}
	}
	return dst
}

// get returns the in-flight run of job id, or nil.
func (s *inflight) get(id int64) *task {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id]
}

// has reports whether t is still the in-flight run of its job.
func (s *inflight) has(t *task) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[t.job.ID] == t
}

func (s *inflight) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
