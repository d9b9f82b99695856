package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/scheduler"
	"github.com/jackc/pgx/v5"
)

// 10,000 schedules with one spec, registered at once by 4 processes: one
// pending run each, spread evenly over the window.
func TestRegisterConcurrentSpread(t *testing.T) {
	t.Parallel()
	e := setup(t, 8, time.Now())
	const n, window = 10_000, 10 * time.Minute
	all := make([]scheduler.Schedule, n)
	for i := range all {
		all[i] = scheduler.Schedule{
			Name: fmt.Sprintf("report-%05d", i), Spec: "@hourly", Args: report{Tenant: fmt.Sprint(i)},
			Window: window,
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for p := range 4 {
		svc := e.service(scheduler.Config{})
		mine := slices.Clone(all)
		rand.New(rand.NewPCG(uint64(p), 1)).Shuffle(len(mine), func(i, j int) { mine[i], mine[j] = mine[j], mine[i] })
		wg.Go(func() {
			if err := svc.Register(t.Context(), mine...); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	t.Logf("4 x %d registrations in %s", n, time.Since(start).Round(time.Millisecond))
	if got := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE unique_key LIKE 'schedule:%'`); got != n {
		t.Fatalf("%d pending runs, want %d", got, n)
	}
	if got := e.count(`SELECT count(*) FROM {{schema}}.docket_schedules WHERE next_fire IS NOT NULL`); got != n {
		t.Fatalf("%d schedules with a next fire time, want %d", got, n)
	}
	// Every run is at its schedule's fire time plus its offset.
	if bad := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs j JOIN {{schema}}.docket_schedules s
		ON j.unique_key = 'schedule:' || s.name
		WHERE j.meta->>'fire' <> to_char(s.next_fire AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
		   OR j.run_at < s.next_fire OR j.run_at >= s.next_fire + interval '10 minutes'`); bad != 0 {
		t.Fatalf("%d runs not at fire time + offset in the window", bad)
	}
	rows, err := e.pool.Query(t.Context(), e.sql(`SELECT floor(extract(epoch FROM j.run_at - s.next_fire))::int, count(*)
		FROM {{schema}}.docket_jobs j JOIN {{schema}}.docket_schedules s ON j.unique_key = 'schedule:' || s.name
		GROUP BY 1 ORDER BY 1`))
	if err != nil {
		t.Fatal(err)
	}
	perSecond := make([]int, int(window/time.Second))
	for rows.Next() {
		var sec, c int
		if err := rows.Scan(&sec, &c); err != nil {
			t.Fatal(err)
		}
		perSecond[sec] = c
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	mean := float64(n) / float64(len(perSecond))
	maxC, minC := slices.Max(perSecond), slices.Min(perSecond)
	// Histogram of per-second counts: how many seconds hold k runs.
	hist := map[int]int{}
	for _, c := range perSecond {
		hist[c]++
	}
	keys := make([]int, 0, len(hist))
	for k := range hist {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %d:%d", k, hist[k])
	}
	perMinute := make([]int, 10)
	for s, c := range perSecond {
		perMinute[s/60] += c
	}
	t.Logf("runs per second over the %s window: mean %.1f, min %d, max %d (%.2fx mean)", window, mean, minC, maxC, float64(maxC)/mean)
	t.Logf("seconds holding k runs (k:seconds):%s", b.String())
	t.Logf("runs per minute of the window: %v", perMinute)
	if float64(maxC) > 3*mean {
		t.Errorf("busiest second holds %d runs, more than 3x the mean %.1f", maxC, mean)
	}
	// Registering again changes nothing.
	if err := e.svc.Register(t.Context(), all[:100]...); err != nil {
		t.Fatal(err)
	}
	if got := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs`); got != n {
		t.Fatalf("%d jobs after re-registering, want %d", got, n)
	}
}

func TestRegisterRejectsBadSpecsAndWritesNothing(t *testing.T) {
	t.Parallel()
	e := setup(t, 4, time.Now())
	good := scheduler.Schedule{Name: "good", Spec: "@hourly", Args: report{}}
	for _, c := range badSpecs {
		name := "bad-" + strings.NewReplacer(" ", "_", "*", "x").Replace(c.spec)
		if c.spec == "" {
			name = "bad-empty"
		}
		err := e.svc.Register(t.Context(), good, scheduler.Schedule{Name: name, Spec: c.spec, TimeZone: c.zone, Args: report{}})
		if !errors.Is(err, scheduler.ErrInvalidSpec) || !strings.Contains(err.Error(), `schedule "`+name+`"`) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("spec %q: error %v; want ErrInvalidSpec naming %q and saying %q", c.spec, err, name, c.want)
		}
	}
	for _, s := range []scheduler.Schedule{
		{Name: "", Spec: "@hourly", Args: report{}},
		{Name: "no args", Spec: "@hourly"},
		{Name: "noargs", Spec: "@hourly"},
		{Name: "neg", Spec: "@hourly", Args: report{}, Window: -time.Second},
		{Name: "misfire", Spec: "@hourly", Args: report{}, Misfire: "later"},
	} {
		if err := e.svc.Register(t.Context(), good, s); !errors.Is(err, scheduler.ErrInvalidSchedule) {
			t.Errorf("%+v: err = %v, want ErrInvalidSchedule", s, err)
		}
	}
	if err := e.svc.Register(t.Context(), good, good); !errors.Is(err, scheduler.ErrInvalidSchedule) {
		t.Errorf("duplicate name: err = %v", err)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_schedules`); n != 0 {
		t.Errorf("%d schedules written", n)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs`); n != 0 {
		t.Errorf("%d jobs written", n)
	}
}

// A week of hourly runs in simulated time, on two workers, with a worker
// crash (lease expiry) mid-run and a run dead-lettered by the reaper.
func TestSimulatedWeek(t *testing.T) {
	t.Parallel()
	// The simulated week lies in the real past, so every run is due at once
	// by the database's clock, while the service's clock follows the runs.
	t0 := time.Now().Add(-8 * 24 * time.Hour).Truncate(time.Hour).Add(10 * time.Minute)
	e := setup(t, 12, t0)
	end := t0.Add(7 * 24 * time.Hour)
	spec, _ := scheduler.ParseSpec("@hourly", "")
	var want []time.Time
	for f := spec.Next(t0); !f.After(end); f = spec.Next(f) {
		want = append(want, f)
	}
	const name = "weekly-check"
	var mu sync.Mutex
	runs := map[time.Time]int{}
	crash, reaped := want[40], want[100]
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[report]) error {
		fire, err := time.Parse(time.RFC3339, j.Meta[scheduler.MetaFire])
		if err != nil {
			return handlers.Cancel(err)
		}
		mu.Lock()
		runs[fire]++
		first := runs[fire] == 1
		mu.Unlock()
		e.clock.Set(fire.Add(time.Minute + scheduler.Offset(name, 5*time.Minute)))
		if (fire.Equal(crash) || fire.Equal(reaped)) && first {
			// The worker "dies" mid-run: the job now belongs to a worker
			// whose lease has expired. The reaper takes it back; for the
			// second one it was the last attempt, so it is dead-lettered.
			max := 25
			if fire.Equal(reaped) {
				max = 1
			}
			e.exec(`UPDATE {{schema}}.docket_jobs SET locked_by = gen_random_uuid(), lease_until = now() - interval '1s', max_attempts = $2 WHERE id = $1`, j.ID, max)
			return nil
		}
		if fire.Equal(want[len(want)-1]) {
			return e.svc.Pause(ctx, name) // the week is over
		}
		return nil
	}, handlers.KindOpts{})
	e.svc = e.wired(reg, "report")
	rec := e.service(scheduler.Config{ReconcileInterval: 100 * time.Millisecond})
	if err := rec.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rec.Stop(context.Background()) })
	if err := e.svc.Register(t.Context(), scheduler.Schedule{Name: name, Spec: "@hourly", Args: report{}, Window: 5 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	e.worker(reg)
	e.worker(reg)
	waitFor(t, 60*time.Second, "a week of runs", func() bool {
		return e.info(name).LastFire.Equal(want[len(want)-1])
	})
	t.Logf("%d hourly runs of a simulated week in %s", len(want), time.Since(started).Round(time.Millisecond))
	mu.Lock()
	defer mu.Unlock()
	for _, f := range want {
		exp := 1
		if f.Equal(crash) || f.Equal(reaped) {
			exp = 2 // at least once: the crashed attempt and its rerun
		}
		if runs[f] != exp {
			t.Errorf("fire %s ran %d times, want %d", f.Format(time.RFC3339), runs[f], exp)
		}
	}
	if len(runs) != len(want) {
		t.Errorf("%d distinct fire times ran, want %d", len(runs), len(want))
	}
	// History holds each fire time once (the reaped one was dead-lettered,
	// then re-created by the reconciler and completed).
	if n := e.count(`SELECT count(DISTINCT meta->>'fire') FROM {{schema}}.docket_jobs_done`); n != len(want) {
		t.Errorf("%d distinct fire times completed, want %d", n, len(want))
	}
	if n := e.count(`SELECT count(*) - count(DISTINCT meta->>'fire') FROM {{schema}}.docket_jobs_done`); n != 0 {
		t.Errorf("%d fire times completed twice", n)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_dead WHERE reason = 'lease_expired'`); n != 1 {
		t.Errorf("%d runs dead-lettered by the reaper, want 1", n)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs`); n != 0 {
		t.Errorf("%d jobs pending after pause", n)
	}
	// Runs were spread by the schedule's fixed offset.
	if n := e.count(`SELECT count(DISTINCT run_at - (meta->>'fire')::timestamptz) FROM {{schema}}.docket_jobs_done WHERE attempts = 1`); n != 1 {
		t.Errorf("%d distinct offsets, want 1", n)
	}
}

// Two completions of the same fire time (a run and its late duplicate)
// insert one next run.
func TestConcurrentCompletionsInsertOneNextRun(t *testing.T) {
	t.Parallel()
	// The service's clock runs an hour ahead so the first fire time is
	// never due by the database's clock, however close the next
	// five-minute boundary is.
	e := setup(t, 8, time.Now().Add(time.Hour))
	if err := e.svc.Register(t.Context(), scheduler.Schedule{Name: "x", Spec: "*/5 * * * *", Args: report{}}); err != nil {
		t.Fatal(err)
	}
	first := e.info("x").NextFire
	jobs, err := e.q.Claim(t.Context(), e.pool, claimParams())
	if err != nil || len(jobs) != 0 {
		t.Fatalf("claimed %d future jobs: %v", len(jobs), err)
	}
	// Load the pending run as a worker would see it, then remove it as its
	// completion would.
	e.exec(`UPDATE {{schema}}.docket_jobs SET run_at = now(), state = 'ready'`)
	jobs, err = e.q.Claim(t.Context(), e.pool, claimParams())
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	e.exec(`DELETE FROM {{schema}}.docket_jobs`)
	hook := e.svc.Hook()
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			<-start
			err := pgx.BeginFunc(t.Context(), e.pool, func(tx pgx.Tx) error {
				return hook(t.Context(), tx, jobs, nil)
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs`); n != 1 {
		t.Fatalf("%d next runs, want 1", n)
	}
	in := e.info("x")
	if !in.LastFire.Equal(first) || !in.NextFire.Equal(first.Add(5*time.Minute)) {
		t.Errorf("last %s next %s, want %s and 5 minutes later", in.LastFire, in.NextFire, first)
	}
}

// Workers down across three fire times: skip runs nothing late and goes on
// at the next future time; run-once runs one catch-up; catch-up runs each
// missed fire time.
func TestMisfire(t *testing.T) {
	t.Parallel()
	for _, policy := range []scheduler.Misfire{scheduler.Skip, scheduler.RunOnce, scheduler.CatchUp} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			now := time.Now().Truncate(time.Second)
			e := setup(t, 8, now.Add(-4*time.Hour-30*time.Minute))
			var mu sync.Mutex
			var ran []string
			reg := handlers.NewRegistry()
			handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[report]) error {
				mu.Lock()
				ran = append(ran, j.Meta[scheduler.MetaFire])
				mu.Unlock()
				return nil
			}, handlers.KindOpts{})
			e.svc = e.wired(reg, "report")
			if err := e.svc.Register(t.Context(), scheduler.Schedule{Name: "m", Spec: "@every 1h", Args: report{}, Misfire: policy}); err != nil {
				t.Fatal(err)
			}
			f1 := e.info("m").NextFire // now - 3h30m: then three more fire times pass
			e.clock.Set(now)           // workers come back now
			e.worker(reg)
			last, want := f1, 0
			switch policy {
			case scheduler.RunOnce:
				want = 1
			case scheduler.CatchUp:
				last, want = f1.Add(3*time.Hour), 4
			}
			waitFor(t, 10*time.Second, "the schedule to move on", func() bool { return e.info("m").LastFire.Equal(last) })
			in := e.info("m")
			if want := f1.Add(4 * time.Hour); !in.NextFire.Equal(want) {
				t.Errorf("next fire %s, want %s (the first ahead)", in.NextFire, want)
			}
			if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE run_at > now()`); n != 1 {
				t.Errorf("%d future runs, want 1", n)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(ran) != want {
				t.Errorf("ran %v, want %d catch-up runs", ran, want)
			}
		})
	}
}

// A lost run is re-created by the reconciler, under the misfire policy.
func TestReconcileLostRun(t *testing.T) {
	t.Parallel()
	now := time.Now().Truncate(time.Second)
	e := setup(t, 8, now.Add(-5*time.Hour))
	err := e.svc.Register(t.Context(),
		scheduler.Schedule{Name: "skip", Spec: "@every 1h", Args: report{}},
		scheduler.Schedule{Name: "once", Spec: "@every 1h", Args: report{}, Misfire: scheduler.RunOnce},
		scheduler.Schedule{Name: "fresh", Spec: "@every 1h", Args: report{}},
		scheduler.Schedule{Name: "all", Spec: "@every 1h", Args: report{}, Misfire: scheduler.CatchUp},
	)
	if err != nil {
		t.Fatal(err)
	}
	f1 := e.info("skip").NextFire // now - 4h
	e.clock.Set(now.Add(-4*time.Hour + 30*time.Second))
	e.exec(`DELETE FROM {{schema}}.docket_jobs WHERE unique_key = 'schedule:fresh'`)
	if n, err := e.svc.Reconcile(t.Context()); err != nil || n != 1 {
		t.Fatalf("reconcile re-created %d (%v), want 1", n, err)
	}
	if got := e.info("fresh").NextFire; !got.Equal(f1) {
		t.Errorf("fresh: re-created for %s, want its fire time %s", got, f1)
	}
	e.clock.Set(now.Add(-30 * time.Minute))
	e.exec(`DELETE FROM {{schema}}.docket_jobs`)
	if n, err := e.svc.Reconcile(t.Context()); err != nil || n != 4 {
		t.Fatalf("reconcile re-created %d (%v), want 4", n, err)
	}
	if got, want := e.info("skip").NextFire, f1.Add(4*time.Hour); !got.Equal(want) {
		t.Errorf("skip: next %s, want %s", got, want)
	}
	if got, want := e.info("once").NextFire, f1.Add(3*time.Hour); !got.Equal(want) {
		t.Errorf("run once: next %s, want the latest missed %s", got, want)
	}
	if got := e.info("all").NextFire; !got.Equal(f1) {
		t.Errorf("catch up: next %s, want the oldest missed %s", got, f1)
	}
	if n, err := e.svc.Reconcile(t.Context()); err != nil || n != 0 {
		t.Fatalf("second reconcile created %d (%v)", n, err)
	}
}

func TestPauseResumeTriggerRemove(t *testing.T) {
	t.Parallel()
	e := setup(t, 8, time.Now())
	ctx := t.Context()
	if err := e.svc.Register(ctx, scheduler.Schedule{Name: "p", Spec: "@hourly", Args: report{Tenant: "t1"}, Queue: "reports"}); err != nil {
		t.Fatal(err)
	}
	next := e.info("p").NextFire
	id, err := e.svc.Trigger(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE id = $1 AND unique_key IS NULL AND queue = 'reports' AND meta->>'trigger' = 'manual' AND run_at <= now()`, id); n != 1 {
		t.Errorf("triggered run not found")
	}
	if got := e.info("p").NextFire; !got.Equal(next) {
		t.Errorf("trigger moved the next run to %s", got)
	}
	if err := e.svc.Pause(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if !e.info("p").Paused {
		t.Error("not paused")
	}
	pending := `SELECT count(*) FROM {{schema}}.docket_jobs WHERE unique_key = 'schedule:p'`
	if n := e.count(pending); n != 0 {
		t.Errorf("paused schedule still has %d pending runs", n)
	}
	// Re-registering does not undo an operator's pause.
	if err := e.svc.Register(ctx, scheduler.Schedule{Name: "p", Spec: "@daily", Args: report{Tenant: "t1"}}); err != nil {
		t.Fatal(err)
	}
	if in := e.info("p"); !in.Paused || in.Spec != "@daily" {
		t.Errorf("after re-register: %+v", in)
	}
	if err := e.svc.Resume(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if e.info("p").Paused {
		t.Error("still paused")
	}
	if n := e.count(pending); n != 1 {
		t.Errorf("resumed schedule has %d pending runs, want 1", n)
	}
	stale, err := e.svc.Stale(ctx, time.Hour)
	if err != nil || len(stale) != 0 {
		t.Errorf("stale = %v, %v", stale, err)
	}
	stale, err = e.svc.Stale(ctx, -time.Hour)
	if err != nil || len(stale) != 1 {
		t.Errorf("stale with negative age = %v, %v", stale, err)
	}
	if err := e.svc.Remove(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if n := e.count(pending); n != 0 {
		t.Errorf("removed schedule still has %d pending runs", n)
	}
	for _, f := range []func(context.Context, string) error{e.svc.Pause, e.svc.Resume, e.svc.Remove} {
		if err := f(ctx, "p"); !errors.Is(err, scheduler.ErrNotFound) {
			t.Errorf("err = %v, want ErrNotFound", err)
		}
	}
	if _, err := e.svc.Trigger(ctx, "p"); !errors.Is(err, scheduler.ErrNotFound) {
		t.Errorf("trigger: %v", err)
	}
}

// A reconcile that read a schedule just before a transaction paused it and
// finished its run (the outcome of a run whose handler paused it, without a
// successor) leaves no run behind: its insert waits for that transaction's
// removal of the run, then finds the row changed.
func TestReconcileRacingLastRun(t *testing.T) {
	t.Parallel()
	e := setup(t, 6, time.Now())
	ctx := t.Context()
	if err := e.svc.Register(ctx, scheduler.Schedule{Name: "x", Spec: "@hourly", Args: report{}}); err != nil {
		t.Fatal(err)
	}
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	for _, sql := range []string{
		`DELETE FROM {{schema}}.docket_jobs WHERE unique_key = 'schedule:x'`,
		`UPDATE {{schema}}.docket_schedules SET paused = true, last_fire = next_fire, next_fire = NULL WHERE name = 'x'`,
	} {
		if _, err := tx.Exec(ctx, e.sql(sql)); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := e.svc.Reconcile(ctx)
		done <- result{n, err}
	}()
	// The reconcile's insert waits for the open transaction's delete of the
	// run with the same unique key.
	waitFor(t, 20*time.Second, "the reconcile's insert to wait for the open transaction", func() bool {
		return e.count(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
			AND query LIKE '%' || $1 || '%docket_jobs%'`, e.schema) > 0
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.n != 0 {
			t.Errorf("reconcile created %d runs (%v), want 0", r.n, r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("reconcile did not return within 20s")
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs`); n != 0 {
		t.Errorf("%d runs left for the paused schedule, want 0", n)
	}
}

// A stored spec that no longer parses (a zone a newer zone database
// dropped) plans no run, but neither hides its schedule from List nor
// ends a reconcile pass early: the schedules after it, on the same page
// and the next, get their runs.
func TestUnparsableSpecDoesNotEndReconcile(t *testing.T) {
	t.Parallel()
	e := setup(t, 4, time.Now())
	ctx := t.Context()
	// More schedules than one reconcile page, the first of them broken, all
	// without a pending run.
	e.exec(`INSERT INTO {{schema}}.docket_schedules (name, spec, kind, queue, payload)
		SELECT 's-' || lpad(i::text, 4, '0'), '@hourly', 'report', '', '{}' FROM generate_series(1, 600) i`)
	e.exec(`INSERT INTO {{schema}}.docket_schedules (name, spec, time_zone, kind, queue, payload)
		VALUES ('a-broken', '0 2 * * *', 'Mars/Olympus_Mons', 'report', '', '{}')`)
	n, err := e.svc.Reconcile(ctx)
	if err != nil || n != 600 {
		t.Errorf("Reconcile created %d runs (%v), want 600", n, err)
	}
	if got := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE unique_key LIKE 'schedule:%'`); got != 600 {
		t.Errorf("%d pending runs, want 600", got)
	}
	list, err := e.svc.List(ctx)
	if err != nil || len(list) != 601 || list[0].Name != "a-broken" {
		t.Errorf("List: %d schedules (%v), want 601 starting with a-broken", len(list), err)
	}
}
