package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"time"
)

// Result is one measurement. It marshals to a flat JSON object that holds
// the fields of its scenario only (see the docs of each field), always with
// "scenario", "history" and "notify" first.
type Result struct {
	// Scenario is the scenario measured: insert, drain, sustained, idle,
	// workflows, serial, handlers, limit, heldxmin or flowcontrol.
	Scenario string
	// History reports whether finished jobs were kept in history (JSON
	// "history": "on" or "off").
	History bool
	// Notify reports whether LISTEN/NOTIFY was on (false with PollOnly).
	Notify bool
	// Jobs is how many jobs were measured: inserted (insert), completed
	// (drain, workflows: the steps), committed by the producers
	// (sustained, idle).
	Jobs int
	// Workflows is how many chains of three steps ran (workflows).
	Workflows int
	// Keys is how many serial keys the jobs were spread over (serial).
	Keys int
	// PlainPerSec is the rate of as many no-op jobs as steps (workflows),
	// or as many jobs without serial keys (serial), drained by the same
	// worker configuration in the same run (the JSON adds
	// fraction_of_plain, JobsPerSec / PlainPerSec).
	PlainPerSec float64
	// Batch is the jobs per transaction (insert).
	Batch int
	// Inserters is the connections inserting batches at once (insert).
	Inserters int
	// Processes is the number of worker processes (drain).
	Processes int
	// Workers is the worker's concurrency (drain, sustained, idle).
	Workers int
	// Producers is the number of producer goroutines (sustained).
	Producers int
	// ProducerTx reports whether each enqueue was an explicit transaction
	// (sustained, idle, heldxmin; JSON "producer_tx").
	ProducerTx bool
	// Seconds is the wall time of the timed part (insert, drain).
	Seconds float64
	// JobsPerSec is Jobs / Seconds (insert, drain).
	JobsPerSec float64
	// Rate is the target enqueue rate in jobs/s (sustained).
	Rate int
	// AchievedRate is the committed jobs per second over the duration
	// (sustained).
	AchievedRate float64
	// Latency is the commit-to-handler-start latency (sustained, idle), or
	// the hand-off from the end of one job's handler to the start of the
	// next of its serial key (serial).
	Latency Latency
	// Phase is the heldxmin window's phase: baseline, held or recovery.
	Phase string
	// ElapsedSeconds is the time since the heldxmin run started, at the
	// window's end.
	ElapsedSeconds float64
	// InsertPerSec and WorkedPerSec are the jobs committed and the jobs
	// whose handler started per second in the window (heldxmin).
	InsertPerSec, WorkedPerSec float64
	// Backlog is the jobs committed but not yet started at the window's
	// end (heldxmin).
	Backlog int64
	// ClaimMean and ClaimP99 are the mean and 99th percentile of the
	// worker's claim round trips in the window (heldxmin).
	ClaimMean, ClaimP99 time.Duration
	// DeadTuples is n_dead_tup of docket_jobs at the window's end, from
	// pg_stat_user_tables (heldxmin).
	DeadTuples int64
	// HandlerMin and HandlerMax bound the handlers' sleep; Bound is the
	// slots divided by the mean handler time, in jobs/s (handlers; the
	// JSON adds fraction_of_bound, JobsPerSec / Bound). HandlerMin alone is
	// every handler's sleep (serial).
	HandlerMin, HandlerMax time.Duration
	// HandlerMean is the mean time the handlers took, measured around
	// their sleeps: the mean of the handlers scenario's bound, and of the
	// flowcontrol scenario's limited handlers when they sleep.
	HandlerMean time.Duration
	Bound       float64
	// LimitPerSec is what PostgreSQL itself did in the same run: the
	// SQL-only drain (drain) or one bare COPY of the same rows (insert);
	// the JSON adds fraction_of_limit, JobsPerSec / LimitPerSec. DrainLimit
	// and InsertLimit are both limits (limit).
	LimitPerSec             float64
	DrainLimit, InsertLimit float64
	// BatchedLimitPerSec is the bare COPY in transactions of Batch rows,
	// the insert scenario's shape (insert, with fraction_of_batched_limit
	// in the JSON; limit).
	BatchedLimitPerSec float64
	// CPU is the CPU time the timed part cost per 1,000 jobs, of the bench
	// process (and its worker processes) and of the PostgreSQL server.
	CPU cpuUse
	// LimitCPU is the same for the SQL-only drain, the mean of its two
	// runs (drain; JSON limit_bench_cpu_s_per_1k and
	// limit_pg_cpu_s_per_1k).
	LimitCPU cpuUse
	// Limit is the flowcontrol variant: none, idle, concurrency or rate
	// (see LimitNone and the others).
	Limit string
	// LimitedJobs is how many of Jobs were of the limited kind, spread
	// over Tenants tenants (flowcontrol).
	LimitedJobs, Tenants int
	// LimitRunning, LimitRate and LimitBurst are the limit's per-tenant
	// MaxRunning, its rate in jobs/s and its burst, 0 when it has none
	// (flowcontrol; heldxmin with HeldLimitedRate: the rate).
	LimitRunning, LimitRate, LimitBurst int
	// LimitedSeconds is the time from the worker's start to the last
	// limited job's start (flowcontrol). With a rate, the JSON adds
	// fraction_of_allowed: LimitedJobs over what the limit allows in that
	// time, LimitBurst + LimitRate × LimitedSeconds.
	LimitedSeconds float64
	// OrdinaryPerSec and LimitedPerSec are each kind's jobs over the time
	// from the worker's start to the last of them starting (flowcontrol). In
	// heldxmin with HeldLimitedRate, LimitedInsertPerSec and LimitedPerSec
	// are the limited jobs committed and started per second in the window
	// (the JSON adds limited_fraction_of_rate).
	OrdinaryPerSec, LimitedPerSec, LimitedInsertPerSec float64
	// OrdinaryClaims and LimitedClaims describe the worker's claim
	// statements of each kind (flowcontrol; heldxmin with
	// HeldLimitedRate, per window).
	OrdinaryClaims, LimitedClaims ClaimSummary
	// Pickup summarises, for flowcontrol's rate variant, how long limited
	// jobs started after their token was due, in the steady state (see
	// rateLimitedPickup); the JSON names them pickup_p50_ms and so on.
	Pickup Latency
	// MaxRSSMiB is the process's peak resident set size during the drain
	// in MiB, from VmHWM in /proc/self/status (drain; omitted when the
	// platform does not report it).
	MaxRSSMiB float64
	// Databases is how many databases multidb drained at once; OnePerSec
	// is its rate with one database in the same run (0 when 1 was not
	// among the counts).
	Databases int
	OnePerSec float64
}

