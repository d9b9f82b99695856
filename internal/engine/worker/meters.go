package worker

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// AttrPool is the attribute naming a worker pool on the OpenTelemetry
// instruments of claims.
const AttrPool = attribute.Key("docket.pool")

// recorder is the one place a worker records what it measures: every
// observation goes to its Prometheus collectors, when it has any, and to
// its OpenTelemetry instruments. Each half is a no-op when nil.
type recorder struct {
	prom *workerMetrics
	otel *meters
}

func (r recorder) claim(pool string, d time.Duration, jobs []*core.Job) {
	r.prom.claim(pool, d, jobs)
	r.otel.claim(pool, d, jobs)
}

func (r recorder) outcome(kind, what string) {
	r.prom.outcome(kind, what)
	r.otel.outcome(kind, what)
}

func (r recorder) leaseLost() {
	r.prom.leaseLost()
	r.otel.leaseLost()
}

func (r recorder) reconnected() {
	r.prom.reconnected()
	r.otel.reconnected()
}

// meters are a worker's OpenTelemetry instruments, the same measurements
// as its Prometheus collectors under OpenTelemetry's names (see Metrics in
// the package doc).
type meters struct {
	claimDur, pickup, jobDur metric.Float64Histogram
	claimed, finished        metric.Int64Counter
	leaseLosses, reconnects  metric.Int64Counter
	inFlight                 metric.Registration

	// base holds the attributes every measurement carries: the
	// database, when the worker names one (Config.Database).
	base []attribute.KeyValue
	// opts caches the attribute options of each pool, kind and (kind,
	// outcome), so that recording allocates nothing per job.
	mu   sync.RWMutex
	opts map[optKey]attrOpts
}

// newMeters makes w's instruments from mp (nil: the global
// MeterProvider, a no-op until the application installs an SDK), with the
// attribute docket.database on every measurement when database is set.
func newMeters(mp metric.MeterProvider, w *Worker, database string) (*meters, error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(tracerName)
	s := &meters{opts: map[optKey]attrOpts{}}
	if database != "" {
		s.base = []attribute.KeyValue{core.AttrDatabase.String(database)}
	}
	all := s.opt(optKey{})
	var err error
	hist := func(name, unit, desc string, bounds []float64) metric.Float64Histogram {
		if err != nil {
			return nil
		}
		var h metric.Float64Histogram
		h, err = m.Float64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(bounds...))
		return h
	}
	counter := func(name, unit, desc string) metric.Int64Counter {
		if err != nil {
			return nil
		}
		var c metric.Int64Counter
		c, err = m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		return c
	}
	s.claimDur = hist("docket.claim.duration", "s", "Round-trip time of claim statements, by pool.", claimBuckets)
	s.pickup = hist("docket.job.pickup", "s", "Time from when a job was due (its run_at) to its claim, by the database's clock, by pool.", pickupBuckets)
	s.jobDur = hist("docket.job.duration", "s", "Handler run time (middleware included), by kind.", jobBuckets)
	s.claimed = counter("docket.jobs.claimed", "{job}", "Jobs claimed, by pool.")
	s.finished = counter("docket.jobs.finished", "{job}", "Handler runs by kind and outcome: completed, retried, snoozed, dead, released.")
	s.leaseLosses = counter("docket.lease.losses", "{job}", "Jobs this process lost because their lease expired.")
	s.reconnects = counter("docket.notify.reconnects", "{reconnect}", "Times the LISTEN connection was lost and made again.")
	if err != nil {
		return nil, err
	}
	gauge, err := m.Int64ObservableGauge("docket.jobs.in_flight", metric.WithUnit("{job}"),
		metric.WithDescription("Jobs claimed by this process whose outcome is not written yet."))
	if err != nil {
		return nil, err
	}
	s.inFlight, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(gauge, int64(w.inflight.len()), all.obs...)
		return nil
	}, gauge)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// attrOpts is one attribute set as the options Record and Add take.
type attrOpts struct {
	rec []metric.RecordOption
	add []metric.AddOption
	obs []metric.ObserveOption
}

// optKey names a cached attribute set: a pool, a kind, a kind and an
// outcome, or none (the base attributes alone).
type optKey struct {
	pool, kind, outcome string
}

