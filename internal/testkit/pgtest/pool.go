package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docketq/docket/internal/testkit/pgsrv"
)

// DefaultMaxConns caps the pools returned by [Pool], so that many test
// packages running at once stay within the server's max_connections.
const DefaultMaxConns = 8

// URL returns the connection string of the package's database. It fails the
// test if the package's TestMain does not call [Main].
func URL(t testing.TB) string {
	t.Helper()
	if dbURL == "" {
		t.Fatal("pgtest: no test database; call pgtest.Main(m) from TestMain")
	}
	return dbURL
}

// Server returns the PostgreSQL server that holds the package's database;
// its URL is an admin connection string. It fails the test if the package's
// TestMain does not call [Main]. Do not restart or stop it: use
// [pgsrv.StartCluster] for that.
func Server(t testing.TB) *pgsrv.Server {
	t.Helper()
	URL(t)
	return server
}

// Pool returns a new pool on the package's database with at most
// [DefaultMaxConns] connections, closed when the test ends. It fails the test
// if the database cannot be reached.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return PoolN(t, DefaultMaxConns)
}

// PoolN is [Pool] with at most maxConns connections. maxConns below 1 fails
// the test.
func PoolN(t testing.TB, maxConns int32) *pgxpool.Pool {
	t.Helper()
	if maxConns < 1 {
		t.Fatalf("pgtest: PoolN(%d): maxConns must be at least 1", maxConns)
	}
	cfg, err := pgxpool.ParseConfig(URL(t))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	cfg.MaxConns = maxConns
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("pgtest: ping package database: %v", err)
	}
	return pool
}
