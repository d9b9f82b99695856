package worker

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// statementCounter counts the statements a pool sends, in batches or not,
// that match.
type statementCounter struct {
	match func(sql string) bool
	n     atomic.Int64
}

func (c *statementCounter) count(sql string) {
	if c.match(sql) {
		c.n.Add(1)
	}
}

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.count(d.SQL)
	return ctx
}
func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *statementCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (c *statementCounter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	c.count(d.SQL)
}
func (c *statementCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// isHeartbeat reports whether sql is a heartbeat: the statement that
// extends the leases of running jobs.
func isHeartbeat(sql string) bool {
	return strings.HasPrefix(sql, "UPDATE") && strings.Contains(sql, "SET lease_until")
}

// countedPool is a pool on the test database whose statements c counts.
func countedPool(t *testing.T, c *statementCounter) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 10
	cfg.ConnConfig.Tracer = c
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
