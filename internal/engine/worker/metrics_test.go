package worker

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/outbox"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// scrape fetches the metrics endpoint and returns its text, one sample per line.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("scrape: %d %v", resp.StatusCode, err)
	}
	return string(body)
}

// statusViews is what docket.WorkerConfig.MetricsStatus adds to a worker's
// Collectors: the status views of the env's schema.
func (e *env) statusViews() []prometheus.Collector {
	return []prometheus.Collector{admin.NewStatusCollector(e.pool, e.ops, admin.Thresholds{})}
}

// sample returns the value of the sample whose line starts with prefix
// (metric name and labels as exposed), and false when there is none.
func sample(text, prefix string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix+" ") {
			v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, prefix)), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// After a small run the endpoint shows every documented metric with
// numbers that match the run.
func TestMetricsEndpointAfterARun(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	var n atomic.Int64
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		n.Add(1)
		if j.Args.N%10 == 0 {
			return handlers.Cancel(errors.New("no such customer"))
		}
		return nil
	}, handlers.KindOpts{})
	const total = 50
	items := make([]enqueue.Item, total)
	for i := range items {
		items[i] = enqueue.Item{Args: testArgs{N: i}}
	}
	if _, err := e.jobs.EnqueueMany(t.Context(), e.pool, items); err != nil {
		t.Fatal(err)
	}
	// core.Work nobody serves, and a backlog in a paused queue.
	e.enqueue(otherArgs{}, enqueue.Opts{Queue: "default"})
	e.enqueue(testArgs{}, enqueue.Opts{Queue: "held"})
	if err := e.ops.Queues().Pause(t.Context(), e.pool, "held"); err != nil {
		t.Fatal(err)
	}
	w := e.worker(reg, Config{MetricsAddr: "127.0.0.1:0", Collectors: e.statusViews(), HeartbeatInterval: 100 * time.Millisecond,
		Pools: []PoolConfig{{Name: "main", Queues: []string{"default", "held"}, Concurrency: 4}}})
	waitFor(t, 10*time.Second, "the jobs to finish", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE kind = 'test' AND queue = 'default'`) == 0
	})
	var text string
	waitFor(t, 5*time.Second, "the outcomes in metrics", func() bool {
		text = scrape(t, w.MetricsAddr())
		v, _ := sample(text, `docket_jobs_finished_total{kind="test",outcome="completed"}`)
		live, _ := sample(text, `docket_workers_live`)
		return v == total-total/10 && live >= 1
	})
	// No label that churns with processes: a worker's UUID would make a new
	// series for every restart.
	if strings.Contains(text, `worker="`) {
		t.Errorf("a metric carries a per-process worker label:\n%s", text)
	}
	if strings.Contains(text, `table="docket_jobs_done_`) {
		t.Errorf("a history partition has its own table label:\n%s", text)
	}
	checkMonitoringMetrics(t, text)
	checks := []struct {
		prefix string
		ok     func(float64) bool
	}{
		{`docket_jobs_finished_total{kind="test",outcome="dead"}`, func(v float64) bool { return v == total/10 }},
		{`docket_job_duration_seconds_count{kind="test"}`, func(v float64) bool { return v == total }},
		{`docket_job_duration_seconds_bucket{kind="test",le="+Inf"}`, func(v float64) bool { return v == total }},
		{`docket_claim_duration_seconds_count{pool="main"}`, func(v float64) bool { return v >= 1 }},
		{`docket_jobs_claimed_total{pool="main"}`, func(v float64) bool { return v == total }},
		{`docket_claim_duration_seconds_sum{pool="main"}`, func(v float64) bool { return v > 0 }},
		{`docket_jobs_in_flight`, func(v float64) bool { return v == 0 }},
		{`docket_lease_losses_total`, func(v float64) bool { return v == 0 }},
		{`docket_notify_reconnects_total`, func(v float64) bool { return v == 0 }},
		{`docket_status_up`, func(v float64) bool { return v == 1 }},
		{`docket_queue_jobs{queue="held",state="ready"}`, func(v float64) bool { return v == 1 }},
		{`docket_queue_paused{queue="held"}`, func(v float64) bool { return v == 1 }},
		{`docket_queue_lag_seconds{queue="held"}`, func(v float64) bool { return v > 0 }},
		{`docket_job_pickup_seconds_count{pool="main"}`, func(v float64) bool { return v == total }},
		{`docket_job_pickup_seconds_bucket{pool="main",le="600"}`, func(v float64) bool { return v == total }},
		{`docket_dlq_jobs{queue="default"}`, func(v float64) bool { return v == total/10 }},
		{`docket_dlq_delta_24h_jobs{queue="default"}`, func(v float64) bool { return v == total/10 }},
		{`docket_table_dead_tuples{table="docket_jobs"}`, func(v float64) bool { return v >= 0 }},
		{`docket_table_live_tuples{table="docket_jobs_done"}`, func(v float64) bool { return v >= 0 }},
		{`docket_table_live_tuples{table="docket_jobs"}`, func(v float64) bool { return v >= 0 }},
		{`docket_table_last_vacuum_timestamp_seconds{table="docket_jobs"}`, func(v float64) bool { return v >= 0 }},
		{`docket_stuck_jobs`, func(v float64) bool { return v == 0 }},
		{`docket_unserved_jobs{kind="other",queue="default"}`, func(v float64) bool { return v == 1 }},
		{`docket_vacuum_horizon_age_seconds`, func(v float64) bool { return v >= 0 }},
		{`docket_vacuum_horizon_age_xids`, func(v float64) bool { return v >= 0 }},
		{`docket_workers_live`, func(v float64) bool { return v == 1 }},
		{`docket_status_warnings{code="unserved_kind"}`, func(v float64) bool { return v == 1 }},
		{`docket_status_warnings{code="paused"}`, func(v float64) bool { return v == 1 }},
		{`go_goroutines`, func(v float64) bool { return v > 0 }},
	}
	// Every claim took under 5 s: the histogram's 5 s bucket holds them all
	// (the bound the removed quantile gauge's p99 was held to).
	claims, _ := sample(text, `docket_claim_duration_seconds_count{pool="main"}`)
	if under, ok := sample(text, `docket_claim_duration_seconds_bucket{pool="main",le="5"}`); !ok || under != claims {
		t.Errorf("%v of %v claims took under 5s (bucket present %v)", under, claims, ok)
	}
	for _, c := range checks {
		v, ok := sample(text, c.prefix)
		if !ok || !c.ok(v) {
			t.Errorf("%s = %v (present %v)", c.prefix, v, ok)
		}
	}
	if strings.Contains(text, `"N"`) || strings.Contains(text, "no such customer") {
		t.Error("metrics show payload or error text")
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", text)
	}
}

