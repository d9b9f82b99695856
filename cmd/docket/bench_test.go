package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/internal/testkit/brokers/natssrv"
	"github.com/docketq/docket/internal/testkit/pgtest"
)

// TestBenchAll runs every scenario with small counts and checks the shape
// of the JSON lines, not the speed.
func TestBenchAll(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	nats, err := natssrv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer nats.Stop()
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"bench", "--scenario", "all", "--jobs", "2000", "--duration", "2s",
		"--rate", "200", "--producers", "8", "--relays", "1", "--idle-jobs", "20", "--database-url", url, "--nats-url", nats.URL}, &out, &errOut)
	if code != 0 {
		t.Fatalf("bench exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}

	want := map[string][]string{
		"insert": {"jobs", "batch", "inserters", "seconds", "jobs_per_sec", "limit_per_sec", "fraction_of_limit",
			"batched_limit_per_sec", "fraction_of_batched_limit", "bench_cpu_s_per_1k", "pg_cpu_s_per_1k"},
		"drain": {"jobs", "workers", "processes", "seconds", "jobs_per_sec", "max_rss_mib", "limit_per_sec",
			"fraction_of_limit", "limit_bench_cpu_s_per_1k", "limit_pg_cpu_s_per_1k", "bench_cpu_s_per_1k", "pg_cpu_s_per_1k"},
		"sustained": {"rate", "achieved_rate", "jobs", "producer_tx", "p50_ms", "p95_ms", "p99_ms", "max_ms",
			"bench_cpu_s_per_1k", "pg_cpu_s_per_1k"},
		"idle": {"jobs", "producer_tx", "p50_ms", "p95_ms", "p99_ms", "max_ms", "notify", "bench_cpu_s_per_1k", "pg_cpu_s_per_1k"},
		"workflows": {"workflows", "steps", "workers", "seconds", "steps_per_sec", "plain_jobs_per_sec", "fraction_of_plain",
			"bench_cpu_s_per_1k", "pg_cpu_s_per_1k"},
		"serial": {"jobs", "keys", "workers", "handler_ms", "seconds", "jobs_per_sec", "handoff_p50_ms", "handoff_p99_ms",
			"plain_jobs_per_sec", "fraction_of_plain", "bench_cpu_s_per_1k"},
		"handlers": {"jobs", "workers", "handler_min_ms", "handler_max_ms", "handler_mean_ms", "seconds", "jobs_per_sec",
			"bound_jobs_per_sec", "fraction_of_bound", "bench_cpu_s_per_1k", "pg_cpu_s_per_1k"},
		"relay": {"events", "keys", "relays", "relay_msgs_per_sec", "baseline_msgs_per_sec", "fraction_of_baseline",
			"commit_to_delivered_p50_ms", "commit_to_delivered_p99_ms"},
	}
	// flowcontrol reports one line per variant, each named by its limit.
	flowVariants := []string{"none", "idle", "concurrency", "rate"}
	for _, v := range flowVariants {
		want["flowcontrol/"+v] = []string{"limit", "jobs", "limited_jobs", "seconds", "jobs_per_sec", "ordinary_per_sec",
			"limited_per_sec", "bench_cpu_s_per_1k"}
	}
	seen := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("stdout line is not one JSON object: %q: %v", line, err)
		}
		s, _ := obj["scenario"].(string)
		if limit, ok := obj["limit"].(string); ok && s == "flowcontrol" {
			s += "/" + limit
		}
		if _, ok := want[s]; !ok {
			t.Fatalf("unexpected scenario in %s", line)
		}
		if seen[s] != nil {
			t.Errorf("scenario %s reported twice", s)
		}
		seen[s] = obj
		// The relay keeps no jobs: its line has no history setting.
		if s != "relay" && obj["history"] != "on" {
			t.Errorf("%s: history = %v, want \"on\"", s, obj["history"])
		}
		for _, f := range want[s] {
			if _, ok := obj[f]; !ok {
				t.Errorf("%s lacks field %q: %s", s, f, line)
			}
		}
	}
	for s := range want {
		if seen[s] == nil {
			t.Errorf("scenario %s missing from stdout:\n%s", s, out.String())
		}
	}
	num := func(s, f string) float64 {
		v, _ := seen[s][f].(float64)
		return v
	}
	// Under all, the workflows scenario runs at most 2,000 chains of 3.
	if w := seen["workflows"]; w != nil && (num("workflows", "workflows") != 2000 || num("workflows", "steps") != 6000 ||
		num("workflows", "steps_per_sec") <= 0 || num("workflows", "plain_jobs_per_sec") <= 0) {
		t.Errorf("workflows: %v", w)
	}
	// The serial scenario ran every job, over its 20 default keys, and
	// measured their hand-offs.
	if sr := seen["serial"]; sr != nil && (num("serial", "jobs") != 2000 || num("serial", "keys") != 20 ||
		num("serial", "jobs_per_sec") <= 0 || num("serial", "handoff_p50_ms") <= 0 ||
		num("serial", "handoff_p99_ms") < num("serial", "handoff_p50_ms") || num("serial", "plain_jobs_per_sec") <= 0) {
		t.Errorf("serial: %v", sr)
	}
	for _, s := range []string{"insert", "drain"} {
		if seen[s] == nil {
			continue
		}
		if num(s, "jobs") != 2000 {
			t.Errorf("%s: jobs = %v, want 2000", s, num(s, "jobs"))
		}
		if num(s, "seconds") <= 0 || num(s, "jobs_per_sec") <= 0 {
			t.Errorf("%s: seconds %v, jobs_per_sec %v: want both positive", s, num(s, "seconds"), num(s, "jobs_per_sec"))
		}
		// The fraction is the rate over the limit measured in the same
		// run; the CPU figures are of the timed part.
		if l, f := num(s, "limit_per_sec"), num(s, "fraction_of_limit"); l <= 0 || f <= 0 ||
			math.Abs(f-num(s, "jobs_per_sec")/l) > 0.002 {
			t.Errorf("%s: limit_per_sec %v, fraction_of_limit %v for %v jobs/s", s, l, f, num(s, "jobs_per_sec"))
		}
		if num(s, "bench_cpu_s_per_1k") <= 0 || num(s, "pg_cpu_s_per_1k") <= 0 {
			t.Errorf("%s: bench_cpu_s_per_1k %v, pg_cpu_s_per_1k %v: want both positive", s,
				num(s, "bench_cpu_s_per_1k"), num(s, "pg_cpu_s_per_1k"))
		}
	}
	// Under all the handlers scenario keeps its own default of 32 slots,
	// and its bound is the slots over the handlers' measured mean time,
	// which is at least the shortest sleep.
	if seen["handlers"] != nil {
		mean := num("handlers", "handler_mean_ms")
		if num("handlers", "workers") != 32 || num("handlers", "jobs") != 2000 || mean < 2 {
			t.Errorf("handlers: workers %v, jobs %v, handler_mean_ms %v: want 32, 2000 and at least 2",
				num("handlers", "workers"), num("handlers", "jobs"), mean)
		}
		if b := num("handlers", "bound_jobs_per_sec"); math.Abs(b-32/(mean/1000)) > 0.01*b {
			t.Errorf("handlers: bound %v jobs/s, want 32 slots / %v ms", b, mean)
		}
	}
	if seen["drain"] != nil && num("drain", "workers") != 100 {
		t.Errorf("drain: workers = %v, want the worker default 100", num("drain", "workers"))
	}
	for _, s := range []string{"sustained", "idle"} {
		if seen[s] == nil {
			continue
		}
		if num(s, "jobs") < 1 {
			t.Errorf("%s: no jobs measured", s)
		}
		p50, p95, p99, mx := num(s, "p50_ms"), num(s, "p95_ms"), num(s, "p99_ms"), num(s, "max_ms")
		if !(0 <= p50 && p50 <= p95 && p95 <= p99 && p99 <= mx && mx > 0) {
			t.Errorf("%s: want 0 <= p50 <= p95 <= p99 <= max, max > 0; got %v %v %v %v", s, p50, p95, p99, mx)
		}
	}
	if seen["sustained"] != nil {
		if num("sustained", "rate") != 200 || num("sustained", "achieved_rate") <= 0 {
			t.Errorf("sustained: rate %v achieved %v", num("sustained", "rate"), num("sustained", "achieved_rate"))
		}
	}
	if seen["idle"] != nil {
		if num("idle", "jobs") != 20 || seen["idle"]["notify"] != true {
			t.Errorf("idle: jobs %v notify %v, want 20 (--idle-jobs) and true", num("idle", "jobs"), seen["idle"]["notify"])
		}
	}

	// Every scenario named its schema on stderr, and none is left.
	named := regexp.MustCompile(`schema (docket_bench_[0-9a-f]+)`).FindAllStringSubmatch(errOut.String(), -1)
	if len(named) != 18 {
		t.Errorf("stderr names %d bench schemas, want 18 (insert measures three limits and drain two, workflows and serial their plain jobs, flowcontrol four variants, in schemas of their own):\n%s", len(named), errOut.String())
	}
	// Only this run's schemas: TestBenchHeldXmin may hold one of its own
	// at this moment.
	var schemas []string
	for _, m := range named {
		schemas = append(schemas, m[1])
	}
	var left int
	if err := pgtest.Pool(t).QueryRow(t.Context(),
		`SELECT count(*) FROM pg_namespace WHERE nspname = ANY($1)`, schemas).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d bench schemas were left behind", left)
	}
}

