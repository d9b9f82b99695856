package migrate

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/docketq/docket/internal/engine/partition"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migration is one numbered schema change with its up and down SQL, rendered
// for the migrator's schema.
type Migration struct {
	Version int
	Name    string
	Up      string
	Down    string
}

// MigrationStatus is a migration and whether it is applied.
type MigrationStatus struct {
	Migration
	AppliedAt time.Time // zero when not applied
}

// ErrUnknownVersion is returned for a migration version that does not exist.
var ErrUnknownVersion = errors.New("docket: unknown migration version")

// Migrator applies Docket's embedded migrations to one schema. Each run holds
// a transaction-scoped advisory lock for the schema, so any number of
// processes may call Up at start: one applies, the others wait and find
// nothing left to do.
type Migrator struct {
	schema     string
	migrations []Migration
}

var migrationName = regexp.MustCompile(`^(\d{3})_([a-z0-9_]+)\.(up|down)\.sql$`)

// New returns a Migrator for the schema ("" means "public"). It fails on a
// schema name that is not a plain lower-case identifier of at most 56
// bytes (ErrInvalidSchema).
func New(schema string) (*Migrator, error) {
	schema, err := pgsql.Schema(schema)
	if err != nil {
		return nil, err
	}
	byVersion := map[int]*Migration{}
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("docket: bad migration file name %q", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		body, err := migrationFS.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		mig := byVersion[v]
		if mig == nil {
			mig = &Migration{Version: v, Name: m[2]}
			byVersion[v] = mig
		}
		if m[3] == "up" {
			mig.Up = pgsql.Render(string(body), schema)
		} else {
			mig.Down = pgsql.Render(string(body), schema)
		}
	}
	out := &Migrator{schema: schema}
	for _, m := range byVersion {
		if m.Up == "" || m.Down == "" {
			return nil, fmt.Errorf("docket: migration %03d_%s lacks its up or down file", m.Version, m.Name)
		}
		out.migrations = append(out.migrations, *m)
	}
	sort.Slice(out.migrations, func(i, j int) bool { return out.migrations[i].Version < out.migrations[j].Version })
	return out, nil
}

// Migrations returns every known migration in order.
func (m *Migrator) Migrations() []Migration { return append([]Migration(nil), m.migrations...) }

// Latest is the highest known migration version.
func (m *Migrator) Latest() int { return m.migrations[len(m.migrations)-1].Version }

// Beginner starts transactions: *pgxpool.Pool and *pgx.Conn satisfy it
// (Begin as pgx has it).
type Beginner = pgsql.Beginner

// ErrInvalidSchema is returned by New for a schema name that is not a plain
// lower-case identifier of at most 56 bytes.
var ErrInvalidSchema = pgsql.ErrInvalidSchema

// The bookkeeping statements: the schema and the table of applied versions,
// and the row each migration adds or removes. The migrator runs them, and
// SQL writes them into the files it prints, so both record the same state.
//
// The schema and the table are created only when missing, not with IF NOT
// EXISTS, which checks the right to create first: an owner role given just
// its schema (no CREATE on the database), or an application role reading
// the list, has no such right and needs none.
const (
	createBookkeeping = `DO $$
BEGIN
	IF to_regnamespace('{{schema}}') IS NULL THEN
		CREATE SCHEMA {{schema}};
	END IF;
	IF to_regclass('{{schema}}.docket_migrations') IS NULL THEN
		CREATE TABLE {{schema}}.docket_migrations (
			version    integer     PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		);
	END IF;
END
$$`
	recordUp   = `INSERT INTO {{schema}}.docket_migrations (version, name) VALUES ($1, $2)`
	recordDown = `DELETE FROM {{schema}}.docket_migrations WHERE version = $1`
	// dropBookkeeping ends the first migration's down file, so that applying
	// every down file leaves nothing of Docket in the schema.
	dropBookkeeping = `DROP TABLE IF EXISTS {{schema}}.docket_migrations`
)

