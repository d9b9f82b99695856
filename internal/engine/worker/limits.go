package worker

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"time"
)

// limits is the set of flow-control limits (docket_limits),
// read before Start returns and then every poll interval. Pools take the
// jobs a limit governs only through limited claims, which the database
// grants as the limit's budgets allow, and everything else through their
// ordinary claim.
type limits struct {
	*polled[limitSet]
}

// limitSet is one reading of the limits, indexed as docket_limit_of matches
// them: a kind's limit, else a queue's, else the global one.
type limitSet struct {
	byKind, byQueue map[string]string
	global          string
	perTenant       map[string]bool // by name
}

func newLimits(up upkeep) *limits {
	read := func(ctx context.Context) (*limitSet, error) {
		all, err := up.q.LimitScopes(ctx, up.db)
		if err != nil {
			return nil, err
		}
		s := &limitSet{byKind: map[string]string{}, byQueue: map[string]string{}, perTenant: map[string]bool{}}
		for _, lim := range all {
			s.perTenant[lim.Name] = lim.PerTenant
			switch {
			case lim.Kind != "":
				s.byKind[lim.Kind] = lim.Name
			case lim.Queue != "":
				s.byQueue[lim.Queue] = lim.Name
			default:
				s.global = lim.Name
			}
		}
		return s, nil
	}
	return &limits{newPolled(up, "limits", &limitSet{}, read, func(old, now *limitSet) {
		if !old.equal(now) {
			up.log.Info("limits changed", slog.Int("limits", len(now.perTenant)))
			up.wakeAll()
		}
	})}
}

func (s *limitSet) equal(o *limitSet) bool {
	return s.global == o.global && maps.Equal(s.byKind, o.byKind) && maps.Equal(s.byQueue, o.byQueue) &&
		maps.Equal(s.perTenant, o.perTenant)
}

// claimPlan splits what a pool claims by the limit that governs it.
type claimPlan struct {
	limited []limitedClaim
	// queues and kinds are what no limit governs, for the ordinary claim;
	// no kinds means there is none.
	queues, kinds []string
}

// limitedClaim is the part of a pool's claim that one limit governs.
type limitedClaim struct {
	name          string
	perTenant     bool
	queues, kinds []string
}

// plan splits the pool queues × the worker's kinds by governing limit.
func (s *limitSet) plan(queues, kinds []string) claimPlan {
	if s.global == "" && len(s.byKind) == 0 && len(s.byQueue) == 0 {
		return claimPlan{queues: queues, kinds: kinds}
	}
	var p claimPlan
	var freeQueues, freeKinds []string
	for _, q := range queues {
		if s.byQueue[q] == "" {
			freeQueues = append(freeQueues, q)
		}
	}
	for _, k := range kinds {
		if name := s.byKind[k]; name != "" {
			p.limited = append(p.limited, limitedClaim{name: name, perTenant: s.perTenant[name], queues: queues, kinds: []string{k}})
		} else {
			freeKinds = append(freeKinds, k)
		}
	}
	if len(freeKinds) == 0 {
		return p
	}
	for _, q := range queues {
		if name := s.byQueue[q]; name != "" {
			p.limited = append(p.limited, limitedClaim{name: name, perTenant: s.perTenant[name], queues: []string{q}, kinds: freeKinds})
		}
	}
	if len(freeQueues) == 0 {
		return p
	}
	if s.global != "" {
		p.limited = append(p.limited, limitedClaim{name: s.global, perTenant: s.perTenant[s.global], queues: freeQueues, kinds: freeKinds})
		return p
	}
	p.queues, p.kinds = freeQueues, freeKinds
	return p
}

const (
	// limitRateWait is the shortest a pool waits before it asks again for
	// the jobs of a rate limit that held some back. The limited claim's own
	// hint is the time until the limit's next token (migration 024), so
	// a slow rate's jobs start as their tokens come; a fast rate is asked
	// every limitRateWait and takes what accrued meanwhile, which keeps a
	// held job's start within a few milliseconds of its token at a bounded
	// number of claims (each costs the database about what an ordinary
	// one does).
	limitRateWait = 4 * time.Millisecond
	// limitRecheck is how long a pool waits before it asks again for the
	// jobs of a concurrency limit that was full, or of a limit another
	// process was claiming for: a job of another process may end at any
	// time, and nothing announces it.
	limitRecheck = 25 * time.Millisecond
	// limitIdleWait is how long a pool waits before it asks again for the
	// jobs of a limit that had none ready, unless a notification for one
	// of its queues comes first: looking for a kind with nothing ready
	// steps over the queue's other jobs.
	limitIdleWait = 250 * time.Millisecond
)

