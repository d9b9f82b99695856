package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/handlers"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults of the flowcontrol scenario, and of its rate-limited kind.
const (
	DefaultLimitedShare = 0.1
	DefaultLimitRate    = 1000
	DefaultLimitRunning = 5
	DefaultLimitTenants = 10
)

// The flowcontrol scenario's variants, as reported in Result.Limit.
const (
	// LimitNone sets no limit: both kinds go through the ordinary claim.
	LimitNone = "none"
	// LimitIdle sets a rate limit on the limited kind but enqueues none of
	// it: every claim first asks the limit for jobs it does not have.
	LimitIdle = "idle"
	// LimitConcurrency limits the limited kind to Config.LimitRunning
	// running jobs per tenant.
	LimitConcurrency = "concurrency"
	// LimitRate limits the limited kind to Config.LimitRate starts per
	// second, in bursts of up to as many (Limit's default burst).
	LimitRate = "rate"
)

// limited is the flow-control scenarios' limited kind, a no-op like noop.
type limited struct{}

func (limited) Kind() string { return "bench.limited" }

// limitName is the name of the bench's one limit.
const limitName = "bench"

// isLimited reports whether job k of a backlog is of the limited kind, so
// that share of the jobs are, spread evenly.
func isLimited(k int, share float64) bool {
	return math.Floor(float64(k+1)*share) > math.Floor(float64(k)*share)
}

// LimitVariants are the flowcontrol scenario's variants, in the order it
// runs them by default.
var LimitVariants = []string{LimitNone, LimitIdle, LimitConcurrency, LimitRate}

// flowControl drains cfg.Jobs jobs once per variant of cfg.LimitVariants
// (LimitNone, LimitIdle, LimitConcurrency, LimitRate), each in a fresh schema: the backlog (not
// timed) holds a cfg.LimitedShare of limited jobs, spread over
// cfg.LimitTenants tenants, except for LimitIdle, whose jobs are all
// ordinary. The limit is set before the worker starts, which reads it
// before Start returns. Each variant is timed from the worker's start until
// the jobs table is empty and reported as one Result, with the claims
// seen on the worker's connections split into limited and ordinary ones.
func (r *Runner) flowControl(ctx context.Context, db *pgxpool.Pool, emit func(Result) error) error {
	for _, v := range r.cfg.LimitVariants {
		res, err := r.flowVariant(ctx, db, v)
		if err != nil {
			return fmt.Errorf("%s: %w", v, err)
		}
		if err := emit(res); err != nil {
			return err
		}
	}
	return nil
}

