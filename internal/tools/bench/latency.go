package bench

import (
	"sync"
	"time"
)

// recorder pairs each job's commit time, taken by its producer right after
// Commit returned, with its handler's start time. Either may come first: a
// worker woken by the commit's NOTIFY can start the handler before the
// producer's goroutine has run again.
type recorder struct {
	mu      sync.Mutex
	commits map[int64]time.Time
	starts  map[int64]time.Time
	paired  int
}

func newRecorder(capacity int) *recorder {
	return &recorder{commits: make(map[int64]time.Time, capacity), starts: make(map[int64]time.Time, capacity)}
}

// committed records that job id's enqueue committed at at.
func (r *recorder) committed(id int64, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.commits[id] = at
	if _, ok := r.starts[id]; ok {
		r.paired++
	}
}

// started records that job id's handler started at at. A second run of the
// same job (after a lost lease) keeps the first start.
func (r *recorder) started(id int64, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.starts[id]; ok {
		return
	}
	r.starts[id] = at
	if _, ok := r.commits[id]; ok {
		r.paired++
	}
}

// counts returns how many jobs committed and how many of those started.
func (r *recorder) counts() (committed, started int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.commits), r.paired
}

// latencies returns the commit-to-start latency of every committed job
// that started. A start taken before the commit time (the two clocks
// readings raced, see recorder) counts as zero.
func (r *recorder) latencies() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]time.Duration, 0, r.paired)
	for id, c := range r.commits {
		if s, ok := r.starts[id]; ok {
			out = append(out, max(s.Sub(c), 0))
		}
	}
	return out
}