// A paused queue is not claimed by a running worker within about one poll
// interval; resumed, it drains.
func TestPausedQueueIsNotClaimed(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	defer e.logJobsOnFailure()
	var ran, claims atomic.Int64
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error { ran.Add(1); return nil }, handlers.KindOpts{})
	w := e.worker(reg, Config{PollInterval: 50 * time.Millisecond, DisableNotify: true,
		Pools:   []PoolConfig{{Queues: []string{"a", "b"}, Concurrency: 4}},
		OnClaim: func(time.Duration, int) { claims.Add(1) }})
	if err := e.ops.Queues().Pause(t.Context(), e.pool, "a"); err != nil {
		t.Fatal(err)
	}
	// Wait until the worker has read the pause (every poll interval, but a
	// loaded machine may take longer than a fixed sleep allows).
	waitFor(t, 5*time.Second, "the worker to see queue a paused", func() bool {
		m := w.pauses.load()
		return m != nil && (*m)["a"]
	})
	// A claim already under way when the pause was read may still name
	// queue a ("within one poll interval"): let a few claims finish first.
	seen := claims.Load()
	waitFor(t, 5*time.Second, "claims after the pause", func() bool { return claims.Load() >= seen+3 })
	e.enqueue(testArgs{}, enqueue.Opts{Queue: "a"})
	e.enqueue(testArgs{}, enqueue.Opts{Queue: "b"})
	waitFor(t, 5*time.Second, "queue b's job", func() bool { return ran.Load() == 1 })
	time.Sleep(300 * time.Millisecond) // six poll intervals: a is still left alone
	if got := ran.Load(); got != 1 {
		t.Fatalf("%d jobs ran with queue a paused", got)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE queue = 'a' AND state = 'ready'`); n != 1 {
		t.Fatalf("queue a: %d ready", n)
	}
	if err := e.ops.Queues().Resume(t.Context(), e.pool, "a"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "queue a's job after resume", func() bool { return ran.Load() == 2 })
	// The worker is registered, serving both queues.
	s, err := e.ops.Status(t.Context(), e.pool, admin.Thresholds{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Workers) != 1 || s.Workers[0].ID != w.ID() || !s.Workers[0].Live || s.Workers[0].Slots != w.slots() || w.slots() == 0 {
		t.Errorf("workers: %+v, want this one, live, with its %d slots", s.Workers, w.slots())
	}
	if err := w.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_workers`); n != 0 {
		t.Errorf("%d worker rows after Stop", n)
	}
}

