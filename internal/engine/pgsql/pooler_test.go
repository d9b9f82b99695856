package pgsql_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The errors PostgreSQL sends for prepared statements that a server
// connection holds twice or has lost are recognised, from pgx's own
// statement cache too, and wrapped once in ErrPgBouncer; other errors are
// left alone.
func TestPreparedStatementMismatch(t *testing.T) {
	conn, err := pgx.Connect(t.Context(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())

	exec := func(sql string) error {
		_, err := conn.Exec(t.Context(), sql)
		return err
	}
	if err := exec("PREPARE twice AS SELECT 1"); err != nil {
		t.Fatal(err)
	}
	duplicate := exec("PREPARE twice AS SELECT 1")
	missing := exec("EXECUTE never_prepared")
	// pgx's cache still holds a statement the server dropped: what a
	// transaction on another server connection meets behind a pooler.
	var n int
	if err := conn.QueryRow(t.Context(), "SELECT $1::int", 1).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if err := exec("DEALLOCATE ALL"); err != nil {
		t.Fatal(err)
	}
	cached := conn.QueryRow(t.Context(), "SELECT $1::int", 1).Scan(&n)
	other := exec("SELECT 1/0")

	for name, c := range map[string]struct {
		err  error
		code string
	}{
		"PREPARE twice":             {duplicate, pgsql.CodeDuplicatePreparedStatement},
		"EXECUTE unknown":           {missing, pgsql.CodeInvalidStatementName},
		"pgx cache, statement gone": {cached, pgsql.CodeInvalidStatementName},
	} {
		var pgErr *pgconn.PgError
		if !errors.As(c.err, &pgErr) || pgErr.Code != c.code {
			t.Errorf("%s: %v, want SQLSTATE %s", name, c.err, c.code)
			continue
		}
		if !pgsql.PreparedStatementMismatch(c.err) {
			t.Errorf("%s: %v not recognised", name, c.err)
		}
		wrapped := pgsql.Wrap(c.err, "s")
		if !errors.Is(wrapped, pgsql.ErrPgBouncer) || !errors.As(wrapped, &pgErr) {
			t.Errorf("%s: Wrap gave %v, want ErrPgBouncer around the PgError", name, wrapped)
		}
		if again := pgsql.WrapPooler(wrapped); again != wrapped || strings.Count(again.Error(), "PgBouncer") != 1 {
			t.Errorf("%s: wrapped twice: %v", name, again)
		}
	}
	if other == nil || pgsql.PreparedStatementMismatch(other) || pgsql.Wrap(other, "s") != other {
		t.Errorf("division by zero: %v was taken for a prepared statement mismatch", other)
	}
	if err := pgsql.Wrap(exec("SELECT * FROM no_such_table"), "s"); !errors.Is(err, pgsql.ErrNotMigrated) || errors.Is(err, pgsql.ErrPgBouncer) {
		t.Errorf("missing table: %v, want ErrNotMigrated only", err)
	}
	if pgsql.Wrap(nil, "s") != nil {
		t.Error("Wrap(nil) is not nil")
	}
}
