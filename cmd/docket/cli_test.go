package main

import (
	"encoding/json"
	"flag"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/docketq/docket/internal/testkit/pgtest"
)

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
			code, out, errOut := runDocket(t, form...)
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
	if code, out, _ := runDocket(t, "-h"); code != 0 || !strings.Contains(out, "DOCKET_SCHEMA") || !strings.Contains(out, "DATABASE_URL") {
		t.Errorf("docket -h: %d, does not name the environment:\n%s", code, out)
	}
}

func TestNoArgumentsIsUsage(t *testing.T) {
	t.Parallel()
	code, out, errOut := runDocket(t)
	if code != 2 || out != "" || !strings.HasPrefix(errOut, "usage: docket <command>") {
		t.Errorf("docket: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := runDocket(t, "help", "nope"); code != 2 || !strings.Contains(errOut, `no help for "nope"`) {
		t.Errorf("docket help nope: %d %q", code, errOut)
	}
}

func TestBenchHelpListsEveryScenario(t *testing.T) {
	t.Parallel()
	_, out, _ := runDocket(t, "bench", "--help")
	for _, s := range []string{"insert", "drain", "sustained", "idle", "all", "heldxmin"} {
		if !strings.Contains(out, "\n  "+s+" ") {
			t.Errorf("bench help lacks scenario %s:\n%s", s, out)
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errOut := runDocket(t, args...)
		// A test binary is not stamped with a module version or revision.
		if code != 0 || out != "docket (devel) "+runtime.Version()+"\n" || errOut != "" {
			t.Errorf("docket %v: %d %q %q", args, code, out, errOut)
		}
	}
	code, out, _ := runDocket(t, "version", "--json")
	var v map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v["version"] != "(devel)" || v["go_version"] != runtime.Version() {
		t.Errorf("version --json: %d %s", code, out)
	}
}

func TestMigrateStatusExitCodeAndEnvironment(t *testing.T) {
	schema := pgtest.Schema(t)
	t.Setenv("DATABASE_URL", pgtest.URL(t))
	t.Setenv("DOCKET_SCHEMA", schema)
	code, out, errOut := runDocket(t, "migrate", "status")
	if code != exitPending || !strings.Contains(out, "schema "+schema+": at version 0 of") || !strings.Contains(out, "pending 001_core") ||
		!strings.Contains(errOut, "migrations pending: run docket migrate up") {
		t.Fatalf("migrate status before up: %d %q %q", code, out, errOut)
	}
	if code, out, errOut = runDocket(t, "migrate", "up"); code != 0 || !strings.Contains(out, "applied 1_core") {
		t.Fatalf("migrate up from the environment: %d %q %q", code, out, errOut)
	}
	if code, out, errOut = runDocket(t, "migrate", "status"); code != 0 || strings.Contains(out, "pending") || errOut != "" {
		t.Fatalf("migrate status after up: %d %q %q", code, out, errOut)
	}
	// The flag wins over the environment.
	if code, out, _ = runDocket(t, "migrate", "status", "--schema", pgtest.Schema(t)); code != exitPending {
		t.Fatalf("migrate status of another schema: %d %q", code, out)
	}
}

// The command users deploy links no fault injection: the fault suite, its
// proxy and the soak are tools of the repository.
func TestBinaryLinksNoFaultInjection(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.Contains(pkg, "/faultsuite") || strings.Contains(pkg, "/faultproxy") || strings.Contains(pkg, "/tools/soak") {
			t.Errorf("docket links %s", pkg)
		}
	}
}
