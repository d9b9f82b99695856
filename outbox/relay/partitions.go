package relay

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
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
	rows, err := r.db.Query(ctx, sqlPartitions.For(r.cfg.Schema), r.cfg.Schema)
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
		if have[partitionPrefix+d.Format("20060102")] {
			continue
		}
		if err := r.ddl(ctx, sqlCreatePartition.For(r.cfg.Schema), d); err != nil {
			return fmt.Errorf("create event partition for %s: %w", d.Format(time.DateOnly), err)
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
		// The function drops it only when no event in it is pending or dead.
		if err := r.ddl(ctx, sqlDropPartition.For(r.cfg.Schema), d); err != nil {
			return fmt.Errorf("drop event partition %s: %w", name, err)
		}
	}
	_, err = r.db.Exec(ctx, sqlDefaultPrune.For(r.cfg.Schema), cutoff)
	return err
}

// ddl runs one of the partition functions of migration 010 for day in a
// transaction of its own, under the schema's event partition lock, with a
// short lock_timeout: DDL waiting for its lock would queue every publish
// behind it, so it gives up and the next maintenance tries again. The
// functions are SECURITY DEFINER: a relay needs no rights on the tables
// beyond DML.
func (r *Relay) ddl(ctx context.Context, stmt string, day time.Time) error {
	return pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('docket_event_partitions:' || $1, 0))`, r.cfg.Schema); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '100ms'`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, stmt, day.Format(time.DateOnly))
		return err
	})
}

var (
	sqlPartitions = pgsql.SQL(`SELECT c.relname FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
JOIN pg_class p ON p.oid = i.inhparent
JOIN pg_namespace n ON n.oid = p.relnamespace
WHERE n.nspname = $1 AND p.relname = 'docket_events'
ORDER BY 1`)

	sqlCreatePartition = pgsql.SQL(`SELECT {{schema}}.docket_create_event_partition($1::date)`)
	sqlDropPartition   = pgsql.SQL(`SELECT {{schema}}.docket_drop_event_partition($1::date)`)

	sqlDefaultPrune = pgsql.SQL(`DELETE FROM {{schema}}.docket_events_default WHERE published_at < $1`)
)