// limitTimes is when each limit that held jobs back, or had none ready,
// may be asked again, for one pool, with a timer that wakes the pool's
// claim loop at the earliest of those times.
type limitTimes struct {
	mu       sync.Mutex
	due      map[string]limitDue
	claiming map[string]bool // a claim of the pool asks the limit now
	// freedMeanwhile marks the limits a run of this process left while a
	// claim asked them: the claim may have counted that run, so a wait
	// for a place it sets ends when it is done.
	freedMeanwhile map[string]bool
	timer          *time.Timer
	wake           func()
}

type limitDue struct {
	at    time.Time
	idle  bool // had no job ready: a notification ends the wait
	place bool // waits for a running job to end: a run that ends here ends the wait
}

func newLimitTimes(wake func()) *limitTimes {
	t := &limitTimes{due: map[string]limitDue{}, claiming: map[string]bool{}, freedMeanwhile: map[string]bool{}, wake: wake}
	t.timer = time.AfterFunc(time.Hour, t.fire)
	t.timer.Stop()
	return t
}

// fire wakes the pool and sets the timer for the next limit still waiting.
func (t *limitTimes) fire() {
	t.mu.Lock()
	t.arm(time.Now())
	t.mu.Unlock()
	t.wake()
}

// arm sets the timer for the earliest due time after now. t.mu is held.
func (t *limitTimes) arm(now time.Time) {
	var next time.Time
	for name, d := range t.due {
		if !d.at.After(now) {
			delete(t.due, name)
		} else if next.IsZero() || d.at.Before(next) {
			next = d.at
		}
	}
	if !next.IsZero() {
		t.timer.Reset(next.Sub(now))
	}
}

// begin reports whether the limit may be asked now, and if so notes that
// a claim asks it until done is called: the pool's other claim in flight
// would only find the limit's lock taken.
func (t *limitTimes) begin(name string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.claiming[name] || now.Before(t.due[name].at) {
		return false
	}
	t.claiming[name] = true
	return true
}

// done ends what begin started. It reports whether a run of the limit
// ended while the claim asked it and the claim left the limit waiting for
// a place: the pool should then ask again at once.
func (t *limitTimes) done(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.claiming, name)
	if !t.freedMeanwhile[name] {
		return false
	}
	delete(t.freedMeanwhile, name)
	if d, ok := t.due[name]; ok && d.place {
		delete(t.due, name)
		return true
	}
	return false
}

// held records that the limit held jobs back, to be asked again when it is
// worth it: for a place (wait 0), limitRecheck after now unless a run of
// the limit ends here first (released); for a rate, wait after the claim
// that was told so started at asked, and no sooner than limitRateWait
// after it. The bucket was read during that claim, so its next token is
// due wait after a moment between asked and now: counted from now, every
// held job would also wait out the claim's round trip. It reports whether
// the rate's time has come already (a claim slower than the wait): the
// pool should ask again at once.
func (t *limitTimes) held(name string, wait time.Duration, asked, now time.Time) bool {
	if wait == 0 {
		t.set(name, limitDue{at: now.Add(limitRecheck), place: true}, now)
		return false
	}
	at := asked.Add(max(wait, limitRateWait))
	if !at.After(now) {
		t.free(name)
		return true
	}
	t.set(name, limitDue{at: at}, now)
	return false
}

// released records that a run the limit granted left the running state
// in this process, and reports whether the pool should claim now: the
// limit waited for a place, which is free now. A claim asking the limit
// meanwhile may not have seen the place free; its wait ends when it is
// done (see done).
func (t *limitTimes) released(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.claiming[name] {
		t.freedMeanwhile[name] = true
		return false
	}
	if d, ok := t.due[name]; ok && d.place {
		delete(t.due, name)
		return true
	}
	return false
}

// idle records that the limit had no job ready.
func (t *limitTimes) idle(name string, now time.Time) {
	t.set(name, limitDue{at: now.Add(limitIdleWait), idle: true}, now)
}

func (t *limitTimes) set(name string, d limitDue, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.due[name] = d
	t.arm(now)
}

// free lets the limit be asked at any time: it granted jobs.
func (t *limitTimes) free(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.due, name)
}

// notified ends the waits of limits that had no job ready: jobs were
// announced in one of the pool's queues.
func (t *limitTimes) notified() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, d := range t.due {
		if d.idle {
			delete(t.due, name)
		}
	}
}