// Latency summarises a set of latencies. Its zero value is the summary of
// no samples.
type Latency struct {
	// P50, P95 and P99 are percentiles by the nearest-rank method (see
	// [Percentile]): each is one of the samples.
	P50, P95, P99 time.Duration
	// Max is the largest sample.
	Max time.Duration
}

// MarshalJSON writes the fields that belong to r.Scenario, in a fixed
// order, with durations in milliseconds (rounded to microseconds) and rates
// rounded to one decimal.
func (r Result) MarshalJSON() ([]byte, error) {
	history := "on"
	if !r.History {
		history = "off"
	}
	f := []field{{"scenario", r.Scenario}, {"history", history}, {"notify", r.Notify}}
	switch r.Scenario {
	case ScenarioInsert:
		f = append(f, field{"jobs", r.Jobs}, field{"batch", r.Batch}, field{"inserters", r.Inserters},
			field{"seconds", round(r.Seconds, 3)}, field{"jobs_per_sec", round(r.JobsPerSec, 1)},
			field{"limit_per_sec", round(r.LimitPerSec, 1)}, field{"fraction_of_limit", fraction(r.JobsPerSec, r.LimitPerSec)},
			field{"batched_limit_per_sec", round(r.BatchedLimitPerSec, 1)},
			field{"fraction_of_batched_limit", fraction(r.JobsPerSec, r.BatchedLimitPerSec)})
	case ScenarioDrain:
		f = append(f, field{"jobs", r.Jobs}, field{"workers", r.Workers}, field{"processes", r.Processes},
			field{"seconds", round(r.Seconds, 3)}, field{"jobs_per_sec", round(r.JobsPerSec, 1)},
			field{"limit_per_sec", round(r.LimitPerSec, 1)}, field{"fraction_of_limit", fraction(r.JobsPerSec, r.LimitPerSec)})
		if r.MaxRSSMiB > 0 {
			f = append(f, field{"max_rss_mib", round(r.MaxRSSMiB, 1)})
		}
		f = append(f, field{"limit_bench_cpu_s_per_1k", round(r.LimitCPU.bench, 4)})
		if r.LimitCPU.pgKnown {
			f = append(f, field{"limit_pg_cpu_s_per_1k", round(r.LimitCPU.pg, 4)})
		}
	case ScenarioWorkflows:
		f = append(f, field{"workflows", r.Workflows}, field{"steps", r.Jobs}, field{"workers", r.Workers},
			field{"seconds", round(r.Seconds, 3)}, field{"steps_per_sec", round(r.JobsPerSec, 1)},
			field{"plain_jobs_per_sec", round(r.PlainPerSec, 1)}, field{"fraction_of_plain", fraction(r.JobsPerSec, r.PlainPerSec)})
	case ScenarioSerial:
		f = append(f, field{"jobs", r.Jobs}, field{"keys", r.Keys}, field{"workers", r.Workers},
			field{"handler_ms", ms(r.HandlerMin)}, field{"seconds", round(r.Seconds, 3)},
			field{"jobs_per_sec", round(r.JobsPerSec, 1)},
			field{"handoff_p50_ms", ms(r.Latency.P50)}, field{"handoff_p95_ms", ms(r.Latency.P95)},
			field{"handoff_p99_ms", ms(r.Latency.P99)}, field{"handoff_max_ms", ms(r.Latency.Max)},
			field{"plain_jobs_per_sec", round(r.PlainPerSec, 1)}, field{"fraction_of_plain", fraction(r.JobsPerSec, r.PlainPerSec)})
	case ScenarioMultiDB:
		f = append(f, field{"databases", r.Databases}, field{"jobs", r.Jobs}, field{"workers_per_database", r.Workers},
			field{"handler_ms", ms(r.HandlerMin)}, field{"seconds", round(r.Seconds, 3)},
			field{"jobs_per_sec", round(r.JobsPerSec, 1)}, field{"per_database_jobs_per_sec", round(r.JobsPerSec/float64(max(r.Databases, 1)), 1)},
			field{"one_database_jobs_per_sec", round(r.OnePerSec, 1)}, field{"speedup_over_one", fraction(r.JobsPerSec, r.OnePerSec)})
	case ScenarioHandlers:
		f = append(f, field{"jobs", r.Jobs}, field{"workers", r.Workers},
			field{"handler_min_ms", ms(r.HandlerMin)}, field{"handler_max_ms", ms(r.HandlerMax)},
			field{"handler_mean_ms", ms(r.HandlerMean)},
			field{"seconds", round(r.Seconds, 3)}, field{"jobs_per_sec", round(r.JobsPerSec, 1)},
			field{"bound_jobs_per_sec", round(r.Bound, 1)}, field{"fraction_of_bound", fraction(r.JobsPerSec, r.Bound)})
	case ScenarioSustained:
		f = append(f, field{"rate", r.Rate}, field{"achieved_rate", round(r.AchievedRate, 1)},
			field{"jobs", r.Jobs}, field{"producers", r.Producers}, field{"producer_tx", r.ProducerTx},
			field{"workers", r.Workers})
		f = r.Latency.fields(f)
	case ScenarioIdle:
		f = append(f, field{"jobs", r.Jobs}, field{"workers", r.Workers}, field{"producer_tx", r.ProducerTx})
		f = r.Latency.fields(f)
	case ScenarioLimit:
		f = append(f, field{"jobs", r.Jobs}, field{"batch", r.Batch}, field{"drain_limit_per_sec", round(r.DrainLimit, 1)},
			field{"insert_limit_per_sec", round(r.InsertLimit, 1)}, field{"batched_insert_limit_per_sec", round(r.BatchedLimitPerSec, 1)})
	case ScenarioHeldXmin:
		f = append(f, field{"phase", r.Phase}, field{"elapsed_s", round(r.ElapsedSeconds, 1)},
			field{"rate", r.Rate}, field{"producer_tx", r.ProducerTx}, field{"insert_per_s", round(r.InsertPerSec, 1)},
			field{"worked_per_s", round(r.WorkedPerSec, 1)}, field{"backlog", r.Backlog},
			field{"p50_ms", ms(r.Latency.P50)}, field{"p99_ms", ms(r.Latency.P99)}, field{"max_ms", ms(r.Latency.Max)},
			field{"claim_mean_ms", ms(r.ClaimMean)}, field{"claim_p99_ms", ms(r.ClaimP99)},
			field{"n_dead_tup", r.DeadTuples})
		if r.LimitRate > 0 {
			f = append(f, field{"limit_rate", r.LimitRate}, field{"limited_insert_per_s", round(r.LimitedInsertPerSec, 1)},
				field{"limited_worked_per_s", round(r.LimitedPerSec, 1)},
				field{"limited_fraction_of_rate", fraction(r.LimitedPerSec, float64(r.LimitRate))})
			f = r.OrdinaryClaims.fields(f, "ordinary")
			f = r.LimitedClaims.fields(f, "limited")
		}
	case ScenarioFlowControl:
		f = append(f, field{"limit", r.Limit}, field{"jobs", r.Jobs}, field{"limited_jobs", r.LimitedJobs},
			field{"tenants", r.Tenants}, field{"workers", r.Workers},
			field{"limit_max_running", r.LimitRunning}, field{"limit_rate", r.LimitRate}, field{"limit_burst", r.LimitBurst},
			field{"seconds", round(r.Seconds, 3)}, field{"jobs_per_sec", round(r.JobsPerSec, 1)},
			field{"ordinary_per_sec", round(r.OrdinaryPerSec, 1)}, field{"limited_seconds", round(r.LimitedSeconds, 3)},
			field{"limited_per_sec", round(r.LimitedPerSec, 1)})
		if r.LimitRate > 0 && r.LimitedJobs > 0 {
			f = append(f, field{"fraction_of_allowed", fraction(float64(r.LimitedJobs),
				float64(r.LimitBurst)+float64(r.LimitRate)*r.LimitedSeconds)})
		}
		if r.HandlerMax > 0 {
			f = append(f, field{"limited_handler_min_ms", ms(r.HandlerMin)}, field{"limited_handler_max_ms", ms(r.HandlerMax)},
				field{"limited_handler_mean_ms", ms(r.HandlerMean)})
		}
		if r.Bound > 0 {
			f = append(f, field{"bound_jobs_per_sec", round(r.Bound, 1)}, field{"fraction_of_bound", fraction(r.LimitedPerSec, r.Bound)})
		}
		if r.Pickup.Max > 0 {
			f = append(f, field{"pickup_p50_ms", ms(r.Pickup.P50)}, field{"pickup_p95_ms", ms(r.Pickup.P95)},
				field{"pickup_p99_ms", ms(r.Pickup.P99)}, field{"pickup_max_ms", ms(r.Pickup.Max)})
		}
		f = r.OrdinaryClaims.fields(f, "ordinary")
		f = r.LimitedClaims.fields(f, "limited")
	}
	if r.Scenario != ScenarioLimit && r.Scenario != ScenarioHeldXmin {
		f = r.CPU.fields(f)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range f {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv.key)
		v, err := json.Marshal(kv.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

type field struct {
	key   string
	value any
}

func (l Latency) fields(f []field) []field {
	return append(f, field{"p50_ms", ms(l.P50)}, field{"p95_ms", ms(l.P95)},
		field{"p99_ms", ms(l.P99)}, field{"max_ms", ms(l.Max)})
}

// fields adds the CPU figures; the server's only when its processes were
// seen.
func (c cpuUse) fields(f []field) []field {
	f = append(f, field{"bench_cpu_s_per_1k", round(c.bench, 4)})
	if c.pgKnown {
		f = append(f, field{"pg_cpu_s_per_1k", round(c.pg, 4)})
	}
	return f
}

// fraction is part / whole to three decimals, 0 without a whole.
func fraction(part, whole float64) float64 {
	if whole == 0 {
		return 0
	}
	return round(part/whole, 3)
}

func ms(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 3) }

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