func (m *Migrator) lockAndLoad(ctx context.Context, tx pgx.Tx) (map[int]time.Time, error) {
	q := pgsql.Render(createBookkeeping, m.schema)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('docket_migrate:' || $1, 0))`, m.schema); err != nil {
		return nil, fmt.Errorf("docket: migration lock: %w", err)
	}
	if _, err := tx.Exec(ctx, q); err != nil {
		return nil, fmt.Errorf("docket: create migrations table: %w", err)
	}
	rows, err := tx.Query(ctx, pgsql.Render(`SELECT version, applied_at FROM {{schema}}.docket_migrations`, m.schema))
	if err != nil {
		return nil, err
	}
	applied := map[int]time.Time{}
	var v int
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&v, &at}, func() error { applied[v] = at; return nil })
	return applied, err
}

// Up applies every migration not yet applied, in one transaction, and
// returns those it applied.
func (m *Migrator) Up(ctx context.Context, db Beginner) ([]Migration, error) {
	return m.UpTo(ctx, db, m.Latest())
}

// UpTo applies the migrations not yet applied up to and including version,
// then creates the history partitions of today and the next three days,
// as a worker's Start would (jobs finish into them from the first
// completion). UpTo of an older version leaves the partitions alone.
func (m *Migrator) UpTo(ctx context.Context, db Beginner, version int) ([]Migration, error) {
	if err := m.checkVersion(version); err != nil {
		return nil, err
	}
	done, err := m.apply(ctx, db, "up", func(applied map[int]time.Time) (todo []Migration) {
		for _, mig := range m.migrations {
			if _, ok := applied[mig.Version]; !ok && mig.Version <= version {
				todo = append(todo, mig)
			}
		}
		return todo
	})
	if err != nil || version < m.Latest() {
		return done, err
	}
	return done, m.partitions(ctx, db)
}

// partitions creates the history partitions of today and the days ahead.
func (m *Migrator) partitions(ctx context.Context, db Beginner) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		return partition.Of(m.schema).Ensure(ctx, tx, time.Now(), partition.Ahead)
	})
}

// Down reverts applied migrations above version, newest first, in one
// transaction, and returns those it reverted. Down(ctx, db, 0) removes
// Docket's tables entirely (the migrations table stays).
func (m *Migrator) Down(ctx context.Context, db Beginner, version int) ([]Migration, error) {
	if version != 0 {
		if err := m.checkVersion(version); err != nil {
			return nil, err
		}
	}
	return m.apply(ctx, db, "down", func(applied map[int]time.Time) (todo []Migration) {
		for i := len(m.migrations) - 1; i >= 0; i-- {
			if mig := m.migrations[i]; mig.Version > version {
				if _, ok := applied[mig.Version]; ok {
					todo = append(todo, mig)
				}
			}
		}
		return todo
	})
}

// apply runs, in one transaction under the migration lock, the migrations
// that pick chooses given those already applied, in the given direction,
// and records each in docket_migrations.
func (m *Migrator) apply(ctx context.Context, db Beginner, direction string, pick func(applied map[int]time.Time) []Migration) ([]Migration, error) {
	var done []Migration
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		applied, err := m.lockAndLoad(ctx, tx)
		if err != nil {
			return err
		}
		for _, mig := range pick(applied) {
			body, record, args := mig.Up, recordUp, []any{mig.Version, mig.Name}
			if direction == "down" {
				body, record, args = mig.Down, recordDown, []any{mig.Version}
			}
			if _, err := tx.Exec(ctx, body); err != nil {
				return fmt.Errorf("docket: migration %03d_%s %s: %w", mig.Version, mig.Name, direction, err)
			}
			if _, err := tx.Exec(ctx, pgsql.Render(record, m.schema), args...); err != nil {
				return err
			}
			done = append(done, mig)
		}
		return nil
	})
	if err != nil {
		return nil, pgsql.WrapPooler(err)
	}
	return done, nil
}

// List returns every known migration with the time it was applied.
func (m *Migrator) List(ctx context.Context, db Beginner) ([]MigrationStatus, error) {
	var out []MigrationStatus
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		applied, err := m.lockAndLoad(ctx, tx)
		if err != nil {
			return err
		}
		for _, mig := range m.migrations {
			out = append(out, MigrationStatus{Migration: mig, AppliedAt: applied[mig.Version]})
		}
		return nil
	})
	return out, pgsql.WrapPooler(err)
}

// SQL returns one migration in one direction ("up" or "down") as a file
// that a migration tool (goose, golang-migrate, Atlas, psql) can apply as is:
// the up file creates the schema and the docket_migrations table if needed,
// runs the migration and records its version; the down file reverts it and
// removes the record, and the first migration's down file also drops
// docket_migrations. So the files and the Migrator agree on what is applied.
func (m *Migrator) SQL(version int, direction string) (string, error) {
	if err := m.checkVersion(version); err != nil {
		return "", err
	}
	var mig Migration
	for _, mig = range m.migrations {
		if mig.Version == version {
			break
		}
	}
	var b strings.Builder
	switch direction {
	case "up":
		fmt.Fprintf(&b, "%s;\n\n%s\n\n", createBookkeeping, strings.TrimSpace(mig.Up))
		fmt.Fprintf(&b, "INSERT INTO {{schema}}.docket_migrations (version, name) VALUES (%d, '%s');\n", mig.Version, mig.Name)
	case "down":
		fmt.Fprintf(&b, "%s\n\nDELETE FROM {{schema}}.docket_migrations WHERE version = %d;\n", strings.TrimSpace(mig.Down), mig.Version)
		if mig.Version == m.migrations[0].Version {
			fmt.Fprintf(&b, "%s;\n", dropBookkeeping)
		}
	default:
		return "", fmt.Errorf("docket: migration direction %q: want up or down", direction)
	}
	return pgsql.Render(b.String(), m.schema), nil
}

func (m *Migrator) checkVersion(version int) error {
	for _, mig := range m.migrations {
		if mig.Version == version {
			return nil
		}
	}
	return fmt.Errorf("%w %d: known versions are 1 to %d", ErrUnknownVersion, version, m.Latest())
}