func TestOnClaimSeesEveryClaimedJob(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	defer e.logJobsOnFailure()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error { return nil }, handlers.KindOpts{})
	var claimed, calls atomic.Int64
	e.worker(reg, Config{OnClaim: func(took time.Duration, jobs int) {
		if took <= 0 {
			t.Errorf("claim took %v", took)
		}
		calls.Add(1)
		claimed.Add(int64(jobs))
	}})
	var last int64
	for i := range 50 {
		last = e.enqueue(testArgs{N: i}, enqueue.Opts{})
	}
	e.waitWhere(last, "done", 10*time.Second)
	waitFor(t, 10*time.Second, "OnClaim to count all 50 jobs", func() bool { return claimed.Load() == 50 })
	if calls.Load() < 1 {
		t.Fatal("OnClaim never called")
	}
}

// The status collector exports the outbox relay's backlog: pending events,
// the relay's lag, dead events and blocked keys, and live relays.
func TestStatusCollectorExportsRelayBacklog(t *testing.T) {
	t.Parallel()
	e := setup(t, 4)
	events, err := outbox.New(outbox.Config{Schema: e.schema})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", "order-1", "order-1"} {
		if _, err := events.Publish(t.Context(), e.pool, outbox.Message{Topic: "orders", Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	e.exec(`UPDATE {{schema}}.docket_events SET created_at = now() - interval '90 seconds' WHERE key IS NULL`)
	c := admin.NewStatusCollector(e.pool, e.ops, admin.Thresholds{})
	want := `
# HELP docket_event_keys_blocked Event keys held back by a dead event.
# TYPE docket_event_keys_blocked gauge
docket_event_keys_blocked 0
# HELP docket_events_dead Outbox events the broker refused for good, waiting for replay or purge.
# TYPE docket_events_dead gauge
docket_events_dead 0
# HELP docket_events_pending Outbox events committed and not yet acknowledged by the broker (dead letters excluded).
# TYPE docket_events_pending gauge
docket_events_pending 3
# HELP docket_relays_live Outbox relays holding a live lease.
# TYPE docket_relays_live gauge
docket_relays_live 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"docket_events_pending", "docket_events_dead", "docket_event_keys_blocked", "docket_relays_live"); err != nil {
		t.Error(err)
	}
	// The lag is the age of the oldest pending event: about 90s.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	lag := -1.0
	for _, mf := range mfs {
		if mf.GetName() == "docket_events_lag_seconds" {
			lag = mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	if lag < 89 || lag > 150 {
		t.Errorf("docket_events_lag_seconds = %v, want about 90", lag)
	}
}
