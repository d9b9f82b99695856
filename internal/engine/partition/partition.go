// Package partition keeps the history table's daily partitions: the days
// ahead that jobs finish into, created by `docket migrate up` and by every
// worker's maintenance; the days past retention, dropped; and the partition
// a completion found missing, made on the spot.
package partition

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// Ahead is how many days of history partitions beyond today `docket
// migrate up` and every worker keep, so that a completion never waits for
// partition DDL.
const Ahead = 3

// History partitions are named docket_jobs_done_YYYYMMDD and hold the jobs
// finished on that UTC day.
const partitionPrefix = "docket_jobs_done_"

func partitionName(day time.Time) string { return partitionPrefix + day.Format("20060102") }

const sqlPartitions = `SELECT c.relname FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
JOIN pg_class p ON p.oid = i.inhparent
JOIN pg_namespace n ON n.oid = p.relnamespace
WHERE n.nspname = $1 AND p.relname = 'docket_jobs_done'`

var (
	// sqlCreatePartition and sqlDropPartition call the SECURITY DEFINER
	// functions of migration 008, which run the DDL as the tables' owner:
	// the worker's role needs no DDL rights (docs/operations.md, "Least
	// privilege"). $1 is the partition's UTC day.
	sqlCreatePartition = pgsql.SQL(`SELECT {{schema}}.docket_create_history_partition($1::date)`)
	sqlDropPartition   = pgsql.SQL(`SELECT {{schema}}.docket_drop_history_partition($1::date)`)
)

// History is the partitioned history table of one schema.
type History struct {
	schema string
}

// Of returns the history table of schema, a name pgsql.Schema accepted.
func Of(schema string) History { return History{schema: schema} }

// List lists the history partitions, oldest first.
func (h History) List(ctx context.Context, db pgsql.DB) ([]string, error) {
	out, err := pgsql.Column[string](ctx, db, sqlPartitions, h.schema)
	sort.Strings(out)
	return out, pgsql.Wrap(err, h.schema)
}

// Ensure creates the history partitions for the UTC day of now and the next
// ahead days, skipping those that exist. Idempotent; concurrent callers are
// serialized by an advisory lock.
func (h History) Ensure(ctx context.Context, db pgsql.DB, now time.Time, ahead int) error {
	have, err := h.List(ctx, db)
	if err != nil {
		return err
	}
	exists := map[string]bool{}
	for _, p := range have {
		exists[p] = true
	}
	day := now.UTC().Truncate(24 * time.Hour)
	for i := 0; i <= ahead; i++ {
		d := day.AddDate(0, 0, i)
		name := partitionName(d)
		if exists[name] {
			continue
		}
		if err := h.ddl(ctx, db, sqlCreatePartition.For(h.schema), d); err != nil {
			return fmt.Errorf("docket: create history partition %s: %w", name, err)
		}
	}
	return nil
}

// Drop drops the history partitions whose whole day ended before cutoff and
// returns their names. Dropping a partition removes its rows without a mass
// DELETE and leaves no vacuum debt.
func (h History) Drop(ctx context.Context, db pgsql.DB, cutoff time.Time) ([]string, error) {
	have, err := h.List(ctx, db)
	if err != nil {
		return nil, err
	}
	var dropped []string
	for _, name := range have {
		day, err := time.Parse("20060102", strings.TrimPrefix(name, partitionPrefix))
		if err != nil {
			continue // not one of ours
		}
		if day.AddDate(0, 0, 1).After(cutoff) {
			continue
		}
		if err := h.ddl(ctx, db, sqlDropPartition.For(h.schema), day); err != nil {
			return dropped, fmt.Errorf("docket: drop history partition %s: %w", name, err)
		}
		dropped = append(dropped, name)
	}
	return dropped, nil
}

// ddl runs a partition function for day in its own transaction under the
// schema's maintenance lock, with a short lock_timeout: a DROP waiting for
// its exclusive lock queues every completion behind it, so it gives up
// quickly and the next maintenance round tries again. The functions find
// for themselves a partition another process created or dropped meanwhile.
func (h History) ddl(ctx context.Context, db pgsql.DB, stmt string, day time.Time) error {
	tx, err := begin(ctx, db)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('docket_partitions:' || $1, 0))`, h.schema); err != nil {
		return pgsql.Wrap(err, h.schema)
	}
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '100ms'`); err != nil {
		return err
	}
	// The day travels as a date string: a time.Time would be sent as a
	// timestamptz and cast to a date in the session's time zone.
	if _, err := tx.Exec(ctx, stmt, day.Format(time.DateOnly)); err != nil {
		return pgsql.Wrap(err, h.schema)
	}
	return tx.Commit(ctx)
}

// Repair reports whether err says that the history partition for a
// finished job was missing and, if so, creates the partitions around at
// (the day before, that day and the next two; zero at means now) through
// db, which must not be a transaction the error aborted, and returns the
// error of that creation.
func (h History) Repair(ctx context.Context, db pgsql.DB, err error, at time.Time) (missing bool, _ error) {
	if pgsql.SQLState(err) != pgsql.CodeNoPartition {
		return false, nil
	}
	if at.IsZero() {
		at = time.Now()
	}
	return true, h.Ensure(ctx, db, at.AddDate(0, 0, -1), 3)
}

// begin starts a transaction (a savepoint inside a pgx.Tx) on db.
func begin(ctx context.Context, db pgsql.DB) (pgx.Tx, error) {
	b, ok := db.(interface {
		Begin(context.Context) (pgx.Tx, error)
	})
	if !ok {
		return nil, fmt.Errorf("docket: %T cannot begin a transaction", db)
	}
	return b.Begin(ctx)
}
