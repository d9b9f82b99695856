package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// catalog describes a schema's objects in lines that do not name the
// schema: relations, columns, indexes, constraints, functions and the
// applied migration versions.
func catalog(t *testing.T, pool *pgxpool.Pool, schema string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
SELECT 'relation ' || c.relname || ' ' || c.relkind::text
  FROM pg_class c WHERE c.relnamespace = $1::text::regnamespace
UNION ALL
SELECT 'column ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
       || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
       || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')
  FROM pg_attribute a
  JOIN pg_class c ON c.oid = a.attrelid
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE c.relnamespace = $1::text::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
UNION ALL
SELECT 'index ' || indexname || ' ' || indexdef FROM pg_indexes WHERE schemaname = $1::text
UNION ALL
SELECT 'constraint ' || conname || ' ' || pg_get_constraintdef(oid)
  FROM pg_constraint WHERE connamespace = $1::text::regnamespace
UNION ALL
SELECT 'function ' || p.proname || '(' || pg_get_function_arguments(p.oid) || ')'
  FROM pg_proc p WHERE p.pronamespace = $1::text::regnamespace`, schema)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	// The applied versions; after the down SQL the table is gone.
	var versions []string
	rows, err = pool.Query(context.Background(), `SELECT 'applied ' || version || ' ' || name FROM `+pgx.Identifier{schema, "docket_migrations"}.Sanitize()+` ORDER BY version`)
	if err == nil {
		versions, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil && !strings.Contains(err.Error(), "does not exist") {
		t.Fatal(err)
	}
	for i, l := range append(lines, versions...) {
		lines = append(lines[:i:i], strings.ReplaceAll(strings.ReplaceAll(l, `"`+schema+`".`, "S."), schema+".", "S."))
	}
	slices.Sort(lines)
	return lines
}

// historyPartition matches the catalog lines of a day's history
// partition (docket_jobs_done_YYYYMMDD) and of its indexes.
var historyPartition = regexp.MustCompile(`^\w+ docket_jobs_done_\d{8}[._ ]`)

// psql runs SQL with psql, stopping at the first error.
func psql(t *testing.T, sql string) {
	t.Helper()
	cmd := exec.Command("psql", "--no-psqlrc", "--quiet", "-v", "ON_ERROR_STOP=1", "--single-transaction", "-d", pgtest.URL(t), "-f", "-")
	cmd.Stdin = strings.NewReader(sql)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
}

// TestMigrateSQLRoundTrip applies the printed up SQL with psql to an empty
// schema, compares its catalog with what the Migrator makes, then applies
// the printed down SQL and finds nothing left.
func TestMigrateSQLRoundTrip(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("psql not installed")
	}
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	byMigrator, bySQL := pgtest.Schema(t), pgtest.Schema(t)
	m, err := migrate.New(byMigrator)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	// Up also makes the history partitions of today and the days ahead, as
	// a worker's Start does; the printed SQL leaves them to the first
	// worker, so they are not compared.
	want := slices.DeleteFunc(catalog(t, pool, byMigrator), historyPartition.MatchString)
	if !slices.Contains(want, "relation docket_jobs r") || !slices.Contains(want, "applied 1 core") || len(want) < 50 {
		t.Fatalf("the migrator's catalog lacks what it should have (%d lines):\n%s", len(want), strings.Join(want, "\n"))
	}

	code, up, errOut := runDocket(t, "migrate", "sql", "--direction", "up", "--schema", bySQL)
	if code != 0 || !strings.Contains(up, "CREATE SCHEMA "+`"`+bySQL+`"`) || !strings.Contains(up, "INSERT INTO \""+bySQL+"\".docket_migrations") {
		t.Fatalf("migrate sql --direction up: %d %s\n%s", code, errOut, up)
	}
	psql(t, up)
	if got := catalog(t, pool, bySQL); !slices.Equal(got, want) {
		t.Errorf("catalog after the printed up SQL differs from the migrator's:\n%s", diffLines(got, want))
	}
	// The migrator agrees that the printed SQL applied everything.
	mSQL, _ := migrate.New(bySQL)
	if done, err := mSQL.Up(ctx, pool); err != nil || len(done) != 0 {
		t.Errorf("migrator after the printed up SQL applied %d: %v", len(done), err)
	}

	code, down, errOut := runDocket(t, "migrate", "sql", "--direction", "down", "--schema", bySQL)
	if code != 0 || strings.Index(down, "006_claim_id.down.sql") > strings.Index(down, "001_core.down.sql") {
		t.Fatalf("migrate sql --direction down: %d %s\n%s", code, errOut, down)
	}
	psql(t, down)
	if got := catalog(t, pool, bySQL); len(got) != 0 {
		t.Errorf("the printed down SQL left:\n%s", strings.Join(got, "\n"))
	}
}

func diffLines(got, want []string) string {
	var b strings.Builder
	for _, l := range got {
		if !slices.Contains(want, l) {
			b.WriteString("+ " + l + "\n")
		}
	}
	for _, l := range want {
		if !slices.Contains(got, l) {
			b.WriteString("- " + l + "\n")
		}
	}
	return b.String()
}

func TestMigrateSQLFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errOut := runDocket(t, "migrate", "sql", "--out", dir, "--schema", "abc")
	if code != 0 {
		t.Fatalf("migrate sql --out: %d %s", code, errOut)
	}
	m, _ := migrate.New("abc")
	for _, mig := range m.Migrations() {
		for _, d := range []string{"up", "down"} {
			name := filepath.Join(dir, fmt.Sprintf("%03d_%s.%s.sql", mig.Version, mig.Name, d))
			b, err := os.ReadFile(name)
			want, _ := m.SQL(mig.Version, d)
			if err != nil || string(b) != want || !strings.Contains(out, "wrote "+name) {
				t.Errorf("%s: %v; stdout %q", name, err, out)
			}
		}
	}
	// Both directions on stdout, each file after its name.
	_, out, _ = runDocket(t, "migrate", "sql", "--version", "2", "--schema", "abc")
	up, _ := m.SQL(2, "up")
	down, _ := m.SQL(2, "down")
	if want := "-- docket: 002_schedules.up.sql\n" + up + "\n-- docket: 002_schedules.down.sql\n" + down; out != want {
		t.Errorf("migrate sql --version 2:\n%s\nwant:\n%s", out, want)
	}
}
