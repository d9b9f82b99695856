package migrate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// ErrInvalidRole is returned by GrantSQL and Grant for a role name
// PostgreSQL cannot hold.
var ErrInvalidRole = errors.New("docket: invalid role name")

// grantSQL gives an application role what workers, producers and the
// operator commands need on the schema and nothing more: DML on the tables
// (read-only on docket_migrations, which only the owner writes), the
// sequences' nextval, and EXECUTE on the functions, among them the
// SECURITY DEFINER partition functions of migration 008, through which the
// role makes and drops history partitions without owning a table. No
// CREATE, ALTER, DROP or TRUNCATE.
//
// The ON ALL ... IN SCHEMA grants cover what exists; the default
// privileges cover tables, sequences and functions that the role running
// the grant (the owner, which applies migrations) creates later in the
// schema: later migrations and history partitions need no new grant.
// Both reach every object of the schema, so Docket's tables belong in a
// schema of their own when the role must not reach others.
const grantSQL = `GRANT USAGE ON SCHEMA {{schema}} TO {{role}};
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {{schema}} TO {{role}};
REVOKE INSERT, UPDATE, DELETE ON {{schema}}.docket_migrations FROM {{role}};
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {{schema}} TO {{role}};
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {{schema}} TO {{role}};
ALTER DEFAULT PRIVILEGES IN SCHEMA {{schema}} GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {{role}};
ALTER DEFAULT PRIVILEGES IN SCHEMA {{schema}} GRANT USAGE, SELECT ON SEQUENCES TO {{role}};
ALTER DEFAULT PRIVILEGES IN SCHEMA {{schema}} GRANT EXECUTE ON FUNCTIONS TO {{role}};
`

// GrantSQL returns the statements that grant role what an application
// role needs on the migrator's schema (see docs/operations.md, "Least
// privilege"), as one script for psql. The role is quoted as an
// identifier, so it is taken as written, case included. Run it as the role
// that applied the migrations, after them: the default privileges it sets
// apply to objects that role creates later.
func (m *Migrator) GrantSQL(role string) (string, error) {
	if role == "" || len(role) > 63 || strings.ContainsRune(role, 0) {
		return "", fmt.Errorf("%w %q: want 1 to 63 bytes, no NUL", ErrInvalidRole, role)
	}
	return strings.ReplaceAll(pgsql.Render(grantSQL, m.schema), "{{role}}", pgx.Identifier{role}.Sanitize()), nil
}

// Grant runs GrantSQL(role) in one transaction on db.
func (m *Migrator) Grant(ctx context.Context, db Beginner, role string) error {
	sql, err := m.GrantSQL(role)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return fmt.Errorf("docket: grant to role %s: %w", role, err)
		}
		return nil
	})
}
