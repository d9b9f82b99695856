package main

import (
	"context"
	"strings"
	"testing"

	"github.com/docketq/docket/internal/pgtest"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/schedule"
)

type cliReport struct{}

func (cliReport) Kind() string { return "cli_report" }

func TestSchedulesVerbs(t *testing.T) {
	t.Parallel()
	url, schema := pgtest.URL(t), pgtest.Schema(t)
	if code, _, errOut := docket(t, "migrate", "up", "--database-url", url, "--schema", schema); code != 0 {
		t.Fatal(errOut)
	}
	pool := pgtest.Pool(t)
	ob, _ := outbox.New(outbox.Config{Schema: schema})
	svc, err := schedule.New(schedule.Config{DB: pool, Outbox: ob})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Register(context.Background(), schedule.Schedule{Name: "nightly", Spec: "0 2 * * *", TimeZone: "Europe/Berlin", Args: cliReport{}}); err != nil {
		t.Fatal(err)
	}
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
		code, out, errOut := docket(t, append(append([]string{"schedules"}, c.args...), db...)...)
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
		code, _, errOut := docket(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: %d %q, want %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
}