// opt returns the cached attribute options for key, made of the base
// attributes and attrs.
func (s *meters) opt(key optKey, attrs ...attribute.KeyValue) attrOpts {
	s.mu.RLock()
	o, ok := s.opts[key]
	s.mu.RUnlock()
	if ok {
		return o
	}
	set := metric.WithAttributeSet(attribute.NewSet(append(slices.Clip(s.base), attrs...)...))
	o = attrOpts{rec: []metric.RecordOption{set}, add: []metric.AddOption{set}, obs: []metric.ObserveOption{set}}
	s.mu.Lock()
	s.opts[key] = o
	s.mu.Unlock()
	return o
}

func (s *meters) claim(pool string, d time.Duration, jobs []*core.Job) {
	if s == nil {
		return
	}
	ctx := context.Background()
	opt := s.opt(optKey{pool: pool}, AttrPool.String(pool))
	s.claimDur.Record(ctx, d.Seconds(), opt.rec...)
	if len(jobs) == 0 {
		return
	}
	s.claimed.Add(ctx, int64(len(jobs)), opt.add...)
	for _, j := range jobs {
		s.pickup.Record(ctx, max(j.LockedAt.Sub(j.RunAt), 0).Seconds(), opt.rec...)
	}
}

func (s *meters) outcome(kind, what string) {
	if s == nil {
		return
	}
	opt := s.opt(optKey{kind: kind, outcome: what}, AttrKind.String(kind), AttrOutcome.String(what))
	s.finished.Add(context.Background(), 1, opt.add...)
}

func (s *meters) leaseLost() {
	if s != nil {
		s.leaseLosses.Add(context.Background(), 1, s.opt(optKey{}).add...)
	}
}

func (s *meters) reconnected() {
	if s != nil {
		s.reconnects.Add(context.Background(), 1, s.opt(optKey{}).add...)
	}
}

// close unregisters the in-flight callback.
func (s *meters) close() {
	if s != nil {
		_ = s.inFlight.Unregister()
	}
}

// kindMeters record the two things every run of one kind counts, its
// handler's duration and, most often, its completion, with the kind's
// labels and attributes looked up once per kind instead of once per run.
// The Prometheus series are looked up at their first use, as
// WithLabelValues per run did: a series appears once it has a count. A
// nil *kindMeters records nothing (RunOne's runs).
type kindMeters struct {
	kind     string
	prom     *workerMetrics // nil: no Prometheus metrics
	durOnce  sync.Once
	promDur  prometheus.Observer
	doneOnce sync.Once
	promDone prometheus.Counter
	otel     *meters // nil: no OpenTelemetry instruments
	otelDur  attrOpts
	otelDone attrOpts
}

// forKind returns the meters of kind's runs.
func (r recorder) forKind(kind string) *kindMeters {
	k := &kindMeters{kind: kind, prom: r.prom, otel: r.otel}
	if r.otel != nil {
		k.otelDur = r.otel.opt(optKey{kind: kind}, AttrKind.String(kind))
		k.otelDone = r.otel.opt(optKey{kind: kind, outcome: "completed"}, AttrKind.String(kind), AttrOutcome.String("completed"))
	}
	return k
}

// ran records a run of the kind whose handler took d.
func (k *kindMeters) ran(d time.Duration) {
	if k == nil {
		return
	}
	if k.prom != nil {
		k.durOnce.Do(func() { k.promDur = k.prom.jobDur.WithLabelValues(k.kind) })
		k.promDur.Observe(d.Seconds())
	}
	if k.otel != nil {
		k.otel.jobDur.Record(context.Background(), d.Seconds(), k.otelDur.rec...)
	}
}

// completed counts a run of the kind that completed (recorder.outcome).
func (k *kindMeters) completed() {
	if k == nil {
		return
	}
	if k.prom != nil {
		k.doneOnce.Do(func() { k.promDone = k.prom.outcomes.WithLabelValues(k.kind, "completed") })
		k.promDone.Inc()
	}
	if k.otel != nil {
		k.otel.finished.Add(context.Background(), 1, k.otelDone.add...)
	}
}
