package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what Docket reads and writes through: a pgx.Tx, *pgx.Conn or
// *pgxpool.Pool (anything with pgx's Exec, Query and QueryRow), or a
// database/sql *sql.Tx, *sql.DB, *sql.Conn — or anything else with
// ExecContext and QueryContext, such as an Ent transaction built with the
// sql/execquery feature. Pass the caller's transaction to enqueue atomically
// with the caller's own writes.
type DB any

// Pgx is the pgx side of DB: pgx.Tx, *pgx.Conn and *pgxpool.Pool satisfy it.
// Status and the operator operations take a Pgx.
type Pgx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// SQLDB is the database/sql side of DB.
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

// ErrUnsupportedDB is returned when a DB is neither pgx- nor database/sql-shaped.
var ErrUnsupportedDB = errors.New("docket: unsupported DB: want pgx.Tx, *pgx.Conn, *pgxpool.Pool, *sql.Tx, *sql.DB, or a value with ExecContext and QueryContext")

func toConn(db DB) (conn, error) {
	switch d := db.(type) {
	case nil:
		return nil, ErrUnsupportedDB
	case Pgx:
		return pgxConn{d}, nil
	case SQLDB:
		return sqlConn{d}, nil
	}
	return nil, fmt.Errorf("%w (got %T)", ErrUnsupportedDB, db)
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
