package pgsql

import (
	"errors"
	"fmt"
)

// SQLSTATE codes of a named prepared statement that the server connection
// does not hold as the client expects: one the client prepares is there
// already, or one it prepared is gone. Docket prepares no statement by
// name itself; pgx's default query mode does (its statement cache), and
// behind a pooler in transaction mode each transaction may run on another
// server connection than the one that holds a client's statements.
const (
	CodeDuplicatePreparedStatement = "42P05" // duplicate_prepared_statement
	CodeInvalidStatementName       = "26000" // invalid_sql_statement_name
)

// ErrPgBouncer wraps the errors of statements that failed because a
// transaction pooler moved the connection's prepared statements away (see
// PreparedStatementMismatch). Its message is the fix.
var ErrPgBouncer = errors.New("docket: prepared statement missing or duplicated on the server connection, " +
	"as behind PgBouncer in transaction mode: add default_query_exec_mode=exec to the connection string " +
	"(the docket CLI: --pgbouncer) and give LISTEN a direct PostgreSQL URL in ListenURL " +
	"(docs/compatibility.md#pgbouncer)")

// PreparedStatementMismatch reports whether err is PostgreSQL's answer to a
// named prepared statement that the server connection holds where the
// client does not expect it, or lacks where the client prepared it
// (SQLSTATE 42P05 or 26000, from pgx, pgconn or a database/sql driver).
func PreparedStatementMismatch(err error) bool {
	switch SQLState(err) {
	case CodeDuplicatePreparedStatement, CodeInvalidStatementName:
		return true
	}
	return false
}

// WrapPooler returns err wrapped in ErrPgBouncer when
// PreparedStatementMismatch says so and it is not wrapped already, and err
// as it is otherwise.
func WrapPooler(err error) error {
	if !PreparedStatementMismatch(err) || errors.Is(err, ErrPgBouncer) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrPgBouncer, err)
}

// Wrap gives a failed statement of Docket's the error Docket promises for
// it: ErrNotMigrated, naming schema, for a missing table, function or
// schema (WrapMissing); ErrPgBouncer for prepared statements a transaction
// pooler moved away (WrapPooler); err as it is otherwise.
func Wrap(err error, schema string) error {
	return WrapPooler(WrapMissing(err, schema))
}
