package pgsql

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is a pgx database handle: pgx.Tx, *pgx.Conn and *pgxpool.Pool satisfy
// it. A pool or connection runs each statement as a transaction of its
// own; a pgx.Tx runs it in the caller's transaction. Every package that
// takes a pgx handle takes this one (the public packages name it DB).
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Beginner starts a transaction: *pgxpool.Pool, *pgx.Conn and pgx.Tx (a
// savepoint) satisfy it.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// TxDB is a pgx handle that can also begin a transaction: *pgxpool.Pool,
// *pgx.Conn and pgx.Tx (a savepoint) satisfy it.
type TxDB interface {
	DB
	Beginner
}

// SQLDB is a database/sql handle: *sql.Tx, *sql.DB and *sql.Conn satisfy
// it, and so does an Ent transaction built with the sql/execquery feature.
type SQLDB interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Copier is the optional pgx capability used for bulk inserts.
type Copier interface {
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

// Conn is the one interface code that writes through either family of
// handle is written against; OnPgx and OnSQL adapt a DB and an SQLDB to it.
type Conn interface {
	Exec(ctx context.Context, sql string, args ...any) (int64, error)
	// Query runs sql and calls each for every row with a scan function.
	Query(ctx context.Context, sql string, args []any, each func(scan func(dest ...any) error) error) error
	// Copier returns the COPY capability, or nil when the handle has none.
	Copier() Copier
}

// OnPgx adapts a pgx handle to Conn.
func OnPgx(db DB) Conn { return pgxConn{db} }

// OnSQL adapts a database/sql handle to Conn.
func OnSQL(db SQLDB) Conn { return sqlConn{db} }

type pgxConn struct{ db DB }

func (c pgxConn) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := c.db.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

func (c pgxConn) Query(ctx context.Context, sql string, args []any, each func(func(...any) error) error) error {
	rows, err := c.db.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return EachRow(rows, each)
}

func (c pgxConn) Copier() Copier {
	cp, _ := c.db.(Copier)
	return cp
}

type sqlConn struct{ db SQLDB }

func (c sqlConn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := c.db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (c sqlConn) Query(ctx context.Context, query string, args []any, each func(func(...any) error) error) error {
	rows, err := c.db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return EachRow(rows, each)
}

// Rows is what pgx.Rows and *sql.Rows have in common.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// EachRow calls each for every row of rows, with its scan function.
func EachRow(rows Rows, each func(func(...any) error) error) error {
	for rows.Next() {
		if err := each(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (sqlConn) Copier() Copier { return nil }
