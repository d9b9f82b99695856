package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/docketq/docket/migrate"
)

// exitPending is migrate status's exit code when migrations are pending, so
// a deploy gate can tell "behind" (3) from "could not check" (1).
const exitPending = 3

func migrateCommand() *command {
	return &command{
		name:    "migrate",
		summary: "apply, revert, list, check or print schema migrations",
		verbs: []*command{
			{name: "up", summary: "apply the migrations not yet applied (through --version)", flags: migrateUp},
			{name: "down", summary: "revert applied migrations above --version (default: the newest one)", flags: migrateDown},
			{name: "list", summary: "list every migration and when it was applied", flags: migrateList},
			{name: "sql", summary: "print the migrations as SQL files for goose, golang-migrate, Atlas or psql", flags: migrateSQL,
				about: `Each up file creates the schema and the docket_migrations table if needed, runs
the migration and records its version; each down file reverts it and removes the
record (the first migration's also drops docket_migrations). Without --direction
both are printed, up files oldest first, then down files newest first, each after
a "-- docket: NNN_name.up.sql" line; with --direction the output is one script
psql can run. --out writes NNN_name.up.sql and NNN_name.down.sql into a directory
instead. No connection is made.`},
			{name: "status", summary: "say whether migrations are pending; exit 3 if so (for deploy gates)", flags: migrateStatus},
			{name: "grant", summary: "grant an application role what workers and producers need, and no DDL", args: "--role ROLE", flags: migrateGrant,
				about: `Run as the role that applied the migrations (the owner), after them. The role
gets USAGE on the schema, SELECT/INSERT/UPDATE/DELETE on Docket's tables
(SELECT only on docket_migrations), USAGE/SELECT on its sequences and EXECUTE
on its functions, among them the SECURITY DEFINER functions through which
workers make and drop history partitions. Default privileges extend the same
to tables, sequences and functions the owner creates in the schema later
(later migrations, history partitions), so an upgrade needs no new grant.
Grants reach every object of the schema: keep Docket in a schema of its own
when the role must not reach others. --print prints the SQL instead of
running it; no connection is made then.`},
		},
	}
}

// migrator is the migrator for the schema flag, its errors usage errors.
func migrator(schema string) (*migrate.Migrator, error) {
	m, err := migrate.New(schema)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	return m, nil
}

func versionFlag(fs *flag.FlagSet, help string) *int { return fs.Int("version", -1, help) }

// checkVersion checks --version before anything connects: -1 (the flag's
// default), a version this binary knows, or 0 where zeroOK (down to none).
func checkVersion(m *migrate.Migrator, v int, zeroOK bool) error {
	if v == -1 || (v == 0 && zeroOK) {
		return nil
	}
	for _, mig := range m.Migrations() {
		if mig.Version == v {
			return nil
		}
	}
	also := ""
	if zeroOK {
		also = ", or 0 to remove Docket's tables"
	}
	return fmt.Errorf("%w: --version %d: known versions are 1 to %d%s", errUsage, v, m.Latest(), also)
}

func migrateUp(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	version := versionFlag(fs, "apply through this version (default: the latest)")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		if err := wantArgs(pos, 0, ""); err != nil {
			return err
		}
		m, err := migrator(db.schema)
		if err != nil {
			return err
		}
		if err := checkVersion(m, *version, false); err != nil {
			return err
		}
		v := *version
		if v < 0 {
			v = m.Latest()
		}
		pool, err := connect(ctx, db.url, 2, db.pgbouncer)
		if err != nil {
			return err
		}
		defer pool.Close()
		done, err := m.UpTo(ctx, pool, v)
		if err != nil {
			return err
		}
		report(out, "applied", done)
		return nil
	}
}

func migrateDown(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	version := versionFlag(fs, "revert the applied migrations above this version; 0 removes Docket's tables (default: one step)")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		if err := wantArgs(pos, 0, ""); err != nil {
			return err
		}
		m, err := migrator(db.schema)
		if err != nil {
			return err
		}
		if err := checkVersion(m, *version, true); err != nil {
			return err
		}
		pool, err := connect(ctx, db.url, 2, db.pgbouncer)
		if err != nil {
			return err
		}
		defer pool.Close()
		v := *version
		if v < 0 {
			list, err := m.List(ctx, pool)
			if err != nil {
				return err
			}
			v = previous(list)
		}
		done, err := m.Down(ctx, pool, v)
		if err != nil {
			return err
		}
		report(out, "reverted", done)
		return nil
	}
}

