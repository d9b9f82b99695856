package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/jackc/pgx/v5/pgconn"
)

// envRunCLI makes the test binary run the CLI with its arguments instead of
// the tests: the bench's worker and relay processes, and the relay tests'
// relay processes, run their own executable again.
const envRunCLI = "DOCKET_TEST_RUN_CLI"

func TestMain(m *testing.M) {
	// The fuzzing engine's workers are this binary again, with -test.
	// flags: they run the tests whatever the environment says.
	if os.Getenv(envRunCLI) != "" && !slices.ContainsFunc(os.Args[1:], isTestFlag) {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	// Every other process this binary starts from its own executable is a
	// CLI run: set here once, so that no child can run the tests again
	// (which would start children of its own).
	os.Setenv(envRunCLI, "1")
	pgtest.Main(m)
}

// isTestFlag reports whether arg is a flag of the testing package.
func isTestFlag(arg string) bool { return strings.HasPrefix(arg, "-test.") }

// runDocket runs the CLI in-process and returns its exit code and output.
func runDocket(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestMigrateVerbs(t *testing.T) {
	t.Parallel()
	url, schema := pgtest.URL(t), pgtest.Schema(t)
	code, out, errOut := runDocket(t, "migrate", "up", "--database-url", url, "--schema", schema)
	if code != 0 || !strings.Contains(out, "applied 1_core") {
		t.Fatalf("up: %d %q %q", code, out, errOut)
	}
	if code, out, _ = runDocket(t, "migrate", "up", "--database-url", url, "--schema", schema); code != 0 || !strings.Contains(out, "nothing applied") {
		t.Fatalf("second up: %d %q", code, out)
	}
	if code, out, _ = runDocket(t, "migrate", "list", "--database-url", url, "--schema", schema); code != 0 || !strings.Contains(out, "001      core") {
		t.Fatalf("list: %d %q", code, out)
	}
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	migs := m.Migrations()
	newest, before := migs[len(migs)-1], migs[len(migs)-2]
	if code, out, _ = runDocket(t, "migrate", "down", "--database-url", url, "--schema", schema); code != 0 || !strings.Contains(out, fmt.Sprintf("reverted %d_%s", newest.Version, newest.Name)) || strings.Contains(out, fmt.Sprintf("%d_%s", before.Version, before.Name)) {
		t.Fatalf("down one step: %d %q", code, out)
	}
	if code, out, _ = runDocket(t, "migrate", "down", "--version", "0", "--database-url", url, "--schema", schema); code != 0 || !strings.Contains(out, "reverted 1_core") {
		t.Fatalf("down: %d %q", code, out)
	}
	if code, out, _ = runDocket(t, "migrate", "sql", "--schema", "abc"); code != 0 || !strings.Contains(out, `"abc".docket_jobs`) {
		t.Fatalf("sql: %d %q", code, out)
	}
}

func TestCLIErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"nope"}, 2, "unknown command"},
		{[]string{"migrate"}, 2, "want one of up, down, list, sql"},
		{[]string{"migrate", "sideways", "--database-url", pgtest.URL(t)}, 2, "unknown migrate verb"},
		{[]string{"migrate", "sql", "--version", "999"}, 2, "--version 999: known versions are 1 to"},
		{[]string{"migrate", "up", "--database-url", pgtest.URL(t), "--version", "999"}, 2, "--version 999: known versions are 1 to"},
		{[]string{"migrate", "up", "--database-url", "postgres://nobody:secret@127.0.0.1:1/x?connect_timeout=2"}, 1, "cannot connect to PostgreSQL at 127.0.0.1:1"},
		{[]string{"migrate", "up", "--database-url", "::not a url"}, 2, "invalid database URL"},
		{[]string{"migrate", "up", "--database-url", pgtest.URL(t), "--schema", "Bad-Name"}, 2, "invalid schema name"},
	}
	for _, c := range cases {
		code, _, errOut := runDocket(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("docket %v: exit %d, stderr %q; want exit %d and %q", c.args, code, errOut, c.code, c.want)
		}
		if strings.Contains(errOut, "secret") {
			t.Errorf("docket %v: stderr shows the password: %q", c.args, errOut)
		}
	}
}

func TestDemoRunsToCompletion(t *testing.T) {
	url := pgtest.URL(t)
	t.Setenv("DATABASE_URL", url)
	schemaExists := func() bool {
		var ok bool
		if err := pgtest.Pool(t).QueryRow(t.Context(), `SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)`, demoSchema).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runDocket(t, "demo", "--orders", "50")
	if code != 0 {
		t.Fatalf("demo exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"completed          53", "retried, then ok   1", "dead-lettered      1 (exhausted:", "still queued       0",
		"overlapping for one tenant: 0", "wait in the queue  median", "including the\n                     wait behind the backlog",
		"Left behind: nothing (dropped schema docket_demo"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	// Which database, found how, and which schema: no password.
	using := fmt.Sprintf("using postgres://%s@%s:%d/%s, from $DATABASE_URL, schema docket_demo", cfg.User, cfg.Host, cfg.Port, cfg.Database)
	for _, want := range []string{"duplicate receipt enqueue reported existing job", using} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if schemaExists() {
		t.Errorf("the demo left schema %s behind without --keep", demoSchema)
	}

	code, out, errOut = runDocket(t, "demo", "--orders", "5", "--keep")
	if code != 0 {
		t.Fatalf("demo --keep exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !schemaExists() || !strings.Contains(out, "Left behind: schema docket_demo in postgres://") ||
		!strings.Contains(out, "docket status --database-url postgres://") {
		t.Errorf("demo --keep: schema kept %v, and it says:\n%s", schemaExists(), out)
	}
}
