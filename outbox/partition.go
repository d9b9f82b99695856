package outbox

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// History partitions are named docket_jobs_done_YYYYMMDD and hold the jobs
// finished on that UTC day.
const partitionPrefix = "docket_jobs_done_"

func partitionName(day time.Time) string { return partitionPrefix + day.Format("20060102") }

// Partitions lists the history partitions, oldest first.
func (c *Client) Partitions(ctx context.Context, db Pgx) ([]string, error) {
	out, err := column[string](ctx, c, db, c.q.partitions, c.schema)
	sort.Strings(out)
	return out, err
}

// EnsurePartitions creates the history partitions for the UTC day of now and
// the next ahead days, skipping those that exist. Idempotent; concurrent
// callers are serialized by an advisory lock.
func (c *Client) EnsurePartitions(ctx context.Context, db Pgx, now time.Time, ahead int) error {
	have, err := c.Partitions(ctx, db)
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
		q := fmt.Sprintf(c.q.createPartition, name, d.Format(time.RFC3339), d.AddDate(0, 0, 1).Format(time.RFC3339))
		if err := c.ddl(ctx, db, q, name); err != nil {
			return fmt.Errorf("docket: create history partition %s: %w", name, err)
		}
	}
	return nil
}

// DropPartitions drops the history partitions whose whole day ended before
// cutoff and returns their names. Dropping a partition removes its rows
// without a mass DELETE and leaves no vacuum debt.
func (c *Client) DropPartitions(ctx context.Context, db Pgx, cutoff time.Time) ([]string, error) {
	have, err := c.Partitions(ctx, db)
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
		if err := c.ddl(ctx, db, fmt.Sprintf(c.q.dropPartition, name), ""); err != nil {
			return dropped, fmt.Errorf("docket: drop history partition %s: %w", name, err)
		}
		dropped = append(dropped, name)
	}
	return dropped, nil
}

// ddl runs partition DDL in its own transaction under the schema's
// maintenance lock, with a short lock_timeout: a DROP waiting for its
// exclusive lock queues every completion behind it, so it gives up quickly
// and the next maintenance round tries again. When unlessAttached names a
// partition that is already attached once the lock is held (another
// process created it meanwhile), stmt is not run.
func (c *Client) ddl(ctx context.Context, db Pgx, stmt, unlessAttached string) error {
	tx, err := beginPgx(ctx, db)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('docket_partitions:' || $1, 0))`, c.schema); err != nil {
		return err
	}
	if unlessAttached != "" {
		var attached bool
		if err := tx.QueryRow(ctx, c.q.partitionAttached, c.schema, unlessAttached).Scan(&attached); err != nil {
			return err
		}
		if attached {
			return nil
		}
	}
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '100ms'`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, stmt); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
