package outbox

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Pgx is a pgx database handle: pgx.Tx, *pgx.Conn and *pgxpool.Pool satisfy
// it. Enqueue, EnqueueMany and the operator operations take one; pass the
// caller's pgx.Tx to write atomically with the caller's own writes.
type Pgx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// SQLDB is a database/sql handle: *sql.Tx, *sql.DB and *sql.Conn satisfy
// it, and so does an Ent transaction built with the sql/execquery feature
// (use package ent for that). EnqueueSQL and EnqueueManySQL take one; pass
// the caller's *sql.Tx to write atomically with the caller's own writes.
type SQLDB interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// copier is the optional pgx capability used for bulk enqueue.
type copier interface {
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

// conn is the one interface the enqueue code is written against; pgxConn and
// sqlConn adapt the two families of DB to it.
type conn interface {
	exec(ctx context.Context, sql string, args ...any) (int64, error)
	// query runs sql and calls each for every row with a scan function.
	query(ctx context.Context, sql string, args []any, each func(scan func(dest ...any) error) error) error
	// copier returns the COPY capability, or nil when the DB has none.
	copier() copier
}

type pgxConn struct{ db Pgx }

func (c pgxConn) exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := c.db.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

func (c pgxConn) query(ctx context.Context, sql string, args []any, each func(func(...any) error) error) error {
	rows, err := c.db.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return eachRow(rows, each)
}

func (c pgxConn) copier() copier {
	cp, _ := c.db.(copier)
	return cp
}

type sqlConn struct{ db SQLDB }

func (c sqlConn) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := c.db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (c sqlConn) query(ctx context.Context, query string, args []any, each func(func(...any) error) error) error {
	rows, err := c.db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return eachRow(rows, each)
}

// rowIter is what pgx.Rows and *sql.Rows have in common.
type rowIter interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

func eachRow(rows rowIter, each func(func(...any) error) error) error {
	for rows.Next() {
		if err := each(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (sqlConn) copier() copier { return nil }
