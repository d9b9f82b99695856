package pgtest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docketq/docket/internal/testkit/pgsrv"
)

// modulePath is the import path prefix of Docket's own code.
const modulePath = "github.com/docketq/docket"

// testConnections is how many connections a test binary wants free on a
// shared server: go test runs two packages at once on two cores, and one
// package's parallel tests and worker processes peak near 100 connections.
// A smaller shared server is passed over for a private cluster.
const testConnections = 200

// Set by Main before the tests run, read-only afterwards.
var (
	server *pgsrv.Server
	dbURL  string
)

// The coordinator of a fuzzing run (go test -fuzz) passes its server and
// package database to the worker processes it starts, which run this test
// binary again with the same environment and -test.fuzzworker first.
const (
	fuzzServerEnv   = "DOCKET_PGTEST_FUZZ_SERVER"
	fuzzDatabaseEnv = "DOCKET_PGTEST_FUZZ_DATABASE"
)

// Main runs a package's tests against a database of its own. Call it from
// TestMain; it does not return (it calls os.Exit with the tests' exit code).
// It fails the binary with exit code 1, printing why, if PostgreSQL cannot
// be found, the database cannot be created or dropped, or goroutines started
// by Docket code outlive the tests.
func Main(m *testing.M) {
	os.Exit(run(m, callerPackage()))
}

func run(m *testing.M, pkg string) (code int) {
	if len(os.Args) > 1 && os.Args[1] == "-test.fuzzworker" && os.Getenv(fuzzDatabaseEnv) != "" {
		// A fuzzing worker works in its coordinator's database. Were it to
		// start a private cluster of its own, the coordinator, which kills a
		// worker that is slow to stop, would leave that cluster running
		// with the worker's pipes, and wait for them to close forever.
		server, dbURL = &pgsrv.Server{URL: os.Getenv(fuzzServerEnv)}, os.Getenv(fuzzDatabaseEnv)
		return m.Run()
	}
	ctx := context.Background()
	srv, err := pgsrv.DiscoverWithRoom(ctx, testConnections)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		return 1
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
			code = 1
		}
	}()

	name := "docket_test_" + pkg + "_" + pgsrv.RandomHex(4)
	if err := pgsrv.Exec(ctx, srv.URL, "CREATE DATABASE "+ident(name)+" TEMPLATE template0"); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: create database %s: %v\n", name, err)
		return 1
	}
	defer func() {
		if err := pgsrv.Exec(ctx, srv.URL, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: drop database %s: %v\n", name, err)
			code = 1
		}
	}()
	if dbURL, err = pgsrv.WithDatabase(srv.URL, name); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		return 1
	}
	server = srv
	os.Setenv(fuzzServerEnv, srv.URL)
	os.Setenv(fuzzDatabaseEnv, dbURL)

	if code := m.Run(); code != 0 {
		return code
	}
	if leaks := waitForLeaks(2 * time.Second); leaks != "" {
		fmt.Fprintf(os.Stderr, "pgtest: goroutines started by Docket code are still running after the tests:\n\n%s\n", leaks)
		return 1
	}
	return 0
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

// callerPackage names the package whose TestMain called Main, for the
// database name: github.com/docketq/docket/outbox_test.TestMain -> "outbox".
// It is lower case, [a-z0-9_] only, and short enough that the database name
// stays within PostgreSQL's 63-byte limit.
func callerPackage() string {
	name := "pkg"
	if pc, _, _, ok := runtime.Caller(2); ok {
		if fn := runtime.FuncForPC(pc); fn != nil {
			name = fn.Name()
		}
	}
	name = strings.TrimPrefix(name, modulePath+"/")
	if i := strings.LastIndex(name, "/"); i >= 0 {
		if j := strings.Index(name[i:], "."); j >= 0 {
			name = name[:i+j]
		}
	} else if j := strings.Index(name, "."); j >= 0 {
		name = name[:j]
	}
	name = strings.TrimSuffix(name, "_test")
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 32 {
		s = s[len(s)-32:] // the end of the path is the telling part
	}
	if s = strings.Trim(s, "_"); s == "" {
		return "pkg"
	}
	return s
}
