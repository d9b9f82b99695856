package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// The worker's OpenTelemetry instruments carry the same measurements as
// its Prometheus collectors, read here with the SDK's manual reader: names,
// units, attributes (pool, kind, outcome; never a payload or a process id)
// and values, for jobs that complete, retry and die.
func TestOpenTelemetryMetrics(t *testing.T) {
	t.Parallel()
	const ok, doomed = 6, 2
	e := setup(t, 8)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		if j.Args.N < 0 {
			return errors.New("always fails")
		}
		return nil
	}, handlers.KindOpts{})
	for i := range ok {
		e.enqueue(testArgs{N: i, Secret: "do-not-export"}, enqueue.Opts{})
	}
	for i := range doomed {
		e.enqueue(testArgs{N: -1 - i}, enqueue.Opts{MaxAttempts: 1})
	}
	e.worker(reg, Config{MeterProvider: mp, Pools: []PoolConfig{{Name: "main", Queues: []string{"default"}, Concurrency: 4}}})
	waitFor(t, 20*time.Second, "every job finished", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs`) == 0
	})
	time.Sleep(100 * time.Millisecond) // the outcome counters follow the writes

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != tracerName {
			t.Errorf("instrumentation scope %q, want %q", sm.Scope.Name, tracerName)
		}
		for _, m := range sm.Metrics {
			got[m.Name] = m
		}
	}
	units := map[string]string{
		"docket.claim.duration": "s", "docket.job.pickup": "s", "docket.job.duration": "s",
		"docket.jobs.claimed": "{job}", "docket.jobs.finished": "{job}", "docket.jobs.in_flight": "{job}",
	}
	for name, unit := range units {
		m, ok := got[name]
		if !ok {
			t.Errorf("no %s instrument recorded", name)
			continue
		}
		if m.Unit != unit {
			t.Errorf("%s: unit %q, want %q", name, m.Unit, unit)
		}
	}
	histCount := func(name string, attr attribute.KeyValue) uint64 {
		h, ok := got[name].Data.(metricdata.Histogram[float64])
		if !ok {
			t.Fatalf("%s is a %T, want a histogram", name, got[name].Data)
		}
		var n uint64
		for _, p := range h.DataPoints {
			if v, ok := p.Attributes.Value(attr.Key); ok && v == attr.Value {
				n += p.Count
			}
			checkAttrs(t, name, p.Attributes)
		}
		return n
	}
	sum := func(name string, want ...attribute.KeyValue) int64 {
		s, ok := got[name].Data.(metricdata.Sum[int64])
		if !ok {
			t.Fatalf("%s is a %T, want a sum", name, got[name].Data)
		}
		var n int64
	points:
		for _, p := range s.DataPoints {
			checkAttrs(t, name, p.Attributes)
			for _, a := range want {
				if v, ok := p.Attributes.Value(a.Key); !ok || v != a.Value {
					continue points
				}
			}
			n += p.Value
		}
		return n
	}
	pool := AttrPool.String("main")
	if n := histCount("docket.job.pickup", pool); n != ok+doomed {
		t.Errorf("docket.job.pickup counted %d claims of jobs, want %d", n, ok+doomed)
	}
	if n := histCount("docket.job.duration", AttrKind.String("test")); n != ok+doomed {
		t.Errorf("docket.job.duration counted %d runs, want %d", n, ok+doomed)
	}
	if n := histCount("docket.claim.duration", pool); n < 1 {
		t.Error("docket.claim.duration recorded no claim")
	}
	if n := sum("docket.jobs.claimed", pool); n != ok+doomed {
		t.Errorf("docket.jobs.claimed = %d, want %d", n, ok+doomed)
	}
	if n := sum("docket.jobs.finished", AttrKind.String("test"), AttrOutcome.String("completed")); n != ok {
		t.Errorf("docket.jobs.finished{completed} = %d, want %d", n, ok)
	}
	if n := sum("docket.jobs.finished", AttrKind.String("test"), AttrOutcome.String("dead")); n != doomed {
		t.Errorf("docket.jobs.finished{dead} = %d, want %d", n, doomed)
	}
}

// checkAttrs fails on an attribute other than the pool, kind and outcome.
func checkAttrs(t *testing.T, name string, set attribute.Set) {
	t.Helper()
	for _, kv := range set.ToSlice() {
		switch kv.Key {
		case AttrPool, AttrKind, AttrOutcome:
		default:
			t.Errorf("%s carries attribute %s=%s", name, kv.Key, kv.Value.Emit())
		}
		if kv.Value.Emit() == "do-not-export" {
			t.Errorf("%s carries a payload value", name)
		}
	}
}

// Recording a claim, a run and an outcome allocates nothing once the
// attribute sets are cached (here with the global provider, a no-op until
// an SDK is installed, as in an application that exports none).
func TestMetersAllocateNothing(t *testing.T) {
	m, err := newMeters(nil, &Worker{inflight: newInflight()}, "db1")
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	r := recorder{otel: m}
	jobs := []*core.Job{{}, {}}
	k := r.forKind("k")
	record := func() {
		r.claim("main", time.Millisecond, jobs)
		r.outcome("k", "completed")
		k.ran(time.Millisecond)
		k.completed()
	}
	record()
	if n := testing.AllocsPerRun(1000, record); n != 0 {
		t.Errorf("%v allocations per claim, run and outcome, want 0", n)
	}
}