// TestBenchProcessesAndInserters drains with three worker processes (this
// test binary run as the CLI) after a fill on two connections, and checks
// every job was done.
func TestBenchProcessesAndInserters(t *testing.T) {
	url := pgtest.URL(t)
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"bench", "--scenario", "drain", "--jobs", "3000", "--batch", "100",
		"--inserters", "2", "--processes", "3", "--workers", "20", "--database-url", url}, &out, &errOut)
	if code != 0 {
		t.Fatalf("bench exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	var res map[string]any
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("stdout is not one JSON object: %q: %v", out.String(), err)
	}
	if res["jobs"] != 3000.0 || res["processes"] != 3.0 || res["workers"] != 20.0 {
		t.Errorf("drain result %v: want 3000 jobs, 3 processes of 20 workers", res)
	}
	if _, ok := res["max_rss_mib"]; ok {
		t.Errorf("drain over processes reports this process's RSS: %v", res)
	}

	out.Reset()
	code = run(t.Context(), []string{"bench", "--scenario", "insert", "--jobs", "3000", "--batch", "100",
		"--inserters", "3", "--database-url", url}, &out, &errOut)
	if code != 0 {
		t.Fatalf("insert exit %d\nstderr:\n%s", code, errOut.String())
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res["jobs"] != 3000.0 || res["inserters"] != 3.0 {
		t.Errorf("insert result %v: want 3000 jobs on 3 inserters", res)
	}
}

func TestBenchErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"bench"}, 2, "no scenario"},
		{[]string{"bench", "--scenario", "sideways"}, 2, `unknown scenario "sideways"`},
		{[]string{"bench", "--scenario", "insert", "--jobs", "-5"}, 2, "--jobs must be at least 1"},
		{[]string{"bench", "--scenario", "drain", "--workers", "-1"}, 2, "--workers must be 0"},
		{[]string{"bench", "--scenario", "sustained", "--rate", "-1"}, 2, "--rate must be positive"},
		{[]string{"bench", "--scenario", "heldxmin", "--held", "0s"}, 2, "--held must be positive"},
		{[]string{"bench", "--scenario", "sustained", "--duration", "soon"}, 2, "invalid value"},
		{[]string{"bench", "--scenario", "sustained", "--duration", "-1s"}, 2, "--duration must be positive"},
		{[]string{"bench", "--scenario", "insert", "--history", "maybe"}, 2, "--history must be on or off"},
		{[]string{"bench", "--scenario", "insert", "extra"}, 2, "unexpected argument"},
		{[]string{"bench", "--scenario", "drain", "--processes", "0"}, 2, "--processes must be at least 1"},
		{[]string{"bench", "--scenario", "insert", "--inserters", "0"}, 2, "--inserters must be at least 1"},
		{[]string{"bench", "--scenario", "flowcontrol", "--limited-share", "0"}, 2, "--limited-share must be more than 0"},
		{[]string{"bench", "--scenario", "flowcontrol", "--limit-rate", "0"}, 2, "--limit-rate must be at least 1"},
		{[]string{"bench", "--scenario", "flowcontrol", "--limit-variants", "rate,fast"}, 2, `flowcontrol variant "fast" is none of none, idle, concurrency, rate`},
		{[]string{"bench", "--scenario", "heldxmin", "--held-limited-rate", "-1"}, 2, "--held-limited-rate must be 0"},
		{[]string{"bench", "--scenario", "serial", "--keys", "0"}, 2, "--keys must be at least 1"},
		{[]string{"bench", "--scenario", "idle", "--idle-jobs", "0"}, 2, "--idle-jobs must be at least 1"},
		{[]string{"bench", "--scenario", "serial", "--handler-time", "-1ms"}, 2, "--handler-time must be 0"},
		{[]string{"bench", "--scenario", "insert", "--database-url", "postgres://nobody:secret@127.0.0.1:1/x?connect_timeout=2"},
			1, "cannot connect to PostgreSQL at 127.0.0.1:1"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := run(context.Background(), c.args, &out, &errOut)
		if code != c.code || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("docket %v: exit %d, stderr %q; want exit %d and %q", c.args, code, errOut.String(), c.code, c.want)
		}
		if out.Len() != 0 {
			t.Errorf("docket %v: printed on stdout: %q", c.args, out.String())
		}
		if strings.Contains(errOut.String(), "secret") {
			t.Errorf("docket %v: stderr shows the password", c.args)
		}
	}
}

