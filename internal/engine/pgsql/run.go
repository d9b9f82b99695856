package pgsql

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// IndexSettings runs before each statement a worker runs on its jobs as
// a transaction of its own (outcomes, heartbeats, reaping, promotion), in
// the same implicit transaction: one batch, one round trip, and the
// setting ends with the statement. It turns sequential scans off. A worker
// that starts on a near-empty jobs table plans its statements there, where
// a sequential scan is cheapest, and the plan cache may keep those plans
// for as long as the connection lives (until an ANALYZE invalidates them):
// when a burst then fills the table, every statement would read all of it.
// With sequential scans off the plans use the indexes they were written
// for at any size (TestPlansCachedWhileSmall in internal/queue).
const IndexSettings = `SELECT set_config('enable_seqscan', 'off', true)`

// In a caller's transaction (a RegisterTx handler's completion, say) the
// settings of a statement would last until the caller commits, and a
// claim's would make the caller's own commit asynchronous. There only
// sequential scans are turned off, and turned back to what they were right
// after the statement, in the same batch: txIndexSettings saves the
// caller's value in a setting of Docket's own and txRestore puts it back.
// Without it a plan made there would also serve the same statement outside
// transactions on that connection, since the plan cache ignores settings.
const (
	txIndexSettings = `SELECT set_config('docket.enable_seqscan', current_setting('enable_seqscan'), true),
	set_config('enable_seqscan', 'off', true)`
	txRestore = `SELECT set_config('enable_seqscan', current_setting('docket.enable_seqscan'), true)`
)

// Querier is what Run needs of a handle: pgx.Tx, *pgx.Conn and
// *pgxpool.Pool satisfy it.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// batcher is the part of a pool or connection that sends several statements
// in one round trip and one implicit transaction.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// IsTx reports whether db is a caller's transaction.
func IsTx(db any) bool {
	_, ok := db.(pgx.Tx)
	return ok
}

// Run runs sql with args on db and hands its rows to read, which need not
// close them. On a pool or connection the settings statement runs first in
// the same batch: one round trip and one implicit transaction, so the
// settings last for this statement only. In a caller's transaction the
// caller's settings hold, but for sequential scans, which are off for this
// statement only. An error of the implicit transaction's commit is
// returned too.
func Run(ctx context.Context, db Querier, settings, sql string, args []any, read func(pgx.Rows) error) error {
	b, ok := db.(batcher)
	if !ok {
		rows, err := db.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		return readAll(rows, read)
	}
	tx := IsTx(db)
	batch := &pgx.Batch{}
	if tx {
		settings = txIndexSettings
	}
	batch.Queue(settings)
	batch.Queue(sql, args...)
	if tx {
		batch.Queue(txRestore)
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
	return err
}

// Column runs a statement that returns one column with IndexSettings (see
// Run) and collects the column.
func Column[T any](ctx context.Context, db Querier, sql string, args ...any) ([]T, error) {
	var out []T
	err := Run(ctx, db, IndexSettings, sql, args, func(rows pgx.Rows) error {
		var err error
		out, err = pgx.CollectRows(rows, pgx.RowTo[T])
		return err
	})
	return out, err
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

// ScanOne scans the one row a statement returns into dest.
func ScanOne(rows pgx.Rows, dest ...any) error {
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	return rows.Scan(dest...)
}
