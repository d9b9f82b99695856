package worker

import (
	"slices"
	"sync"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics.
//
// A worker observes what happens in its process — claim round trips, handler
// durations and outcomes by kind, in-flight jobs, lost leases, LISTEN
// reconnects — into collectors registered on Config.Metrics (or on a private
// registry served at Config.MetricsAddr). What the database knows — backlog,
// lag, throughput, the dead-letter queue, vacuum and the vacuum horizon — is
// read by StatusCollector at scrape time from the status views, so it is the
// same in every process that exports it; export it from one place (one
// worker with MetricsStatus, or `docket metrics serve`).

// claimBuckets resolve claim round trips from a fraction of a millisecond
// (a cheap claim on a nearby server) to seconds (vacuum debt).
var claimBuckets = []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5}

// jobBuckets resolve handler run times from 1ms to about 4.4 minutes.
var jobBuckets = prometheus.ExponentialBuckets(0.001, 4, 10)

// pickupBuckets resolve pickup latency from a millisecond (an idle worker
// woken by NOTIFY) to ten minutes (a backlog).
var pickupBuckets = []float64{.001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10, 30, 60, 120, 300, 600}

// workerMetrics are the collectors of one registerer, shared by every
// worker registered on it.
type workerMetrics struct {
	claimDur         *prometheus.HistogramVec
	claimed          *prometheus.CounterVec
	pickup           *prometheus.HistogramVec
	jobDur           *prometheus.HistogramVec
	outcomes         *prometheus.CounterVec
	leaseLosses      prometheus.Counter
	notifyReconnects prometheus.Counter

	mu      sync.Mutex
	workers []*Worker // for the in-flight gauge and the claim window

	inFlightDesc *prometheus.Desc
}

// regKey names the collectors of one registerer and database label.
type regKey struct {
	reg      prometheus.Registerer
	database string
}

var (
	metricsMu    sync.Mutex
	metricsByReg = map[regKey]*workerMetrics{}
)

// labelled is reg, or reg adding the label database="<database>" to every
// series of the collectors registered through it when database is set.
func labelled(reg prometheus.Registerer, database string) prometheus.Registerer {
	if database == "" {
		return reg
	}
	return prometheus.WrapRegistererWith(prometheus.Labels{"database": database}, reg)
}

// metricsFor returns the collectors registered on reg for database,
// registering them the first time: workers of one database share them,
// workers of several databases on one registerer have a series each.
func metricsFor(reg prometheus.Registerer, database string) (*workerMetrics, error) {
	metricsMu.Lock()
	defer metricsMu.Unlock()
	key := regKey{reg, database}
	if m := metricsByReg[key]; m != nil {
		return m, nil
	}
	m := &workerMetrics{
		claimDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "docket_claim_duration_seconds",
			Help:    "Round-trip time of claim statements, by pool. A rising p99 is the early sign of vacuum debt.",
			Buckets: claimBuckets,
		}, []string{"pool"}),
		claimed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "docket_jobs_claimed_total",
			Help: "Jobs claimed, by pool.",
		}, []string{"pool"}),
		pickup: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "docket_job_pickup_seconds",
			Help:    "Time from when a job was due (its run_at) to its claim, by the database's clock, by pool.",
			Buckets: pickupBuckets,
		}, []string{"pool"}),
		jobDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "docket_job_duration_seconds",
			Help:    "Handler run time (middleware included), by kind.",
			Buckets: jobBuckets,
		}, []string{"kind"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "docket_jobs_finished_total",
			Help: "Handler runs by kind and outcome: completed, retried, snoozed, dead, released.",
		}, []string{"kind", "outcome"}),
		leaseLosses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "docket_lease_losses_total",
			Help: "Jobs this process lost because their lease expired (reaped, maybe run elsewhere).",
		}),
		notifyReconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "docket_notify_reconnects_total",
			Help: "Times the LISTEN connection was lost and made again.",
		}),
		inFlightDesc: prometheus.NewDesc("docket_jobs_in_flight",
			"Jobs claimed by this process whose outcome is not written yet.", nil, nil),
	}
	lreg := labelled(reg, database)
	for _, c := range []prometheus.Collector{m.claimDur, m.claimed, m.pickup, m.jobDur, m.outcomes, m.leaseLosses, m.notifyReconnects, m} {
		if err := lreg.Register(c); err != nil {
			return nil, err
		}
	}
	metricsByReg[key] = m
	return m, nil
}