// TestBenchHeldXmin runs the held-xmin scenario with short phases and
// checks its JSON lines and that the held transaction was really held and
// is closed afterwards. It asserts no speed.
func TestBenchHeldXmin(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.Pool(t)
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), []string{"bench", "--scenario", "heldxmin", "--rate", "200", "--producers", "4",
			"--baseline", "2s", "--held", "3s", "--recovery", "2s", "--window", "1s", "--held-limited-rate", "50",
			"--database-url", url}, &out, &errOut)
	}()
	// While the run holds its transaction, some backend of this database
	// sits idle in a transaction that has a transaction id.
	sawHeld := false
	for deadline := time.Now().Add(6 * time.Second); time.Now().Before(deadline) && !sawHeld; time.Sleep(50 * time.Millisecond) {
		var n int
		if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND state = 'idle in transaction' AND backend_xid IS NOT NULL`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		sawHeld = n > 0
	}
	if code := <-done; code != 0 {
		t.Fatalf("bench exit %d\nstderr:\n%s", code, errOut.String())
	}
	if !sawHeld {
		t.Error("never saw the held transaction")
	}
	// The held transaction, had the run left it open, would be over 2 s
	// old by now (held 3 s, then 2 s of recovery); the package's other
	// tests, beside this one in the same database, sit idle in their own
	// transactions for moments between statements.
	var n int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND state = 'idle in transaction'
			AND xact_start < now() - interval '1 second'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d transactions left idle after the run (%v)", n, err)
	}
	var phases []string
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("stdout line is not one JSON object: %q: %v", line, err)
		}
		for _, f := range []string{"phase", "elapsed_s", "insert_per_s", "worked_per_s", "backlog", "p50_ms", "p99_ms", "max_ms", "claim_mean_ms", "claim_p99_ms", "n_dead_tup",
			"limit_rate", "limited_insert_per_s", "limited_worked_per_s", "limited_fraction_of_rate", "limited_claims", "limited_claim_p99_ms",
			"ordinary_claims", "ordinary_claim_p99_ms"} {
			if _, ok := obj[f]; !ok {
				t.Errorf("line lacks %q: %s", f, line)
			}
		}
		if obj["scenario"] != "heldxmin" {
			t.Errorf("scenario %v", obj["scenario"])
		}
		if p, _ := obj["phase"].(string); len(phases) == 0 || phases[len(phases)-1] != p {
			phases = append(phases, p)
		}
	}
	if strings.Join(phases, ",") != "baseline,held,recovery" {
		t.Errorf("phases %v, want baseline, held, recovery in order", phases)
	}
}

// The limit and handlers scenarios print one line each with their figures.
func TestBenchLimitAndHandlers(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	for _, c := range []struct {
		args   []string
		fields []string
	}{
		{[]string{"--scenario", "limit", "--jobs", "2000"}, []string{"drain_limit_per_sec", "insert_limit_per_sec", "batched_insert_limit_per_sec"}},
		{[]string{"--scenario", "handlers", "--jobs", "400", "--handler-min", "1ms", "--handler-max", "3ms"},
			[]string{"jobs_per_sec", "bound_jobs_per_sec", "fraction_of_bound", "bench_cpu_s_per_1k"}},
	} {
		var out, errOut bytes.Buffer
		code := run(t.Context(), append([]string{"bench", "--database-url", url}, c.args...), &out, &errOut)
		if code != 0 {
			t.Fatalf("bench %v: exit %d\n%s\n%s", c.args, code, out.String(), errOut.String())
		}
		var obj map[string]any
		if err := json.Unmarshal(out.Bytes(), &obj); err != nil {
			t.Fatalf("bench %v: %q is not one JSON object: %v", c.args, out.String(), err)
		}
		for _, f := range c.fields {
			if v, _ := obj[f].(float64); v <= 0 {
				t.Errorf("bench %v: %s = %v, want a positive number: %s", c.args, f, obj[f], out.String())
			}
		}
		if obj["scenario"] == "handlers" {
			// 32 slots over 1-3 ms handlers, as long as they measured
			// themselves: at most 16,000 jobs/s, less what the sleeps
			// overshot.
			mean, _ := obj["handler_mean_ms"].(float64)
			if b, _ := obj["bound_jobs_per_sec"].(float64); mean < 1 || b > 16000 || math.Abs(b-32/(mean/1000)) > 0.01*b {
				t.Errorf("handlers: bound %v for a mean handler time of %v ms, want 32 slots / that, at most 16000", b, mean)
			}
			if f, _ := obj["fraction_of_bound"].(float64); f > 1.05 {
				t.Errorf("handlers: fraction_of_bound %v above the bound", f)
			}
		}
	}
}

// TestBenchFlowControl runs the flowcontrol scenario small and checks its
// four lines: every job drained, the limited claims seen only where a limit
// is set, and a rate limit that granted no more than it allows. It asserts
// no speed.
func TestBenchFlowControl(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"bench", "--scenario", "flowcontrol", "--jobs", "2000", "--limited-share", "0.25",
		"--limit-rate", "200", "--limit-running", "2", "--limit-tenants", "3", "--database-url", url}, &out, &errOut)
	if code != 0 {
		t.Fatalf("bench exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	var limits []string
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("stdout line is not one JSON object: %q: %v", line, err)
		}
		num := func(f string) float64 {
			v, ok := obj[f].(float64)
			if !ok {
				t.Errorf("line lacks number %q: %s", f, line)
			}
			return v
		}
		limit, _ := obj["limit"].(string)
		limits = append(limits, limit)
		if obj["scenario"] != "flowcontrol" || num("jobs") != 2000 || num("jobs_per_sec") <= 0 || num("ordinary_claims") < 1 {
			t.Errorf("%s: want 2000 jobs drained by ordinary claims: %s", limit, line)
		}
		wantLimited := 500.0
		if limit == "idle" {
			wantLimited = 0
		}
		if num("limited_jobs") != wantLimited {
			t.Errorf("%s: limited_jobs %v, want %v", limit, num("limited_jobs"), wantLimited)
		}
		if claims := num("limited_claims"); (limit == "none") != (claims == 0) {
			t.Errorf("%s: %v limited claims", limit, claims)
		}
		num("limited_claim_p99_ms")
		num("ordinary_claim_p99_ms")
		num("bench_cpu_s_per_1k")
		if limit == "rate" {
			// 500 jobs under 200/s with a burst of 200 take 1.5 s; a limit
			// that leaked would start them at once, well over what it
			// allows.
			if f := num("fraction_of_allowed"); f <= 0 || f > 1.05 || num("limited_seconds") < 1.4 {
				t.Errorf("rate: fraction_of_allowed %v, want (0, 1.05]: %s", f, line)
			}
			// The 300 jobs past the burst each waited for a token.
			if p50, p99 := num("pickup_p50_ms"), num("pickup_p99_ms"); p50 < 0 || p99 < p50 || num("pickup_max_ms") < p99 {
				t.Errorf("rate: pickup p50 %v, p99 %v: %s", p50, p99, line)
			}
		} else if _, ok := obj["pickup_p50_ms"]; ok {
			t.Errorf("%s: a pickup without a rate: %s", limit, line)
		}
		if _, ok := obj["fraction_of_bound"]; ok {
			t.Errorf("%s: a bound of instant handlers: %s", limit, line)
		}
	}
	if strings.Join(limits, ",") != "none,idle,concurrency,rate" {
		t.Errorf("variants %v, want none, idle, concurrency, rate", limits)
	}

	// With handlers that take time, the concurrency variant alone, and its
	// bound: 3 tenants × 2 places over the handlers' measured mean, at
	// least the 3.5 ms they ask to sleep on average.
	out.Reset()
	code = run(t.Context(), []string{"bench", "--scenario", "flowcontrol", "--jobs", "1000", "--limited-share", "0.25",
		"--limit-running", "2", "--limit-tenants", "3", "--limit-variants", "concurrency", "--limited-sleep",
		"--database-url", url}, &out, &errOut)
	if code != 0 {
		t.Fatalf("bench exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	var obj map[string]any
	if err := json.Unmarshal(out.Bytes(), &obj); err != nil {
		t.Fatalf("stdout is not one JSON object: %q: %v", out.String(), err)
	}
	mean, _ := obj["limited_handler_mean_ms"].(float64)
	bound, _ := obj["bound_jobs_per_sec"].(float64)
	if obj["limit"] != "concurrency" || obj["limited_handler_max_ms"] != 5.0 || mean < 3.2 || mean > 6 ||
		math.Abs(bound-6/(mean/1000)) > 1 {
		t.Errorf("want the concurrency variant's line with a bound of 6 places / the handlers' mean of 3.5 ms or more: %s", out.String())
	}
	if f, _ := obj["fraction_of_bound"].(float64); f <= 0 || f > 1.05 {
		t.Errorf("fraction_of_bound %v, want (0, 1.05]: %s", f, out.String())
	}
}
