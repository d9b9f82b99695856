package dockettest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/testkit/pgsrv"
	"github.com/docketq/docket/migrate"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TB is the part of testing.TB that [NewDB] uses; *testing.T and
// *testing.B satisfy it.
type TB interface {
	T
	Errorf(format string, args ...any)
	Cleanup(func())
}

// MaxConns caps the pool that [NewDB] opens, so that many test packages
// running at once stay within the server's max_connections.
const MaxConns = 8

// DB is a test's own Docket schema, migrated and dropped when the test ends.
type DB struct {
	// Schema is the schema's name ("docket_test_" and 16 hex digits).
	Schema string
	// Pool is a pool on the test database whose search_path is Schema.
	// Closed when the test ends.
	Pool *pgxpool.Pool
	// Client is a client of Schema through Pool, not started. Without
	// [WithRegistry] it enqueues any kind with the built-in defaults, as the
	// client of a service that only enqueues; with it, as the service's own
	// client with that registry.
	Client *docket.Client
	// URL is the connection string Pool was opened with (without the
	// search_path), e.g. for a program under test that takes a URL.
	URL string

	registry *handlers.Registry // WithRegistry's; nil: none
}

// server is the PostgreSQL found for this test binary: by Main, or by the
// first NewDB when Main is not used.
var (
	serverOnce sync.Once
	server     *pgsrv.Server
	serverErr  error
	mainOwns   bool // Main stops a private cluster when the tests end
)

func discover() (*pgsrv.Server, error) {
	serverOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		server, serverErr = pgsrv.Discover(ctx)
		if serverErr == nil && server.Private != nil && !mainOwns {
			// Nobody would stop it: refuse rather than leak a cluster.
			_ = server.Stop()
			server, serverErr = nil, fmt.Errorf("no PostgreSQL server is running, and starting a private one "+
				"needs dockettest.Main(m) in TestMain to stop it afterwards (or set DATABASE_URL)")
		}
	})
	return server, serverErr
}

// Main runs a package's tests with PostgreSQL found as [NewDB] describes,
// and stops a private cluster that it started once the tests end. Call it
// from TestMain; it does not return:
//
//	func TestMain(m *testing.M) { dockettest.Main(m) }
//
// Main is needed only when the tests may start a private cluster (no
// DATABASE_URL and no server on 127.0.0.1:5432); without it such tests fail
// saying so. If no PostgreSQL can be found at all, Main prints why and the
// test binary fails.
func Main(m *testing.M) {
	mainOwns = true
	if _, err := discover(); err != nil {
		fmt.Fprintf(os.Stderr, "dockettest: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := server.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "dockettest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// DBOption configures [NewDB]; [WithRegistry] makes one. A nil DBOption is
// ignored.
type DBOption func(*dbOptions)

type dbOptions struct {
	registry *handlers.Registry
}

// WithRegistry makes [DB.Client] enqueue as the service's own client does
// (docket.NewClient with reg as its Registry): a job gets its kind's
// registered queue, priority and max attempts (handlers.KindOpts) when
// neither the enqueue options nor the args' own Opts set them, and a kind
// reg has no handler for is refused with docket.ErrUnknownKind, writing
// nothing. Kinds registered in reg after NewDB count too. A nil reg is the
// same as leaving the option out.
func WithRegistry(reg *handlers.Registry) DBOption {
	return func(o *dbOptions) { o.registry = reg }
}

// NewDB gives the test a fresh schema in which Docket's migrations have run,
// a pool pointed at it and a client of it. PostgreSQL is found as
// Docket's own tests find it: the server at $DATABASE_URL, else the one on
// 127.0.0.1:5432 (user postgres), else a private cluster started from the
// PostgreSQL binaries installed on the machine (which needs [Main]).
// $DOCKET_PG=server or $DOCKET_PG=private forces one of the last two.
//
// The schema is dropped and the pool closed when the test ends. NewDB fails
// the test (t.Fatal, with the reason) when no PostgreSQL can be found or the
// schema cannot be created: it never skips.
//
// Options: [WithRegistry] gives the client the kinds' enqueue defaults.
func NewDB(t TB, opts ...DBOption) *DB {
	t.Helper()
	var o dbOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	srv, err := discover()
	if err != nil {
		t.Fatalf("dockettest: %v", err)
	}
	ctx := context.Background()
	schema := "docket_test_" + pgsrv.RandomHex(8)
	if err := pgsrv.Exec(ctx, srv.URL, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("dockettest: create schema: %v", err)
	}
	t.Cleanup(func() {
		if err := pgsrv.Exec(ctx, srv.URL, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("dockettest: drop schema %s: %v", schema, err)
		}
	})

	cfg, err := pgxpool.ParseConfig(srv.URL)
	if err != nil {
		t.Fatalf("dockettest: %v", err)
	}
	cfg.MaxConns = MaxConns
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("dockettest: open pool: %v", err)
	}
	t.Cleanup(pool.Close) // registered after the drop: runs before it

	m, err := migrate.New(schema)
	if err != nil {
		t.Fatalf("dockettest: %v", err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatalf("dockettest: migrate schema %s: %v", schema, err)
	}
	client, err := docket.NewClient(pool, docket.Config{Schema: schema, Registry: o.registry})
	if err != nil {
		t.Fatalf("dockettest: %v", err)
	}
	return &DB{Schema: schema, Pool: pool, Client: client, URL: srv.URL, registry: o.registry}
}
