package worker

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/outbox"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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

var (
	metricsMu    sync.Mutex
	metricsByReg = map[prometheus.Registerer]*workerMetrics{}
)

// metricsFor returns the collectors registered on reg, registering them the
// first time.
func metricsFor(reg prometheus.Registerer) (*workerMetrics, error) {
	metricsMu.Lock()
	defer metricsMu.Unlock()
	if m := metricsByReg[reg]; m != nil {
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
	for _, c := range []prometheus.Collector{m.claimDur, m.claimed, m.pickup, m.jobDur, m.outcomes, m.leaseLosses, m.notifyReconnects, m} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	metricsByReg[reg] = m
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

func (m *workerMetrics) ran(kind string, d time.Duration) {
	if m == nil {
		return
	}
	m.jobDur.WithLabelValues(kind).Observe(d.Seconds())
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

// StatusCollector exports the status views (outbox.Client.Status) as
// gauges, read from the database at every scrape: per queue the jobs by
// state, lag, paused flag, the dead-letter queue and its 24-hour delta;
// per table dead and live tuples and the last vacuum and analyze; stuck
// jobs; unserved kinds; the age of the oldest holder of the vacuum
// horizon; live workers; warnings by code; the outbox relay's backlog,
// lag, dead events and live relays. A failed read sets docket_status_up
// to 0. Completions, retries and deaths are the workers' counters
// (docket_jobs_finished_total), which can be rated and summed.
type StatusCollector struct {
	db         outbox.Pgx
	ob         *outbox.Client
	thresholds outbox.Thresholds
	timeout    time.Duration
	descs      map[string]*prometheus.Desc
}

// NewStatusCollector returns a collector that reads ob's status through db
// with thresholds th (zero values mean outbox's defaults) at every scrape,
// bounded by a 10-second timeout.
func NewStatusCollector(db outbox.Pgx, ob *outbox.Client, th outbox.Thresholds) *StatusCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &StatusCollector{db: db, ob: ob, thresholds: th, timeout: 10 * time.Second, descs: map[string]*prometheus.Desc{
		"up":          d("docket_status_up", "1 when the last status read succeeded."),
		"jobs":        d("docket_queue_jobs", "Live jobs by queue and state (ready, scheduled, running).", "queue", "state"),
		"lag":         d("docket_queue_lag_seconds", "Age of the queue's oldest due job that is not running.", "queue"),
		"paused":      d("docket_queue_paused", "1 when the queue is paused.", "queue"),
		"dlq":         d("docket_dlq_jobs", "Jobs in the dead-letter table, by queue.", "queue"),
		"dlqDelta":    d("docket_dlq_delta_24h_jobs", "Growth of the dead-letter queue over the last 24 hours, by queue.", "queue"),
		"dead":        d("docket_table_dead_tuples", "Dead tuples of Docket's tables (pg_stat_user_tables).", "table"),
		"live":        d("docket_table_live_tuples", "Live tuples of Docket's tables (pg_stat_user_tables).", "table"),
		"vacuumed":    d("docket_table_last_vacuum_timestamp_seconds", "Last (auto)vacuum of the table, Unix time; 0 if never.", "table"),
		"analyzed":    d("docket_table_last_analyze_timestamp_seconds", "Last (auto)analyze of the table, Unix time; 0 if never.", "table"),
		"stuck":       d("docket_stuck_jobs", "Running jobs whose lease expired and that nobody reaped."),
		"unserved":    d("docket_unserved_jobs", "Ready jobs of a queue and kind that no live worker serves.", "queue", "kind"),
		"horizon":     d("docket_vacuum_horizon_age_seconds", "How long the oldest transaction of this database has held back the vacuum horizon; 0 if none."),
		"horizonXIDs": d("docket_vacuum_horizon_age_xids", "Age in transactions of the oldest xmin holding back this database's vacuum horizon (transactions, replication slots, prepared transactions)."),
		"workers":     d("docket_workers_live", "Worker processes that heartbeated recently."),
		"warnings":    d("docket_status_warnings", "Status warnings by code.", "code"),
		// The outbox relay's backlog, where migration 011 is applied.
		"eventsPending": d("docket_events_pending", "Outbox events committed and not yet acknowledged by the broker (dead letters excluded)."),
		"eventsLag":     d("docket_events_lag_seconds", "Age of the oldest pending outbox event: the relay's lag; 0 if none."),
		"eventsDead":    d("docket_events_dead", "Outbox events the broker refused for good, waiting for replay or purge."),
		"eventsBlocked": d("docket_event_keys_blocked", "Event keys held back by a dead event."),
		"relays":        d("docket_relays_live", "Outbox relays holding a live lease."),
	}}
}

// Describe implements prometheus.Collector.
func (c *StatusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector: one status read per scrape.
func (c *StatusCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	gauge := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.GaugeValue, v, labels...)
	}
	s, err := c.ob.Status(ctx, c.db, c.thresholds)
	if err != nil {
		gauge("up", 0)
		return
	}
	gauge("up", 1)
	for _, q := range s.Queues {
		gauge("jobs", float64(q.Ready), q.Queue, "ready")
		gauge("jobs", float64(q.Scheduled), q.Queue, "scheduled")
		gauge("jobs", float64(q.Running), q.Queue, "running")
		gauge("lag", q.Lag.Seconds(), q.Queue)
		gauge("paused", b2f(q.Paused), q.Queue)
		gauge("dlq", float64(q.DLQSize), q.Queue)
		gauge("dlqDelta", float64(q.DLQDelta24h), q.Queue)
	}
	for _, t := range tableStats(s.Tables) {
		gauge("dead", float64(t.dead), t.name)
		gauge("live", float64(t.live), t.name)
		gauge("vacuumed", unix(t.vacuumed), t.name)
		gauge("analyzed", unix(t.analyzed), t.name)
	}
	gauge("stuck", float64(s.StuckCount))
	for _, u := range s.Unserved {
		gauge("unserved", float64(u.Jobs), u.Queue, u.Kind)
	}
	var age time.Duration
	var xids int64
	for _, h := range s.Horizon {
		if !h.SameDatabase {
			continue
		}
		if h.AgeKnown && h.Age > age {
			age = h.Age
		}
		xids = max(xids, h.XIDAge)
	}
	gauge("horizon", age.Seconds())
	gauge("horizonXIDs", float64(xids))
	live := 0
	for _, w := range s.Workers {
		if !w.Live {
			continue
		}
		live++
	}
	gauge("workers", float64(live))
	byCode := map[string]int{}
	for _, w := range s.Warnings {
		byCode[w.Code]++
	}
	for _, code := range outbox.WarningCodes() {
		gauge("warnings", float64(byCode[code]), code)
	}
	if ev := s.Events; ev != nil {
		gauge("eventsPending", float64(ev.Pending))
		gauge("eventsLag", ev.Lag.Seconds())
		gauge("eventsDead", float64(ev.Dead))
		gauge("eventsBlocked", float64(ev.BlockedKeys))
		gauge("relays", float64(ev.Relays))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func unix(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

func laterTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// NewMetricsRegistry returns a registry with the Go runtime and process
// collectors, ready for a worker's collectors and a StatusCollector.
func NewMetricsRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// MetricsServer serves a gatherer's metrics at /metrics over HTTP, with
// /healthz, /readyz and an index at /.
type MetricsServer struct {
	srv *http.Server
	ln  net.Listener
}

// ServeMetrics listens on addr ("host:port"; ":0" picks a free port) and
// serves g at /metrics in the background until Close. ready decides /readyz
// (see SchemaReadiness); nil means ready while the server runs.
func ServeMetrics(addr string, g prometheus.Gatherer, ready Readiness) (*MetricsServer, error) {
	return serveMetrics(addr, g, ready, nil)
}

// serveMetrics is ServeMetrics with the warnings /readyz adds to its
// answer (see healthMux); notes may be nil.
func serveMetrics(addr string, g prometheus.Gatherer, ready Readiness, notes func() []string) (*MetricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	healthMux(mux, ready, notes)
	s := &MetricsServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address the server listens on.
func (s *MetricsServer) Addr() string { return s.ln.Addr().String() }

// Close stops the server, waiting up to ctx for scrapes in progress.
func (s *MetricsServer) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// historyTable is the partitioned history table; its per-day partitions
// (docket_jobs_done_YYYYMMDD) are reported under its name, so that the
// table label does not churn with a new series every day.
const historyTable = "docket_jobs_done"

// tableStat is one table label's numbers.
type tableStat struct {
	name               string
	dead, live         int64
	vacuumed, analyzed time.Time
}

// tableStats folds the history partitions into one historyTable row:
// tuples summed, the latest vacuum and analyze of any of them.
func tableStats(tables []outbox.TableStatus) []tableStat {
	var out []tableStat
	at := map[string]int{}
	for _, t := range tables {
		name := t.Table
		if strings.HasPrefix(name, historyTable) {
			name = historyTable
		}
		i, ok := at[name]
		if !ok {
			i = len(out)
			at[name] = i
			out = append(out, tableStat{name: name})
		}
		o := &out[i]
		o.dead += t.DeadTuples
		o.live += t.LiveTuples
		o.vacuumed = laterTime(o.vacuumed, t.LastVacuumed())
		o.analyzed = laterTime(o.analyzed, laterTime(t.LastAnalyze, t.LastAutoanalyze))
	}
	return out
}
