package main

import (
	"strings"
	"testing"
)

func TestJobsListAndShow(t *testing.T) {
	t.Parallel()
	url, schema, dead := opsSetup(t)
	db := []string{"--database-url", url, "--schema", schema}
	run := func(args ...string) string {
		t.Helper()
		code, out, errOut := docket(t, append(args, db...)...)
		if code != 0 {
			t.Fatalf("docket %v: %d %s", args, code, errOut)
		}
		return out
	}
	out := run("jobs", "list", "--queue", "mail", "--limit", "2")
	if !strings.HasPrefix(out, "ID  ") || strings.Count(out, " ready ") != 2 || !strings.Contains(out, "more: --after ") {
		t.Errorf("jobs list, first page of 3 mail jobs:\n%s", out)
	}
	after := strings.TrimSpace(out[strings.LastIndex(out, "--after ")+len("--after "):])
	out = run("jobs", "list", "--queue", "mail", "--limit", "2", "--after", after)
	if strings.Count(out, " ready ") != 1 || strings.Contains(out, "more:") {
		t.Errorf("jobs list, last page:\n%s", out)
	}
	out = run("jobs", "list", "--state", "dead", "--error", "mailbox")
	if strings.Count(out, "smtp: 550 mailbox unavailable") != 3 {
		t.Errorf("jobs list of dead jobs by error:\n%s", out)
	}
	if out := run("jobs", "list", "--kind", "nothing"); !strings.Contains(out, "(no jobs)") {
		t.Errorf("empty list:\n%s", out)
	}
	out = run("jobs", "show", itoa(dead[0]))
	if !strings.Contains(out, "state     dead") || !strings.Contains(out, "payload: hidden") || strings.Contains(out, "secret@example.com") {
		t.Errorf("jobs show:\n%s", out)
	}
	if out := run("jobs", "show", itoa(dead[0]), "--payload"); !strings.Contains(out, "secret@example.com") {
		t.Errorf("jobs show --payload:\n%s", out)
	}
	if code, _, errOut := docket(t, append([]string{"jobs", "show", "99999999"}, db...)...); code != exitFailure || !strings.Contains(errOut, "no job 99999999") {
		t.Errorf("jobs show of an unknown id: %d %s", code, errOut)
	}
}
