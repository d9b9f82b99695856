package docket_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/schedule"
)

type aTick struct{}

func (aTick) Kind() string { return "a_tick" }

type bTick struct{}

func (bTick) Kind() string { return "b_tick" }

// logRecords is a slog.Handler that keeps every record, for tests that
// check what was logged.
type logRecords struct {
	mu   *sync.Mutex
	recs *[]slog.Record
}

func newLogRecords() logRecords { return logRecords{mu: &sync.Mutex{}, recs: &[]slog.Record{}} }

func (l logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l logRecords) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l logRecords) WithGroup(string) slog.Handler            { return l }
func (l logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	*l.recs = append(*l.recs, r.Clone())
	return nil
}

// count returns how many records at level have an attribute key = value;
// with key empty, how many records at level there are.
func (l logRecords) count(level slog.Level, key, value string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range *l.recs {
		if r.Level != level {
			continue
		}
		if key == "" {
			n++
			continue
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == key && a.Value.String() == value {
				n++
				return false
			}
			return true
		})
	}
	return n
}

// Two services share a schema, each with a schedule of a kind only it
// runs: each one's reconciler restores its own schedule's lost run and
// leaves the other's alone, saying so once at INFO rather than failing
// (and warning) every pass.
func TestSchedulesOfOtherServicesDoNotStopReconcile(t *testing.T) {
	t.Parallel()
	pool, schema := migrated(t)
	type service struct {
		name string
		logs logRecords
	}
	services := []service{{name: "a_tick", logs: newLogRecords()}, {name: "b_tick", logs: newLogRecords()}}
	for i, svc := range services {
		reg := handlers.NewRegistry()
		var args docket.Args = aTick{}
		if i == 1 {
			args = bTick{}
			handlers.MustRegister(reg, func(context.Context, *handlers.Job[bTick]) error { return nil }, handlers.KindOpts{})
		} else {
			handlers.MustRegister(reg, func(context.Context, *handlers.Job[aTick]) error { return nil }, handlers.KindOpts{})
		}
		c, err := docket.NewClient(pool, docket.Config{
			Schema:    schema,
			Registry:  reg,
			Schedules: []schedule.Schedule{{Name: svc.name, Spec: "@every 1h", Args: args}},
			Worker:    docket.WorkerConfig{Logger: slog.New(slog.DiscardHandler)},
			Scheduler: schedule.Config{ReconcileInterval: 200 * time.Millisecond, Logger: slog.New(svc.logs)},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Stop(context.Background()) })
	}
	pending := `SELECT count(*) FROM "` + schema + `".docket_jobs WHERE unique_key IN ('schedule:a_tick', 'schedule:b_tick')`
	// Twice, so that each reconciler makes several passes after it first
	// met the other's schedule.
	for round := range 2 {
		if _, err := pool.Exec(t.Context(), `DELETE FROM "`+schema+`".docket_jobs`); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for count(t, pool, pending) != 2 {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d of 2 pending runs back after 20s", round, count(t, pool, pending))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for i, svc := range services {
		other := services[1-i].name
		if n := svc.logs.count(slog.LevelInfo, "kind", other); n != 1 {
			t.Errorf("service %s logged kind %s at INFO %d times, want once", svc.name, other, n)
		}
		if n := svc.logs.count(slog.LevelWarn, "", ""); n != 0 {
			t.Errorf("service %s logged %d warnings", svc.name, n)
		}
		if n := svc.logs.count(slog.LevelInfo, "kind", svc.name); n != 0 {
			t.Errorf("service %s logged its own kind as left alone", svc.name)
		}
	}
}

type invoiceRun struct{}

func (invoiceRun) Kind() string { return "invoice_run" }

// "Trigger now" gives the run the options the schedule's own runs get (the
// kind's registered queue, priority and attempts), whether the process that
// triggers it has the kind's handler (the client) or not (a Service made
// with New, as `docket schedules trigger` and the dashboard use); and a
// worker whose only pool serves the kind's queue runs both.
func TestTriggerUsesKindOptions(t *testing.T) {
	t.Parallel()
	pool, schema := migrated(t)
	ran := make(chan string, 4)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[invoiceRun]) error {
		ran <- j.Meta[schedule.MetaTrigger]
		return nil
	}, handlers.KindOpts{Queue: "billing", Priority: 3, MaxAttempts: 3})
	sched := schedule.Schedule{Name: "invoices", Spec: "@every 1h", Args: invoiceRun{}}
	c, err := docket.NewClient(pool, docket.Config{
		Schema:    schema,
		Registry:  reg,
		Schedules: []schedule.Schedule{sched},
		Worker: docket.WorkerConfig{
			Pools:        []docket.PoolConfig{{Name: "billing", Queues: []string{"billing"}}},
			PollInterval: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Registered as Start does, but with the worker not yet running, so
	// that the triggered jobs wait to be looked at.
	if err := c.RegisterSchedules(t.Context(), sched); err != nil {
		t.Fatal(err)
	}
	// The operations of a process without the kind's handler (the CLI, the
	// dashboard), and the client's own.
	bare, err := admin.New(admin.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	for _, via := range []struct {
		name string
		ops  *admin.Client
	}{{"operations without a registry", bare}, {"the client", c.Admin()}} {
		id, err := via.ops.Schedules().Trigger(t.Context(), pool, "invoices")
		if err != nil {
			t.Fatalf("trigger through %s: %v", via.name, err)
		}
		var queue string
		var prio, attempts int
		err = pool.QueryRow(t.Context(), `SELECT queue, priority, max_attempts FROM "`+schema+`".docket_jobs WHERE id = $1`, id).
			Scan(&queue, &prio, &attempts)
		if err != nil || queue != "billing" || prio != 3 || attempts != 3 {
			t.Errorf("triggered through %s: queue %q priority %d max attempts %d (%v), want the kind's billing, 3, 3",
				via.name, queue, prio, attempts, err)
		}
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	deadline := time.After(20 * time.Second)
	for range 2 {
		select {
		case trigger := <-ran:
			if trigger != "manual" {
				t.Errorf("a run with trigger %q ran, want the manual ones", trigger)
			}
		case <-deadline:
			t.Fatalf("the triggered runs did not run within 20s; %d jobs left in queue default",
				count(t, pool, `SELECT count(*) FROM "`+schema+`".docket_jobs WHERE queue = 'default'`))
		}
	}
}
