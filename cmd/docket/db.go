package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/outbox"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// connect opens a small pool with Docket's connection defaults (see
// docket.ParsePoolConfig) and checks it reaches the server, with an error
// that names the server but never the password. An empty url means
// $DATABASE_URL. With pgbouncer the pool uses a query mode that PgBouncer
// in transaction mode serves (see pgbouncerMode).
func connect(ctx context.Context, url string, maxConns int32, pgbouncer bool) (*pgxpool.Pool, error) {
	if url == "" {
		url = os.Getenv("DATABASE_URL")
	}
	if url == "" {
		return nil, fmt.Errorf("%w: no database: pass --database-url or set DATABASE_URL", errUsage)
	}
	cfg, err := docket.ParsePoolConfig(url)
	if err != nil {
		return nil, fmt.Errorf("%w: invalid database URL: %v", errUsage, err) // pgconn hides the password
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	if pgbouncer {
		if err := pgbouncerMode(cfg.ConnConfig); err != nil {
			return nil, err
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("cannot connect to PostgreSQL at %s:%d as %s: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.User, err)
	}
	return pool, nil
}

// open checks the schema name and connects: the operations on the schema
// and a small pool, for a command that runs a few statements.
func (d *dbFlags) open(ctx context.Context) (*admin.Client, *pgxpool.Pool, error) {
	client, err := admin.New(admin.Config{Schema: d.schema})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	pool, err := connect(ctx, d.url, 2, d.pgbouncer)
	if err != nil {
		return nil, nil, err
	}
	return client, pool, nil
}

// openEvents is open for the relay's verbs: the events' client of the
// schema and a small pool.
func (d *dbFlags) openEvents(ctx context.Context) (*outbox.Client, *pgxpool.Pool, error) {
	client, err := outbox.New(outbox.Config{Schema: d.schema})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	pool, err := connect(ctx, d.url, 2, d.pgbouncer)
	if err != nil {
		return nil, nil, err
	}
	return client, pool, nil
}

// pgbouncerMode makes cfg safe behind PgBouncer in transaction mode: pgx's
// default query mode prepares named statements on whichever server
// connection it gets, and the next transaction may run on another
// ("prepared statement ... already exists" / "does not exist"). The
// default, cache_statement, becomes exec, the mode docs/compatibility.md
// prescribes; cache_describe, exec and simple_protocol, which prepare no
// named statement, are kept; describe_exec is refused: through a pooler
// its describe and its execute may run on different server connections.
func pgbouncerMode(cfg *pgx.ConnConfig) error {
	switch cfg.DefaultQueryExecMode {
	case pgx.QueryExecModeCacheStatement:
		cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	case pgx.QueryExecModeDescribeExec:
		return fmt.Errorf("%w: default_query_exec_mode=describe_exec is unsafe behind PgBouncer: use exec (docs/compatibility.md#pgbouncer)", errUsage)
	}
	return nil
}
