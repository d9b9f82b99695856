package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Pgx is a pgx database handle: pgx.Tx, *pgx.Conn and *pgxpool.Pool satisfy
// it. Enqueue, EnqueueMany and the operator and worker operations take one;
// pass the caller's pgx.Tx to write atomically with the caller's own writes.
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

// sqlState returns the SQLSTATE of a Postgres error from pgx or from any
// database/sql driver whose errors report it, or "".
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		return coded.SQLState()
	}
	return ""
}

// SQLSTATE codes Docket reacts to.
const (
	codeUndefinedTable = "42P01"
	codeInvalidSchema  = "3F000" // the schema does not exist
	codeNoPartition    = "23514" // check_violation: also "no partition of relation found for row"
	codeUniqueConflict = "23505"
	codeLockTimeout    = "55P03"
)

// isTx reports whether db is a caller's transaction.
func isTx(db Pgx) bool {
	_, ok := db.(pgx.Tx)
	return ok
}

// batcher is the part of a pool or connection that sends several statements
// in one round trip and one implicit transaction.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// run runs sql with args on db and hands its rows to read, which need not
// close them. On a pool or connection the settings statement runs first in
// the same batch: one round trip and one implicit transaction, so the
// settings last for this statement only. In a caller's transaction the
// caller's settings hold, but for sequential scans, which are off for this
// statement only (sqlTxIndexSettings). An error of the implicit
// transaction's commit is returned too.
func (c *Client) run(ctx context.Context, db Pgx, settings, sql string, args []any, read func(pgx.Rows) error) error {
	b, ok := db.(batcher)
	if !ok {
		rows, err := db.Query(ctx, sql, args...)
		if err != nil {
			return c.wrapErr(err)
		}
		return c.wrapErr(readAll(rows, read))
	}
	tx := isTx(db)
	batch := &pgx.Batch{}
	if tx {
		settings = sqlTxIndexSettings
	}
	batch.Queue(settings)
	batch.Queue(sql, args...)
	if tx {
		batch.Queue(sqlTxRestore)
	}
	res := b.SendBatch(ctx, batch)
	_, err := res.Exec()
	if err == nil {
		var rows pgx.Rows
		if rows, err = res.Query(); err == nil {
			err = readAll(rows, read)
		}
	}
	if err == nil && tx {
		_, err = res.Exec()
	}
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	return c.wrapErr(err)
}

// readAll hands rows to read, closes them and returns the first error.
func readAll(rows pgx.Rows, read func(pgx.Rows) error) error {
	err := read(rows)
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	return err
}

// scanOne scans the one row a statement returns into dest.
func scanOne(rows pgx.Rows, dest ...any) error {
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	return rows.Scan(dest...)
}

// beginPgx starts a transaction (a savepoint inside a pgx.Tx) on db.
func beginPgx(ctx context.Context, db Pgx) (pgx.Tx, error) {
	b, ok := db.(TxBeginner)
	if !ok {
		return nil, fmt.Errorf("docket: %T cannot begin a transaction", db)
	}
	return b.Begin(ctx)
}
