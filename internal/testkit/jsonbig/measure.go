package jsonbig

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Measure asks PostgreSQL what doc takes as jsonb: its stored size (without
// the 4-byte header) and the length of its text rendering; or, when
// PostgreSQL refuses it, the SQLSTATE of the refusal. The tests compare
// Docket's own jsonb check with it.
func Measure(t testing.TB, pool *pgxpool.Pool, doc []byte) (stored, rendered int64, code string) {
	t.Helper()
	err := pool.QueryRow(context.Background(), `SELECT pg_column_size(j) - 4, octet_length(j::text) FROM (SELECT $1::jsonb AS j) s`,
		string(doc)).Scan(&stored, &rendered)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return 0, 0, pgErr.Code
	}
	if err != nil {
		t.Fatal(err)
	}
	return stored, rendered, ""
}
