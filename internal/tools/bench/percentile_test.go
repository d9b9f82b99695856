package bench

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	t.Parallel()
	hundred := make([]time.Duration, 100) // 1ms..100ms
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	cases := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one sample p0", []time.Duration{7}, 0, 7},
		{"one sample p50", []time.Duration{7}, 50, 7},
		{"one sample p100", []time.Duration{7}, 100, 7},
		{"two samples p50 is the lower", []time.Duration{1, 2}, 50, 1},
		{"two samples p51 is the upper", []time.Duration{1, 2}, 51, 2},
		{"p0 is the minimum", hundred, 0, 1 * time.Millisecond},
		{"p50 of 100", hundred, 50, 50 * time.Millisecond},
		{"p95 of 100", hundred, 95, 95 * time.Millisecond},
		{"p99 of 100", hundred, 99, 99 * time.Millisecond},
		{"p99.5 rounds up", hundred, 99.5, 100 * time.Millisecond},
		{"p100 is the maximum", hundred, 100, 100 * time.Millisecond},
		{"below 0 is clamped", hundred, -3, 1 * time.Millisecond},
		{"above 100 is clamped", hundred, 250, 100 * time.Millisecond},
		{"p99 of 10 is the maximum", hundred[:10], 99, 10 * time.Millisecond},
		{"p90 of 10", hundred[:10], 90, 9 * time.Millisecond},
	}
	for _, c := range cases {
		if got := Percentile(c.sorted, c.p); got != c.want {
			t.Errorf("%s: Percentile(p=%v) = %v, want %v", c.name, c.p, got, c.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	if got := Summarize(nil); got != (Latency{}) {
		t.Errorf("Summarize(nil) = %+v, want zero", got)
	}
	samples := make([]time.Duration, 1000)
	for i := range samples {
		samples[i] = time.Duration(i+1) * time.Microsecond
	}
	rand.Shuffle(len(samples), func(i, j int) { samples[i], samples[j] = samples[j], samples[i] })
	got := Summarize(samples)
	want := Latency{P50: 500 * time.Microsecond, P95: 950 * time.Microsecond, P99: 990 * time.Microsecond, Max: 1000 * time.Microsecond}
	if got != want {
		t.Errorf("Summarize = %+v, want %+v", got, want)
	}
	if !(got.P50 <= got.P95 && got.P95 <= got.P99 && got.P99 <= got.Max) {
		t.Errorf("percentiles out of order: %+v", got)
	}
}

func TestResultJSON(t *testing.T) {
	t.Parallel()
	cases := []struct {
		r    Result
		want string
	}{
		{Result{Scenario: ScenarioInsert, History: true, Notify: true, Jobs: 10, Batch: 5, Inserters: 1, Seconds: 0.0004, JobsPerSec: 25000.04,
			LimitPerSec: 50000, BatchedLimitPerSec: 30000,
			CPU: cpuUse{bench: 0.01234, pg: 0.02, pgKnown: true}},
			`{"scenario":"insert","history":"on","notify":true,"jobs":10,"batch":5,"inserters":1,"seconds":0,"jobs_per_sec":25000,"limit_per_sec":50000,"fraction_of_limit":0.5,"batched_limit_per_sec":30000,"fraction_of_batched_limit":0.833,"bench_cpu_s_per_1k":0.0123,"pg_cpu_s_per_1k":0.02}`},
		{Result{Scenario: ScenarioDrain, Jobs: 10, Workers: 100, Processes: 2, Seconds: 1.5, JobsPerSec: 6.67, MaxRSSMiB: 31.25,
			LimitPerSec: 10, CPU: cpuUse{bench: 0.5}, LimitCPU: cpuUse{bench: 0.1, pg: 0.30004, pgKnown: true}},
			`{"scenario":"drain","history":"off","notify":false,"jobs":10,"workers":100,"processes":2,"seconds":1.5,"jobs_per_sec":6.7,"limit_per_sec":10,"fraction_of_limit":0.667,"max_rss_mib":31.3,"limit_bench_cpu_s_per_1k":0.1,"limit_pg_cpu_s_per_1k":0.3,"bench_cpu_s_per_1k":0.5}`},
		{Result{Scenario: ScenarioLimit, Jobs: 10, Batch: 5, DrainLimit: 80000.04, InsertLimit: 200000, BatchedLimitPerSec: 90000},
			`{"scenario":"limit","history":"off","notify":false,"jobs":10,"batch":5,"drain_limit_per_sec":80000,"insert_limit_per_sec":200000,"batched_insert_limit_per_sec":90000}`},
		{Result{Scenario: ScenarioHandlers, Jobs: 10, Workers: 32, HandlerMin: 2 * time.Millisecond, HandlerMax: 5 * time.Millisecond,
			HandlerMean: 3500 * time.Microsecond, Seconds: 2, JobsPerSec: 8502.857, Bound: 9142.857, CPU: cpuUse{bench: 0.1, pg: 0.2, pgKnown: true}},
			`{"scenario":"handlers","history":"off","notify":false,"jobs":10,"workers":32,"handler_min_ms":2,"handler_max_ms":5,"handler_mean_ms":3.5,"seconds":2,"jobs_per_sec":8502.9,"bound_jobs_per_sec":9142.9,"fraction_of_bound":0.93,"bench_cpu_s_per_1k":0.1,"pg_cpu_s_per_1k":0.2}`},
		{Result{Scenario: ScenarioSustained, History: true, Notify: true, Rate: 100, AchievedRate: 99.96, Jobs: 200, Producers: 4, Workers: 100,
			Latency: Latency{P50: 1500 * time.Microsecond, P95: 2 * time.Millisecond, P99: 3 * time.Millisecond, Max: 1234567 * time.Nanosecond}},
			`{"scenario":"sustained","history":"on","notify":true,"rate":100,"achieved_rate":100,"jobs":200,"producers":4,"producer_tx":false,"workers":100,"p50_ms":1.5,"p95_ms":2,"p99_ms":3,"max_ms":1.235,"bench_cpu_s_per_1k":0}`},
		{Result{Scenario: ScenarioIdle, History: true, Jobs: 50, Workers: 100, ProducerTx: true},
			`{"scenario":"idle","history":"on","notify":false,"jobs":50,"workers":100,"producer_tx":true,"p50_ms":0,"p95_ms":0,"p99_ms":0,"max_ms":0,"bench_cpu_s_per_1k":0}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.r)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(b); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.r.Scenario, got, c.want)
		}
		if strings.Contains(string(b), "\n") {
			t.Errorf("%s: JSON spans lines", c.r.Scenario)
		}
	}
}
