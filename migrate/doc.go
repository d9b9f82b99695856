// Package migrate owns Docket's schema: the numbered migrations
// (migrations/NNN_name.up.sql and .down.sql, embedded in the binary), their
// status, and the grants an application role needs.
//
// A [Migrator] works on one schema:
//
//	m, err := migrate.New("shop")
//	applied, err := m.Up(ctx, pool)
//
// [Migrator.Up] applies what is missing in one transaction under a
// transaction-scoped advisory lock on the schema, so every process may call
// it at start: one applies, the others wait and find nothing left to do.
// It also creates the history partitions of today and the next three days,
// as a worker's Start would. [Migrator.UpTo] stops at a version,
// [Migrator.Down] reverts down to one, and [Migrator.List] reports what is
// applied. [Migrator.SQL] gives one migration as a file for a team's own
// migration tool (`docket migrate sql`), which records its version as the
// Migrator does, so both agree on what is applied.
//
// Migrations only move forward between releases: apply them before workers
// of the new version start. The `docket migrate` verbs run the same
// Migrator.
//
// [Migrator.GrantSQL] (and [Migrator.Grant], which runs it) gives a role
// that owns nothing what Docket's workers, producers and operators need:
// DML on the tables, the sequences, the functions, and default privileges
// for what later migrations create (docs/operations.md, "Least
// privilege").
package migrate