// previous is the version below the highest applied one: the highest known
// version under it (versions need not be contiguous), 0 when there is none.
func previous(list []migrate.MigrationStatus) int {
	cur, v := current(list), 0
	for _, s := range list {
		if s.Version < cur && s.Version > v {
			v = s.Version
		}
	}
	return v
}

// current is the highest applied version, 0 when none is.
func current(list []migrate.MigrationStatus) int {
	v := 0
	for _, s := range list {
		if !s.AppliedAt.IsZero() && s.Version > v {
			v = s.Version
		}
	}
	return v
}

func migrateList(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		list, err := loadMigrations(ctx, db, pos)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(out, migrationsFrom(list, false), true)
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "VERSION\tNAME\tAPPLIED")
		for _, s := range list {
			at := "no"
			if !s.AppliedAt.IsZero() {
				at = s.AppliedAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%03d\t%s\t%s\n", s.Version, s.Name, at)
		}
		return tw.Flush()
	}
}

func loadMigrations(ctx context.Context, db dbFlags, pos []string) ([]migrate.MigrationStatus, error) {
	if err := wantArgs(pos, 0, ""); err != nil {
		return nil, err
	}
	m, err := migrator(db.schema)
	if err != nil {
		return nil, err
	}
	pool, err := connect(ctx, db.url, 2, db.pgbouncer)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	return m.List(ctx, pool)
}

func migrateStatus(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		list, err := loadMigrations(ctx, db, pos)
		if err != nil {
			return err
		}
		pending := migrationsFrom(list, true)
		status := migrateStatusJSON{Schema: db.schema, Current: current(list), Latest: list[len(list)-1].Version, Pending: pending}
		if *asJSON {
			if err := writeJSON(out, status, true); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(out, "schema %s: at version %d of %d\n", status.Schema, status.Current, status.Latest)
			for _, p := range pending {
				fmt.Fprintf(out, "pending %03d_%s\n", p.Version, p.Name)
			}
		}
		if len(pending) > 0 {
			return &exitError{exitPending, fmt.Sprintf("%d migrations pending: run docket migrate up", len(pending))}
		}
		return nil
	}
}

func migrateSQL(fs *flag.FlagSet) action {
	var db dbFlags
	db.registerSchema(fs)
	version := versionFlag(fs, "print this migration only (default: all)")
	direction := fs.String("direction", "", "up or down: print one direction as one script (default: both)")
	dir := fs.String("out", "", "write NNN_name.up.sql and NNN_name.down.sql files into this directory instead of printing")
	return func(_ context.Context, pos []string, out, _ io.Writer) error {
		if err := wantArgs(pos, 0, ""); err != nil {
			return err
		}
		m, err := migrator(db.schema)
		if err != nil {
			return err
		}
		if err := checkVersion(m, *version, false); err != nil {
			return err
		}
		var directions []string
		switch *direction {
		case "":
			directions = []string{"up", "down"}
		case "up", "down":
			directions = []string{*direction}
		default:
			return fmt.Errorf("%w: --direction %q: want up or down", errUsage, *direction)
		}
		type file struct{ name, sql string }
		var files []file
		for _, d := range directions {
			migs := m.Migrations()
			for i := range migs {
				mig := migs[i]
				if d == "down" {
					mig = migs[len(migs)-1-i] // newest first
				}
				if *version >= 0 && mig.Version != *version {
					continue
				}
				sql, err := m.SQL(mig.Version, d)
				if err != nil {
					return err
				}
				files = append(files, file{fmt.Sprintf("%03d_%s.%s.sql", mig.Version, mig.Name, d), sql})
			}
		}
		if *dir != "" {
			if err := os.MkdirAll(*dir, 0o755); err != nil {
				return err
			}
			for _, f := range files {
				if err := os.WriteFile(filepath.Join(*dir, f.name), []byte(f.sql), 0o644); err != nil {
					return err
				}
				fmt.Fprintf(out, "wrote %s\n", filepath.Join(*dir, f.name))
			}
			return nil
		}
		for i, f := range files {
			if i > 0 {
				fmt.Fprintln(out)
			}
			fmt.Fprintf(out, "-- docket: %s\n%s", f.name, f.sql)
		}
		return nil
	}
}

func report(out io.Writer, verb string, done []migrate.Migration) {
	if len(done) == 0 {
		fmt.Fprintf(out, "nothing %s: already at the target version\n", verb)
		return
	}
	for _, m := range done {
		fmt.Fprintf(out, "%s %d_%s\n", verb, m.Version, m.Name)
	}
}
