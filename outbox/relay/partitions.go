package relay

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Event partitions are named docket_events_YYYYMMDD and hold the events
// created on that UTC day; docket_events_default catches the rest.
const partitionPrefix = "docket_events_"

// maintainPartitions creates the partitions of today and the next two days,
// and drops those past retention whose events were all published. Rows of
// the default partition (written while no relay had created their day's
// partition) are deleted once published and past retention. Every relay
// runs it; an advisory lock keeps them from doing it at once.
func (r *Relay) maintainPartitions(ctx context.Context, now time.Time) error {
	have := map[string]bool{}
	rows, err := r.db.Query(ctx, r.sql.partitions, r.cfg.Schema)
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, n := range names {
		have[n] = true
	}
	day := now.UTC().Truncate(24 * time.Hour)
	for i := range 3 {
		d := day.AddDate(0, 0, i)
		name := partitionPrefix + d.Format("20060102")
		if have[name] {
			continue
		}
		stmt := fmt.Sprintf(sqlCreatePartition, r.cfg.Schema, name, d.Format(time.RFC3339), d.AddDate(0, 0, 1).Format(time.RFC3339))
		if err := r.ddl(ctx, stmt); err != nil {
			return fmt.Errorf("create event partition %s: %w", name, err)
		}
	}
	if r.cfg.Retention < 0 {
		return nil
	}
	cutoff := now.Add(-r.cfg.Retention)
	for _, name := range names {
		d, err := time.Parse("20060102", strings.TrimPrefix(name, partitionPrefix))
		if err != nil || d.AddDate(0, 0, 1).After(cutoff) {
			continue // the default partition, or a day inside retention
		}
		// The check and the drop share the transaction, under the
		// partition's own lock, so no row can be left unpublished.
		stmt := fmt.Sprintf(sqlDropPartition, r.cfg.Schema, name)
		if err := r.ddl(ctx, stmt); err != nil {
			return fmt.Errorf("drop event partition %s: %w", name, err)
		}
	}
	_, err = r.db.Exec(ctx, r.sql.defaultPrune, cutoff)
	return err
}

// ddl runs stmt in a transaction of its own under the schema's event
// partition lock, with a short lock_timeout: DDL waiting for its lock would
// queue every publish behind it, so it gives up and the next maintenance
// tries again.
func (r *Relay) ddl(ctx context.Context, stmt string) error {
	return pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('docket_event_partitions:' || $1, 0))`, r.cfg.Schema); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '100ms'`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, stmt)
		return err
	})
}

const (
	sqlPartitions = `SELECT c.relname FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
JOIN pg_class p ON p.oid = i.inhparent
JOIN pg_namespace n ON n.oid = p.relnamespace
WHERE n.nspname = $1 AND p.relname = 'docket_events'
ORDER BY 1`

	// sqlCreatePartition creates a day's partition (%[1]s schema, %[2]s
	// partition, %[3]s..%[4]s the day) and moves into it the rows the
	// default partition holds for that day, which PostgreSQL would
	// otherwise refuse to attach it over. Rows keep their ids, so moving
	// changes nothing the relay sees. The LOCK waits out publishes in
	// flight: ATTACH alone lets an insert routed to the default partition
	// before it fail a check after it, aborting the producer's transaction.
	sqlCreatePartition = `LOCK TABLE "%[1]s".docket_events IN SHARE ROW EXCLUSIVE MODE;
CREATE TABLE "%[1]s".%[2]s (LIKE "%[1]s".docket_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
WITH moved AS (
	DELETE FROM "%[1]s".docket_events_default WHERE created_at >= '%[3]s' AND created_at < '%[4]s'
	RETURNING *
)
INSERT INTO "%[1]s".%[2]s SELECT * FROM moved;
ALTER TABLE "%[1]s".docket_events ATTACH PARTITION "%[1]s".%[2]s FOR VALUES FROM ('%[3]s') TO ('%[4]s')`

	// sqlDropPartition drops a day's partition only if none of its events
	// is pending or dead; the LOCK keeps any from being written meanwhile.
	sqlDropPartition = `DO $$
BEGIN
	LOCK TABLE "%[1]s".%[2]s IN SHARE MODE;
	IF NOT EXISTS (SELECT 1 FROM "%[1]s".%[2]s WHERE published_at IS NULL) THEN
		DROP TABLE "%[1]s".%[2]s;
	END IF;
END $$`

	sqlDefaultPrune = `DELETE FROM {{schema}}.docket_events_default WHERE published_at < $1`
)
