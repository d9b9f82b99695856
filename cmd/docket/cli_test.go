package main

import (
	"encoding/json"
	"flag"
	"runtime"
	"strings"
	"testing"

	"github.com/docketq/docket/internal/pgtest"
)

// unreachableURL is a database nobody listens on: a command that tries it
// fails with exit 1 and "cannot connect", so an exit 2 proves the usage
// error came first.
const unreachableURL = "postgres://nobody:secret@127.0.0.1:1/x?connect_timeout=2"

// leaf is a runnable command of the table and its path ("dlq list").
type leaf struct {
	path string
	cmd  *command
}

// walk returns every command of the table with its path, groups and leaves.
func walk(c *command, path string) []leaf {
	out := []leaf{{path, c}}
	for _, v := range c.verbs {
		out = append(out, walk(v, strings.TrimSpace(path+" "+v.name))...)
	}
	return out
}

func flagNames(c *command) []string {
	fs := newFlagSet("")
	c.flags(fs)
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

func TestHelpForEveryCommand(t *testing.T) {
	t.Parallel()
	for _, l := range walk(commands(), "") {
		args := append(strings.Fields(l.path), "--help")
		for _, form := range [][]string{args, append([]string{"help"}, strings.Fields(l.path)...)} {
			code, out, errOut := docket(t, form...)
			want := strings.TrimSpace("usage: docket " + l.path)
			if code != 0 || !strings.HasPrefix(out, want) || errOut != "" {
				t.Errorf("docket %v: exit %d, stdout %q, stderr %q; want exit 0 and %q on stdout", form, code, out, errOut, want)
				continue
			}
			for _, v := range l.cmd.verbs {
				if !strings.Contains(out, "\n  "+v.name+" ") {
					t.Errorf("docket %v does not list %s:\n%s", form, v.name, out)
				}
			}
			if l.cmd.flags != nil {
				for _, name := range flagNames(l.cmd) {
					if !strings.Contains(out, "  -"+name) {
						t.Errorf("docket %v does not describe -%s:\n%s", form, name, out)
					}
				}
			}
		}
	}
	if code, out, _ := docket(t, "-h"); code != 0 || !strings.Contains(out, "DOCKET_SCHEMA") || !strings.Contains(out, "DATABASE_URL") {
		t.Errorf("docket -h: %d, does not name the environment:\n%s", code, out)
	}
}

func TestNoArgumentsIsUsage(t *testing.T) {
	t.Parallel()
	code, out, errOut := docket(t)
	if code != 2 || out != "" || !strings.HasPrefix(errOut, "usage: docket <command>") {
		t.Errorf("docket: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := docket(t, "help", "nope"); code != 2 || !strings.Contains(errOut, `no help for "nope"`) {
		t.Errorf("docket help nope: %d %q", code, errOut)
	}
}

func TestBenchHelpListsEveryScenario(t *testing.T) {
	t.Parallel()
	_, out, _ := docket(t, "bench", "--help")
	for _, s := range []string{"insert", "drain", "sustained", "idle", "all", "heldxmin"} {
		if !strings.Contains(out, "\n  "+s+" ") {
			t.Errorf("bench help lacks scenario %s:\n%s", s, out)
		}
	}
}

// TestUsageErrorsBeforeConnecting runs every misuse against an unreachable
// database: each must be exit 2 with its message, never a connection error.
func TestUsageErrorsBeforeConnecting(t *testing.T) {
	t.Setenv("DATABASE_URL", unreachableURL)
	type usageCase struct {
		args []string
		want string
	}
	cases := []usageCase{
		{[]string{"nope"}, `unknown command "nope"`},
		{[]string{"migrate", "sideways"}, `unknown migrate verb "sideways"`},
		{[]string{"migrate", "sideways", "--database-url", "postgres://x"}, `unknown migrate verb "sideways"`},
		{[]string{"dlq", "--json", "list"}, "flag --json before the verb: want one of list"},
		{[]string{"dlq", "list", "--payload"}, "flag provided but not defined: -payload"},
		{[]string{"dlq", "list", "--older-than", "1h"}, "not defined: -older-than"},
		{[]string{"dlq", "list", "--rate", "5/s"}, "not defined: -rate"},
		{[]string{"dlq", "list", "7"}, "list takes no ids"},
		{[]string{"dlq", "show", "7", "--rate", "5/s"}, "not defined: -rate"},
		{[]string{"dlq", "show"}, "takes one job id"},
		{[]string{"dlq", "show", "x"}, `job id "x" is not a number`},
		{[]string{"dlq", "replay"}, "needs ids"},
		{[]string{"dlq", "replay", "--all", "--rate", "fast"}, `rate "fast"`},
		{[]string{"dlq", "replay", "--payload", "--all"}, "not defined: -payload"},
		{[]string{"dlq", "purge"}, "needs --older-than"},
		{[]string{"dlq", "purge", "--older-than", "1h", "--kind", "mail"}, "not defined: -kind"},
		{[]string{"jobs", "retry", "1", "--note", "x"}, "not defined: -note"},
		{[]string{"jobs", "cancel"}, "takes one job id"},
		{[]string{"jobs", "list", "--state", "finished"}, `unknown state "finished"`},
		{[]string{"jobs", "list", "--limit", "5000"}, "page size 5000: want 1 to 1000"},
		{[]string{"jobs", "list", "--limit", "0"}, "--limit 0: want 1 to 1000"},
		{[]string{"jobs", "list", "--after", "x"}, `invalid value "x" for flag -after`},
		{[]string{"jobs", "list", "--after", "-3"}, "after -3: want a job id"},
		{[]string{"jobs", "list", "--state", "completed", "--error", "x"}, "completed jobs keep no error"},
		{[]string{"jobs", "list", "7"}, "list takes no ids"},
		{[]string{"jobs", "show"}, "takes one job id"},
		{[]string{"jobs", "show", "x"}, `job id "x" is not a number`},
		{[]string{"queues", "list", "--stale", "1h"}, "not defined: -stale"},
		{[]string{"queues", "pause"}, "takes one queue name"},
		{[]string{"schedules", "pause", "nightly", "--stale", "1h"}, "not defined: -stale"},
		{[]string{"status", "--addr", ":1"}, "not defined: -addr"},
		{[]string{"status", "extra"}, `unexpected argument "extra"`},
		{[]string{"metrics", "serve", "--watch", "1s"}, "not defined: -watch"},
		{[]string{"migrate", "up", "--direction", "up"}, "not defined: -direction"},
		{[]string{"migrate", "sql", "--database-url", "postgres://x"}, "not defined: -database-url"},
		{[]string{"migrate", "sql", "--direction", "sideways"}, `--direction "sideways"`},
		{[]string{"migrate", "status", "--version", "3"}, "not defined: -version"},
		{[]string{"migrate", "up", "--schema", "Bad-Name"}, "invalid schema name"},
		{[]string{"version", "--schema", "x"}, "not defined: -schema"},
		{[]string{"demo", "--orders", "0"}, "--orders must be at least 1"},
		{[]string{"bench", "--scenario", "all", "--rate", "-1"}, "--rate must be positive"},
		{[]string{"soak", "--rate", "0"}, "--rate must be at least 1"},
		{[]string{"soak", "--workers", "0"}, "--workers must be at least 1"},
		{[]string{"soak", "--duration", "0s"}, "--duration must be positive"},
		{[]string{"soak", "--schedule-every", "7s"}, "--schedule-every 7s: want 1m or whole seconds that divide a minute"},
		{[]string{"soak", "--schedules", "-1"}, "--schedules must be 0 or more"},
		{[]string{"soak", "extra"}, `unexpected argument "extra"`},
		{[]string{"soak", "--serve-worker"}, "--serve-worker is for the soak's own worker processes"},
	}
	// Every group without its verb, and every leaf with a flag nobody has.
	for _, l := range walk(commands(), "") {
		path := strings.Fields(l.path)
		if l.cmd.verbs != nil && len(path) > 0 {
			cases = append(cases, usageCase{path, "want "})
			cases = append(cases, usageCase{append(path, "nope"), `verb "nope"`})
		}
		if l.cmd.flags != nil {
			cases = append(cases, usageCase{append(path, "--no-such-flag"), "not defined: -no-such-flag"})
		}
	}
	for _, c := range cases {
		code, out, errOut := docket(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("docket %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
		if !strings.Contains(errOut, "--help' for usage") || strings.Contains(errOut, "cannot connect") || strings.Contains(errOut, "secret") {
			t.Errorf("docket %v: stderr %q", c.args, errOut)
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errOut := docket(t, args...)
		// A test binary is not stamped with a module version or revision.
		if code != 0 || out != "docket (devel) "+runtime.Version()+"\n" || errOut != "" {
			t.Errorf("docket %v: %d %q %q", args, code, out, errOut)
		}
	}
	code, out, _ := docket(t, "version", "--json")
	var v map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v["version"] != "(devel)" || v["go_version"] != runtime.Version() {
		t.Errorf("version --json: %d %s", code, out)
	}
}

func TestMigrateStatusExitCodeAndEnvironment(t *testing.T) {
	schema := pgtest.Schema(t)
	t.Setenv("DATABASE_URL", pgtest.URL(t))
	t.Setenv("DOCKET_SCHEMA", schema)
	code, out, errOut := docket(t, "migrate", "status")
	if code != exitPending || !strings.Contains(out, "schema "+schema+": at version 0 of") || !strings.Contains(out, "pending 001_core") ||
		!strings.Contains(errOut, "migrations pending: run docket migrate up") {
		t.Fatalf("migrate status before up: %d %q %q", code, out, errOut)
	}
	if code, out, errOut = docket(t, "migrate", "up"); code != 0 || !strings.Contains(out, "applied 1_core") {
		t.Fatalf("migrate up from the environment: %d %q %q", code, out, errOut)
	}
	if code, out, errOut = docket(t, "migrate", "status"); code != 0 || strings.Contains(out, "pending") || errOut != "" {
		t.Fatalf("migrate status after up: %d %q %q", code, out, errOut)
	}
	// The flag wins over the environment.
	if code, out, _ = docket(t, "migrate", "status", "--schema", pgtest.Schema(t)); code != exitPending {
		t.Fatalf("migrate status of another schema: %d %q", code, out)
	}
}