// Describe implements prometheus.Collector for the per-process gauges.
func (m *workerMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.inFlightDesc
}

// Collect implements prometheus.Collector for the per-process gauges.
func (m *workerMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	workers := slices.Clone(m.workers)
	m.mu.Unlock()
	n := 0
	for _, w := range workers {
		n += w.inflight.len()
	}
	ch <- prometheus.MustNewConstMetric(m.inFlightDesc, prometheus.GaugeValue, float64(n))
}

func (m *workerMetrics) attach(w *Worker) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.workers = append(m.workers, w)
}

func (m *workerMetrics) detach(w *Worker) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.workers = slices.DeleteFunc(m.workers, func(x *Worker) bool { return x == w })
}

// The observe methods are no-ops on a nil *workerMetrics (metrics off).

func (m *workerMetrics) claim(pool string, d time.Duration, jobs []*core.Job) {
	if m == nil {
		return
	}
	m.claimDur.WithLabelValues(pool).Observe(d.Seconds())
	if len(jobs) == 0 {
		return
	}
	m.claimed.WithLabelValues(pool).Add(float64(len(jobs)))
	pickup := m.pickup.WithLabelValues(pool)
	for _, j := range jobs {
		// Both times are the database's: no clock skew between hosts.
		pickup.Observe(max(j.LockedAt.Sub(j.RunAt), 0).Seconds())
	}
}

func (m *workerMetrics) outcome(kind, what string) {
	if m == nil {
		return
	}
	m.outcomes.WithLabelValues(kind, what).Inc()
}

func (m *workerMetrics) leaseLost() {
	if m != nil {
		m.leaseLosses.Inc()
	}
}

func (m *workerMetrics) reconnected() {
	if m != nil {
		m.notifyReconnects.Inc()
	}
}

// outcomeName is the outcome label of a queued outcome.
func outcomeName(o outcome) string {
	switch o.what {
	case oComplete:
		return "completed"
	case oFail:
		return "retried"
	case oSnooze:
		return "snoozed"
	case oDead:
		return "dead"
	case oRelease:
		return "released"
	case oCancelled:
		return "cancelled"
	}
	return "other"
}

// claimWindow keeps the round-trip times of a process's recent claims, for
// percentiles published in docket_workers, where `docket status` reads
// them. Prometheus gets the docket_claim_duration_seconds histogram instead:
// percentiles of one process cannot be summed across processes.
type claimWindow struct {
	mu    sync.Mutex
	at    [claimWindowSize]time.Time
	took  [claimWindowSize]time.Duration
	next  int
	total int64
}

const (
	claimWindowSize = 1024
	claimWindowAge  = 5 * time.Minute
)

func (c *claimWindow) add(now time.Time, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at[c.next], c.took[c.next] = now, d
	c.next = (c.next + 1) % claimWindowSize
	c.total++
}

// recent appends the samples of the last claimWindowAge to dst.
func (c *claimWindow) recent(dst []time.Duration) []time.Duration {
	cut := time.Now().Add(-claimWindowAge)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, at := range c.at {
		if !at.IsZero() && at.After(cut) {
			dst = append(dst, c.took[i])
		}
	}
	return dst
}

func (c *claimWindow) count() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// percentile returns the p-th percentile (nearest rank) of samples, which
// it sorts; zero for none.
func percentile(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	slices.Sort(samples)
	i := int(p*float64(len(samples))+0.5) - 1
	return samples[min(max(i, 0), len(samples)-1)]
}
