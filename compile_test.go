package docket_test

import (
	"strings"
	"testing"

	"github.com/docketq/docket/internal/testkit/freshmod"
)

// Enqueue takes database handles by type: a value that is not one does not
// compile, on the pgx and the database/sql paths, while each real handle
// does.
func TestWrongHandleDoesNotCompile(t *testing.T) {
	t.Parallel()
	const prelude = `package main

import (
	"context"
	"database/sql"

	"github.com/docketq/docket"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

type job struct{}

func (job) Kind() string { return "job" }

var (
	ctx    = context.Background()
	pool   *pgxpool.Pool
	c, _   = docket.NewClient(pool, docket.Config{})
	conn   *pgx.Conn
	tx     pgx.Tx
	sqlDB  *sql.DB
	sqlTx  *sql.Tx
	sqlCon *sql.Conn
	_, _, _, _, _, _ = pool, conn, tx, sqlDB, sqlTx, sqlCon
)

func main() {
`
	build := func(body string) (string, error) {
		return freshmod.Build(t, map[string]string{"main.go": prelude + body + "}\n"})
	}
	good := `	c.Enqueue(ctx, pool, job{}, docket.Opts{})
	c.Enqueue(ctx, conn, job{}, docket.Opts{})
	c.Enqueue(ctx, tx, job{}, docket.Opts{})
	c.EnqueueMany(ctx, tx, nil)
	c.EnqueueSQL(ctx, sqlDB, job{}, docket.Opts{})
	c.EnqueueSQL(ctx, sqlTx, job{}, docket.Opts{})
	c.EnqueueSQL(ctx, sqlCon, job{}, docket.Opts{})
	c.EnqueueManySQL(ctx, sqlTx, nil)
`
	if out, err := build(good); err != nil {
		t.Fatalf("every database handle should compile: %v\n%s", err, out)
	}
	for _, bad := range []struct{ body, want string }{
		{`	c.Enqueue(ctx, 42, job{}, docket.Opts{})`, "as docket.DB value"},
		{`	c.Enqueue(ctx, sqlTx, job{}, docket.Opts{})`, "as docket.DB value"},
		{`	c.EnqueueMany(ctx, c, nil)`, "as docket.DB value"},
		{`	c.EnqueueSQL(ctx, tx, job{}, docket.Opts{})`, "as docket.SQLDB value"},
		{`	c.EnqueueManySQL(ctx, "postgres://", nil)`, "as docket.SQLDB value"},
	} {
		out, err := build(bad.body)
		if err == nil || !strings.Contains(out, bad.want) {
			t.Errorf("%s\ncompiled or failed otherwise (%v), want %q:\n%s", bad.body, err, bad.want, out)
		}
	}
}
