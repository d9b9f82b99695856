package main

import (
	"strings"
	"testing"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/testkit/pgtest"
)

func TestJobsListAndShow(t *testing.T) {
	t.Parallel()
	url, schema, dead := opsSetup(t)
	db := []string{"--database-url", url, "--schema", schema}
	run := func(args ...string) string {
		t.Helper()
		code, out, errOut := runDocket(t, append(args, db...)...)
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
	if !strings.Contains(out, "state     dead") || !strings.Contains(out, "payload: hidden") || strings.Contains(out, "secret@example.com") ||
		strings.Contains(out, "relays") {
		t.Errorf("jobs show:\n%s", out)
	}
	// The result its last attempt recorded, indented, with < as it is.
	wantResult := "result:\n{\n  \"note\": \"<tried 3 relays>\",\n  \"relays\": [\n    \"a\",\n    \"b\"\n  ]\n}\n"
	if out := run("jobs", "show", itoa(dead[0]), "--payload"); !strings.Contains(out, "secret@example.com") || !strings.Contains(out, wantResult) {
		t.Errorf("jobs show --payload:\n%s", out)
	}
	if code, _, errOut := runDocket(t, append([]string{"jobs", "show", "99999999"}, db...)...); code != exitFailure || !strings.Contains(errOut, "no job 99999999") {
		t.Errorf("jobs show of an unknown id: %d %s", code, errOut)
	}
}

// TestJobsListOffersEveryState checks that `docket jobs list --state` names
// and lists every state of admin.JobStates, the list that TestStatesAgree
// (in the root package) holds against the migrations, the Ent schema, the
// dashboard and docs/state-machine.md, and that it refuses another state
// naming them all.
func TestJobsListOffersEveryState(t *testing.T) {
	t.Parallel()
	url, schema := pgtest.URL(t), pgtest.Schema(t)
	if code, _, errOut := runDocket(t, "migrate", "up", "--database-url", url, "--schema", schema); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	_, out, errOut := runDocket(t, "jobs", "list", "--help")
	_, usage, ok := strings.Cut(out+errOut, "-state string\n")
	usage, _, _ = strings.Cut(usage, "\n")
	if !ok {
		t.Fatalf("jobs list --help has no --state flag:\n%s%s", out, errOut)
	}
	states := admin.JobStates()
	for _, s := range states {
		if !strings.Contains(usage, " "+s) {
			t.Errorf("the usage of --state does not name state %q: %s", s, usage)
		}
		if code, _, errOut := runDocket(t, "jobs", "list", "--state", s, "--database-url", url, "--schema", schema); code != 0 {
			t.Errorf("jobs list --state %s: %d %s", s, code, errOut)
		}
	}
	code, _, errOut := runDocket(t, "jobs", "list", "--state", "finished")
	if want := "want one of " + strings.Join(states, ", "); code == 0 || !strings.Contains(errOut, want) {
		t.Errorf("jobs list --state finished: %d %q, want an error saying %q", code, errOut, want)
	}
}