func (r *Runner) flowVariant(ctx context.Context, db *pgxpool.Pool, variant string) (Result, error) {
	label := ScenarioFlowControl + " " + variant
	e, err := r.setup(ctx, db, label)
	defer e.drop()
	if err != nil {
		return Result{}, err
	}
	n, share, tenants := r.cfg.Jobs, r.cfg.LimitedShare, r.cfg.LimitTenants
	if variant == LimitIdle {
		share = 0
	}
	nLimited := 0
	for k := range n {
		if isLimited(k, share) {
			nLimited++
		}
	}
	var next atomic.Int64 // the fill's job number, as the inserters take jobs
	var lim *admin.Limit
	switch variant {
	case LimitIdle, LimitRate:
		lim = &admin.Limit{Name: limitName, Kind: limited{}.Kind(), Rate: r.cfg.LimitRate, Per: time.Second, Burst: r.cfg.LimitRate}
	case LimitConcurrency:
		lim = &admin.Limit{Name: limitName, Kind: limited{}.Kind(), PerTenant: true, MaxRunning: r.cfg.LimitRunning}
	}
	if lim != nil {
		if err := e.ops.Limits().Set(ctx, db, *lim); err != nil {
			return Result{}, err
		}
	}
	err = e.backlog(ctx, n, label, func() docket.Item {
		k := int(next.Add(1) - 1)
		if !isLimited(k, share) {
			return docket.Item{Args: noop{}}
		}
		// Tenants by the limited job's own number: by k they would all be
		// one tenant, since limited jobs fall at a fixed stride of k.
		nth := int(math.Floor(float64(k) * share))
		return docket.Item{Args: limited{}, Opts: docket.Opts{Tenant: "t" + strconv.Itoa(nth%tenants)}}
	})
	if err != nil {
		return Result{}, err
	}

	var (
		ran                       atomic.Int64
		lastOrdinary, lastLimited atomic.Int64 // nanoseconds from start to the last start of each kind
		mu                        sync.Mutex
		ordinaryClaims, limClaim  claimStats
		// limitedStarts are the limited handlers' start times, unix ns.
		limitedStarts = make([]int64, nLimited)
		nStarted      atomic.Int64
		// slept is the limited handlers' time asleep, measured: a sleep
		// overshoots what it asked for.
		slept atomic.Int64
	)
	sleep := r.cfg.LimitedSleep
	lo, hi := r.cfg.HandlerMin, r.cfg.HandlerMax
	prog := r.progress(label, int64(n))
	var start time.Time
	started := func(last *atomic.Int64) {
		ran.Add(1)
		prog.add(1)
		last.Store(int64(time.Since(start)))
	}
	e.register = func(reg *handlers.Registry) error {
		return handlers.Register(reg, func(ctx context.Context, j *handlers.Job[limited]) error {
			if i := nStarted.Add(1) - 1; int(i) < len(limitedStarts) {
				limitedStarts[i] = time.Now().UnixNano()
			}
			if sleep {
				began := time.Now()
				time.Sleep(lo + rand.N(hi-lo+1))
				slept.Add(int64(time.Since(began)))
			}
			started(&lastLimited)
			return nil
		}, handlers.KindOpts{})
	}
	e.tracer = &claimTracer{claimed: func(isLimited bool, took time.Duration, jobs int) {
		mu.Lock()
		defer mu.Unlock()
		if isLimited {
			limClaim.add(took, jobs)
		} else {
			ordinaryClaims.add(took, jobs)
		}
	}}
	elapsed, timed, err := e.timedDrain(ctx, db, ScenarioFlowControl, prog, n, ran.Load, func() (func(), error) {
		start = time.Now() // of the handlers' start times
		return e.worker(ctx, func(ctx context.Context, j *handlers.Job[noop]) error {
			started(&lastOrdinary)
			return nil
		})
	})
	if err != nil {
		return Result{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	res := Result{Limit: variant, Jobs: n, LimitedJobs: nLimited, Workers: r.cfg.Workers,
		Seconds: elapsed.Seconds(), JobsPerSec: float64(n) / elapsed.Seconds(),
		OrdinaryPerSec: perSec(n-nLimited, time.Duration(lastOrdinary.Load())),
		LimitedSeconds: time.Duration(lastLimited.Load()).Seconds(),
		LimitedPerSec:  perSec(nLimited, time.Duration(lastLimited.Load())),
		OrdinaryClaims: ordinaryClaims.summary(), LimitedClaims: limClaim.summary(), CPU: timed.cpu(n)}
	if nLimited > 0 {
		res.Tenants = tenants
	}
	if lim != nil {
		res.LimitRunning, res.LimitRate, res.LimitBurst = lim.MaxRunning, lim.Rate, lim.Burst
	}
	if sleep {
		res.HandlerMin, res.HandlerMax = lo, hi
		if ran := nStarted.Load(); ran > 0 {
			res.HandlerMean = time.Duration(slept.Load() / ran)
		}
		if variant == LimitConcurrency && res.HandlerMean > 0 {
			// What the places could do if none ever waited for a claim,
			// each busy for as long as its handlers really took (as the
			// handlers scenario's bound).
			places := lim.MaxRunning * min(tenants, nLimited)
			res.Bound = float64(places) / res.HandlerMean.Seconds()
		}
	}
	if variant == LimitRate {
		starts := limitedStarts[:min(int(nStarted.Load()), len(limitedStarts))]
		res.Pickup = rateLimitedPickup(starts, lim.Rate, lim.Burst)
	}
	r.logf("%s: %d ordinary claims of %.1f jobs, %d limited claims of %.1f jobs", label,
		res.OrdinaryClaims.Claims, res.OrdinaryClaims.JobsPerClaim, res.LimitedClaims.Claims, res.LimitedClaims.JobsPerClaim)
	return res, nil
}

// perSec is jobs over d, 0 without either.
func perSec(jobs int, d time.Duration) float64 {
	if jobs == 0 || d <= 0 {
		return 0
	}
	return float64(jobs) / d.Seconds()
}

// rateLimitedPickup summarises how long limited jobs started after their
// token was due, in the steady state: the jobs past the burst that started
// a second or more after the first. A bucket that no claim lets fill up
// pays for job i (from 0, in start order) at t0 + (i+1-burst)/rate; t0 is
// when the first claim drew on the bucket, which the bench cannot see, so
// it is fitted as the latest t0 under which no job started before its
// token. The job that started closest to its token then counts 0: the
// figures understate every lag by that one job's (about a claim's round
// trip), and compare runs fairly.
func rateLimitedPickup(starts []int64, rate, burst int) Latency {
	if len(starts) <= burst {
		return Latency{}
	}
	slices.Sort(starts)
	offset := func(i int) int64 { return int64(float64(i+1-burst) * float64(time.Second) / float64(rate)) }
	from := burst
	for from < len(starts) && starts[from] < starts[0]+int64(time.Second) {
		from++
	}
	if from == len(starts) {
		return Latency{}
	}
	t0 := int64(math.MaxInt64)
	for i := from; i < len(starts); i++ {
		t0 = min(t0, starts[i]-offset(i))
	}
	lags := make([]time.Duration, 0, len(starts)-from)
	for i := from; i < len(starts); i++ {
		lags = append(lags, time.Duration(starts[i]-t0-offset(i)))
	}
	slices.Sort(lags)
	return Latency{P50: Percentile(lags, 50), P95: Percentile(lags, 95), P99: Percentile(lags, 99), Max: lags[len(lags)-1]}
}
