package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/schedule"
)

type cliReport struct{}

func (cliReport) Kind() string { return "cli_report" }

func TestSchedulesVerbs(t *testing.T) {
	t.Parallel()
	url, schema := pgtest.URL(t), pgtest.Schema(t)
	if code, _, errOut := runDocket(t, "migrate", "up", "--database-url", url, "--schema", schema); code != 0 {
		t.Fatal(errOut)
	}
	pool := pgtest.Pool(t)
	registerSchedules(t, pool, schema, schedule.Schedule{Name: "nightly", Spec: "0 2 * * *", TimeZone: "Europe/Berlin", Args: cliReport{}})
	db := []string{"--database-url", url, "--schema", schema}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"list"}, "nightly  0 2 * * * (Europe/Berlin)"},
		{[]string{"pause", "nightly"}, "schedule nightly: paused"},
		{[]string{"list"}, "paused"},
		{[]string{"resume", "nightly"}, "schedule nightly: resumed"},
		{[]string{"trigger", "nightly"}, "triggered run enqueued as job"},
		{[]string{"list", "--stale", "1h"}, "(no schedules)"},
		{[]string{"remove", "nightly"}, "schedule nightly: removed"},
		{[]string{"list"}, "(no schedules)"},
	} {
		code, out, errOut := runDocket(t, append(append([]string{"schedules"}, c.args...), db...)...)
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("schedules %v: %d %q %q, want %q", c.args, code, out, errOut, c.want)
		}
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"schedules"}, 2, "want one of list, pause"},
		{[]string{"schedules", "pause"}, 2, "takes one schedule name"},
		{[]string{"schedules", "fly", "x"}, 2, "unknown schedules verb"},
		{append([]string{"schedules", "pause", "ghost"}, db...), 1, `schedule not found: "ghost"`},
	} {
		code, _, errOut := runDocket(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: %d %q, want %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
}

// `docket schedules trigger` enqueues the run with the options the
// schedule's own runs get, the kind's registered ones, which the CLI knows
// only from the schedule's row; `list` shows them.
func TestSchedulesTriggerUsesKindOptions(t *testing.T) {
	t.Parallel()
	url, schema := pgtest.URL(t), pgtest.Schema(t)
	if code, _, errOut := runDocket(t, "migrate", "up", "--database-url", url, "--schema", schema); code != 0 {
		t.Fatal(errOut)
	}
	pool := pgtest.Pool(t)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[cliReport]) error { return nil },
		handlers.KindOpts{Queue: "billing", Priority: 3, MaxAttempts: 3})
	sched := schedule.Schedule{Name: "invoices", Spec: "@hourly", Args: cliReport{}}
	c, err := docket.NewClient(pool, docket.Config{Schema: schema, Registry: reg, Schedules: []schedule.Schedule{sched}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterSchedules(t.Context(), sched); err != nil {
		t.Fatal(err)
	}
	db := []string{"--database-url", url, "--schema", schema}
	code, out, errOut := runDocket(t, append([]string{"schedules", "trigger", "invoices"}, db...)...)
	var id int64
	if _, err := fmt.Sscanf(out, "schedule invoices: triggered run enqueued as job %d", &id); code != 0 || err != nil {
		t.Fatalf("trigger: %d %q %q", code, out, errOut)
	}
	var queue string
	var prio, attempts int
	err = pool.QueryRow(t.Context(), `SELECT queue, priority, max_attempts FROM "`+schema+`".docket_jobs WHERE id = $1`, id).
		Scan(&queue, &prio, &attempts)
	if err != nil || queue != "billing" || prio != 3 || attempts != 3 {
		t.Errorf("triggered job: queue %q priority %d max attempts %d (%v), want billing, 3, 3", queue, prio, attempts, err)
	}
	if code, out, errOut := runDocket(t, append([]string{"schedules", "list"}, db...)...); code != 0 || !strings.Contains(out, "cli_report  billing") {
		t.Errorf("list: %d %q %q, want the runs' queue billing", code, out, errOut)
	}
	code, out, errOut = runDocket(t, append([]string{"schedules", "list", "--json"}, db...)...)
	var list []struct {
		Run struct {
			Queue       string `json:"queue"`
			Priority    int    `json:"priority"`
			MaxAttempts int    `json:"max_attempts"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list) != 1 {
		t.Fatalf("list --json: %d %v %q %q", code, err, out, errOut)
	}
	if r := list[0].Run; r.Queue != "billing" || r.Priority != 3 || r.MaxAttempts != 3 {
		t.Errorf("list --json: run %+v, want billing, 3, 3", r)
	}
}
