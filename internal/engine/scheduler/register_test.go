package scheduler_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/scheduler"
	"github.com/docketq/docket/internal/testkit/pgtest"
)

// Registering before the migrations have run says so, whether the schema
// exists without tables or does not exist at all.
func TestRegisterBeforeMigration(t *testing.T) {
	t.Parallel()
	pool := pgtest.PoolN(t, 2)
	for _, schema := range []string{pgtest.Schema(t), pgtest.Schema(t) + "_absent"} {
		jobs, err := enqueue.New(enqueue.Config{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		svc, err := scheduler.New(scheduler.Config{DB: pool, Jobs: jobs, Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		err = svc.Register(t.Context(), scheduler.Schedule{Name: "nightly", Spec: "@daily", Args: report{}})
		if !errors.Is(err, enqueue.ErrNotMigrated) || !strings.Contains(err.Error(), schema) {
			t.Errorf("schema %s: err = %v, want ErrNotMigrated naming the schema", schema, err)
		}
	}
}

// rawReport is a report whose payload is JSON text as given.
type rawReport struct {
	P json.RawMessage `json:"p"`
}

func (rawReport) Kind() string { return "report" }

// Register checks the job of the schedule's runs as Enqueue would, so a
// schedule whose runs could never be enqueued (or that PostgreSQL could not
// store: a number numeric cannot hold) is refused at once, and text that
// only looks like a NUL escape is stored as it is.
func TestRegisterChecksRunJob(t *testing.T) {
	t.Parallel()
	e := setup(t, 4, time.Now())
	for _, s := range []scheduler.Schedule{
		{Name: "lone-surrogate", Spec: "@hourly", Args: rawReport{P: json.RawMessage(`"\ud800"`)}},
		{Name: "number-over-numeric", Spec: "@hourly", Args: rawReport{P: json.RawMessage(`1e131072`)}},
		{Name: "number-under-numeric", Spec: "@hourly", Args: rawReport{P: json.RawMessage(`[1e-16384]`)}},
		{Name: "nul", Spec: "@hourly", Args: report{Tenant: "a\x00"}},
		{Name: "tenant", Spec: "@hourly", Args: report{}, Tenant: "t\xff"},
		{Name: "serial", Spec: "@hourly", Args: report{}, SerialKey: "s\x00"},
		{Name: "queue", Spec: "@hourly", Args: report{}, Queue: "a b"},
		{Name: "name\xff", Spec: "@hourly", Args: report{}},
	} {
		err := e.svc.Register(t.Context(), s)
		if !errors.Is(err, scheduler.ErrInvalidSchedule) || !errors.Is(err, enqueue.ErrInvalidJob) {
			t.Errorf("%q: err = %v, want ErrInvalidSchedule and ErrInvalidJob", s.Name, err)
		}
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_schedules`); n != 0 {
		t.Fatalf("%d schedules written", n)
	}
	const path = `C:\u0000dir`
	if err := e.svc.Register(t.Context(), scheduler.Schedule{Name: "path", Spec: "@hourly", Args: report{Tenant: path}}); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := e.pool.QueryRow(t.Context(), e.sql(`SELECT payload->>'tenant' FROM {{schema}}.docket_jobs WHERE unique_key = 'schedule:path'`)).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != path {
		t.Fatalf("run payload holds %q, want %q", got, path)
	}
}

// zeros is a payload small as text but large as jsonb: each of its 4 Mi
// numbers takes a jsonb entry and a numeric.
type zeros struct {
	Z json.RawMessage `json:"z"`
}

func (zeros) Kind() string { return "zeros" }

// Schedules whose payloads each fit jsonb are registered whatever their
// total: the batch goes to PostgreSQL as json, not as one jsonb document
// (six of these are over jsonb's 256 MiB together).
func TestRegisterOverJSONBInTotal(t *testing.T) {
	t.Parallel()
	e := setup(t, 4, time.Now())
	z := zeros{Z: json.RawMessage("[" + strings.Repeat("0,", 1<<22-1) + "0]")}
	var list []scheduler.Schedule
	for i := range 6 {
		// Paused: no runs to enqueue, only the registration is tested.
		list = append(list, scheduler.Schedule{Name: fmt.Sprintf("z%d", i), Spec: "@daily", Args: z, Paused: true})
	}
	if err := e.svc.Register(t.Context(), list...); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_schedules WHERE kind = 'zeros'`); n != len(list) {
		t.Fatalf("%d schedules stored, want %d", n, len(list))
	}
}
