// Package pgsql is the PostgreSQL plumbing that package outbox and the
// worker protocol (internal/queue) share: schema names and the SQL rendered
// for them, the error codes Docket reacts to, and run, which sends a
// statement together with the settings it must be planned under.
package pgsql

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// MaxSchemaLen is the longest schema name: PostgreSQL truncates
// identifiers at 63 bytes and rejects longer NOTIFY channels, and the
// channel jobs are announced on is "docket_" followed by the schema.
const MaxSchemaLen = 63 - len("docket_")

var schemaRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// ErrInvalidSchema is returned for a schema name that is not a plain
// lower-case identifier of at most MaxSchemaLen bytes.
var ErrInvalidSchema = errors.New("docket: invalid schema name")

// ErrNotMigrated is returned when Docket's tables, or the schema that should
// hold them, do not exist.
var ErrNotMigrated = errors.New("docket: tables not found: run `docket migrate up`")

// DefaultSchema is the schema of Docket's tables when none is named: in
// every Config, migrate.New and the CLI's --schema. Documentation that
// states it is checked against it (TestDocsStateTheDefaultSchema).
const DefaultSchema = "public"

// Schema returns the schema to use for name: "public" when it is empty, an
// ErrInvalidSchema error when it is not a plain lower-case identifier of at
// most MaxSchemaLen bytes.
func Schema(name string) (string, error) {
	if name == "" {
		return DefaultSchema, nil
	}
	if len(name) > MaxSchemaLen {
		return "", fmt.Errorf("%w: %d bytes, longer than %d", ErrInvalidSchema, len(name), MaxSchemaLen)
	}
	if !schemaRE.MatchString(name) {
		return "", fmt.Errorf("%w %q: use lower-case letters, digits and _", ErrInvalidSchema, name)
	}
	return name, nil
}

// Render substitutes the quoted schema for {{schema}} in SQL text.
func Render(sql, schema string) string {
	return strings.ReplaceAll(sql, "{{schema}}", `"`+schema+`"`)
}

// SQLSTATE codes Docket reacts to.
const (
	CodeUndefinedTable    = "42P01"
	CodeUndefinedFunction = "42883" // a function of a later migration (008's partition functions)
	CodeInvalidSchema     = "3F000" // the schema does not exist
	CodeNoPartition       = "23514" // check_violation: also "no partition of relation found for row"
	// CodeSerializationFailure: a REPEATABLE READ or SERIALIZABLE
	// transaction cannot go on; the caller runs it again.
	CodeSerializationFailure = "40001"
)

// SQLState returns the SQLSTATE of a Postgres error from pgx or from any
// database/sql driver whose errors report it, or "".
func SQLState(err error) string {
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

// Missing reports whether err says that a table, a function of Docket's or
// the schema is missing.
func Missing(err error) bool {
	switch SQLState(err) {
	case CodeUndefinedTable, CodeUndefinedFunction, CodeInvalidSchema:
		return true
	}
	return false
}

// WrapMissing returns err wrapped in ErrNotMigrated, naming schema, when it
// says that a table or the schema is missing, and err as it is otherwise.
func WrapMissing(err error, schema string) error {
	if !Missing(err) {
		return err
	}
	return fmt.Errorf("%w (schema %s): %w", ErrNotMigrated, schema, err)
}
