package worker

import (
	"context"
	"sync"
)

// executing is the set of jobs whose handler runs in this process, so that
// no two runs of one job overlap here. A job can be claimed again by the
// process that lost it (frozen or cut off past its lease, then reaped):
// the lost run's handler is cancelled, but it may take a while to return,
// and the new run waits for it.
type executing struct {
	mu sync.Mutex
	// m holds a job while its handler runs: nil, or the channel a waiting
	// run made, closed when the handler returns. Only a wait allocates.
	m map[int64]chan struct{}
}

func newExecuting() *executing { return &executing{m: make(map[int64]chan struct{})} }

// enter waits until no handler of job id runs in this process, then marks
// one as running; the caller must call leave(id) when it returns. waited
// reports whether an earlier run had to be waited for. It gives up when ctx
// ends, returning ok false.
func (x *executing) enter(ctx context.Context, id int64) (waited, ok bool) {
	for {
		x.mu.Lock()
		done, running := x.m[id]
		if !running {
			x.m[id] = nil
			x.mu.Unlock()
			return waited, true
		}
		if done == nil {
			done = make(chan struct{})
			x.m[id] = done
		}
		x.mu.Unlock()
		waited = true
		select {
		case <-done:
		case <-ctx.Done():
			return waited, false
		}
	}
}

// leave marks job id's handler as returned and wakes the runs waiting.
func (x *executing) leave(id int64) {
	x.mu.Lock()
	done := x.m[id]
	delete(x.m, id)
	x.mu.Unlock()
	if done != nil {
		close(done)
	}
}
