package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func TestMain(m *testing.M) { Main(m) }

func schemaExists(t *testing.T, name string) bool {
	t.Helper()
	var ok bool
	err := Pool(t).QueryRow(t.Context(),
		"SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)", name).Scan(&ok)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestPoolUsesPackageDatabase(t *testing.T) {
	t.Parallel()
	cfg, err := pgconn.ParseConfig(URL(t))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cfg.Database, "docket_test_internal_testkit_pgtest_") {
		t.Errorf("database %q, want docket_test_internal_testkit_pgtest_<random>", cfg.Database)
	}
	pool := Pool(t)
	if got := pool.Config().MaxConns; got != DefaultMaxConns {
		t.Errorf("MaxConns = %d, want %d", got, DefaultMaxConns)
	}
	var db string
	if err := pool.QueryRow(t.Context(), "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	if db != cfg.Database {
		t.Errorf("current_database() = %q, want %q", db, cfg.Database)
	}
	if got := PoolN(t, 2).Config().MaxConns; got != 2 {
		t.Errorf("PoolN(2).MaxConns = %d", got)
	}
}

func TestSchema(t *testing.T) {
	t.Parallel()
	var a, b string
	t.Run("create", func(t *testing.T) {
		a, b = Schema(t), Schema(t)
		if a == b {
			t.Fatalf("two Schema calls gave %q twice", a)
		}
		for _, s := range []string{a, b} {
			if !schemaExists(t, s) {
				t.Errorf("schema %q does not exist", s)
			}
		}
		// The schema is usable through search_path.
		cfg, err := pgx.ParseConfig(URL(t))
		if err != nil {
			t.Fatal(err)
		}
		cfg.RuntimeParams["search_path"] = a
		conn, err := pgx.ConnectConfig(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(t.Context(), "CREATE TABLE jobs (id int)"); err != nil {
			t.Fatal(err)
		}
	})
	for _, s := range []string{a, b} {
		if schemaExists(t, s) {
			t.Errorf("schema %q outlived its test", s)
		}
	}
}

func TestServerIsAdmin(t *testing.T) {
	t.Parallel()
	conn, err := pgx.Connect(t.Context(), Server(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var canCreate bool
	if err := conn.QueryRow(t.Context(),
		"SELECT rolsuper OR rolcreatedb FROM pg_roles WHERE rolname = current_user").Scan(&canCreate); err != nil {
		t.Fatal(err)
	}
	if !canCreate {
		t.Error("Server URL's user may not create databases")
	}
}

// Not parallel: it looks at all goroutines.
func TestLeakCheckFindsDocketGoroutines(t *testing.T) {
	stop := make(chan struct{})
	go func() { <-stop }()
	found := func() bool {
		for _, g := range docketGoroutines() {
			if strings.Contains(g, "TestLeakCheckFindsDocketGoroutines.func") {
				return true
			}
		}
		return false
	}
	if !found() {
		t.Fatal("a goroutine started by Docket code was not reported")
	}
	close(stop)
	deadline := time.Now().Add(2 * time.Second)
	for found() {
		if time.Now().After(deadline) {
			t.Fatal("an ended goroutine is still reported")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCallerPackage(t *testing.T) {
	t.Parallel()
	// Called from here, two frames up is testing's tRunner.
	if got := callerPackage(); got != "testing" {
		t.Errorf("callerPackage() = %q, want %q", got, "testing")
	}
}

// recordEnv names the file to which FuzzWorkerDatabase, fuzzed by a child
// process of TestFuzzWorkersShareTheDatabase, appends each process's id,
// package database and server.
const recordEnv = "PGTEST_RECORD_DATABASE"

func FuzzWorkerDatabase(f *testing.F) {
	record := os.Getenv(recordEnv)
	if record == "" {
		f.Skip("fuzzed only by TestFuzzWorkersShareTheDatabase")
	}
	file, err := os.OpenFile(record, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		f.Fatal(err)
	}
	_, err = fmt.Fprintf(file, "%d %s %s\n", os.Getpid(), URL(f), Server(f).URL)
	if err = errors.Join(err, file.Close()); err != nil {
		f.Fatal(err)
	}
	f.Add(0)
	f.Fuzz(func(*testing.T, int) {})
}

// The worker processes of a fuzzing run (this binary again, with
// -test.fuzzworker) work in their coordinator's database on its server:
// they create no database and start no cluster of their own, which a
// coordinator that kills a worker slow to stop would leave running with
// the worker's pipes open, waiting for them forever.
func TestFuzzWorkersShareTheDatabase(t *testing.T) {
	t.Parallel()
	record := filepath.Join(t.TempDir(), "databases")
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.fuzz=^FuzzWorkerDatabase$", "-test.fuzztime=1x",
		"-test.parallel=1", "-test.fuzzcachedir="+t.TempDir())
	// The child coordinator makes its database on this test's server, or
	// with DOCKET_PG=private (as CI runs this package once) in a cluster it
	// starts, as every package does where no shared server answers.
	cmd.Env = append(os.Environ(), recordEnv+"="+record, "DATABASE_URL="+Server(t).URL)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fuzzing run: %v\n%s", err, out)
	}
	data, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	pids, databases := map[string]bool{}, map[string]bool{}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for _, l := range lines {
		pid, database, _ := strings.Cut(l, " ")
		pids[pid], databases[database] = true, true
	}
	if len(pids) < 2 {
		t.Fatalf("want the coordinator's and a worker's record, got %q", lines)
	}
	if len(databases) != 1 {
		t.Errorf("the worker processes do not use the coordinator's database and server:\n%s", data)
	}
}
