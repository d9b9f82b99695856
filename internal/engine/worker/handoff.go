package worker

import (
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/queue"
)

// Serial hand-off. When a serial job completes, the statement that writes
// its completion makes the next job of its key ready (migrations 009 and
// 025); the finisher also claims that job for this pool in the same
// transaction (queue.CompleteHandOn), and a slot takes it before any other
// claimed job: each completion hands its key into the slot it freed,
// without a claim's round trip and commit, unless other ready jobs wait
// for the pool's slots. The handed job starts only once the completion
// committed, as a job claimed afterwards would: a crash then leaves it
// running under its lease, to be reaped and run again, after the job
// before it.

// handOnFor returns what a completion of this pool's serial jobs may claim
// for it: the ready jobs of its active queues and of the kinds its
// ordinary claim takes. It reports false while other ready jobs wait for
// the pool's slots (its last claim that took jobs came back full, or jobs
// it claimed wait in it for a slot): the key's next job then takes its
// turn behind them, as it did before, instead of keeping the slot for its
// key for as long as the line lasts. It also reports false while
// stopping, when every queue is paused, and for a tenant-capped pool,
// whose claims weigh tenants against each other.
func (p *pool) handOnFor() (queue.HandOn, bool) {
	w := p.w
	if w.stopping.Load() || p.cfg.TenantCap > 0 || p.backlogged.Load() || len(p.jobs) > 0 {
		return queue.HandOn{}, false
	}
	plan := w.limits.load().plan(p.cfg.Queues, w.names)
	if len(plan.kinds) == 0 {
		return queue.HandOn{}, false
	}
	queues := w.pauses.active(plan.queues)
	if len(queues) == 0 {
		return queue.HandOn{}, false
	}
	return queue.HandOn{Queues: queues, Kinds: plan.kinds, Lease: w.lease}, true
}

// handOn hands jobs that a completion claimed for this pool, whose
// statement started at start, to the slots, ahead of other claimed jobs.
// They count as claimed by it, a claim whose round trip is the
// completion's too. Jobs that find no room, or arrive while the worker
// stops, are released.
func (p *pool) handOn(start time.Time, jobs []*core.Job) {
	if len(jobs) == 0 {
		return
	}
	w := p.w
	p.noteClaim(start, jobs)
	tasks := p.track(start, jobs, "")
	p.busy.Add(int64(len(tasks)))
	for _, t := range tasks {
		select {
		case p.handed <- t:
		default:
			p.release(t)
		}
	}
	if w.stopping.Load() {
		// The slots may have left already: release what they did not take.
		for {
			select {
			case t := <-p.handed:
				p.release(t)
			default:
				return
			}
		}
	}
}

// release hands back a claimed job that no slot will run.
func (p *pool) release(t *task) {
	if t.state.CompareAndSwap(stRunning, stReleased) {
		p.w.fin.add(outcome{task: t, what: oRelease})
	}
	p.ran(t)
}
