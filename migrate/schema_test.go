package migrate_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/jackc/pgx/v5"
)

type schemaProbe struct{}

func (schemaProbe) Kind() string { return "schema_probe" }

// Schema names at the edges of what is accepted (reserved words, the
// longest name) migrate, enqueue and announce the job; the first name too
// long for the NOTIFY channel is rejected up front instead of failing every
// enqueue.
func TestAwkwardSchemaNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	for _, name := range []string{"select", "user", strings.Repeat("s", 56)} {
		t.Run(name, func(t *testing.T) {
			m, err := migrate.New(name)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
					t.Error(err)
				}
			})
			if _, err := m.Up(ctx, pool); err != nil {
				t.Fatalf("migrate: %v", err)
			}
			c, err := docket.NewClient(pool, docket.Config{Schema: name})
			if err != nil {
				t.Fatal(err)
			}
			// A job ready now is announced with pg_notify on docket_<schema>.
			res, err := c.Enqueue(ctx, pool, schemaProbe{}, docket.Opts{})
			if err != nil {
				t.Fatalf("enqueue: %v", err)
			}
			var n int
			q := "SELECT count(*) FROM " + pgx.Identifier{name, "docket_jobs"}.Sanitize() + " WHERE id = $1"
			if err := pool.QueryRow(ctx, q, res.ID).Scan(&n); err != nil || n != 1 {
				t.Fatalf("job %d in %s: count %d, %v", res.ID, name, n, err)
			}
		})
	}
	for _, name := range []string{strings.Repeat("s", 57), `x"; DROP SCHEMA public CASCADE; --`, "Public"} {
		if _, err := docket.NewClient(pool, docket.Config{Schema: name}); !errors.Is(err, docket.ErrInvalidSchema) {
			t.Errorf("NewClient with schema %q: %v, want ErrInvalidSchema", name, err)
		}
		if _, err := migrate.New(name); !errors.Is(err, migrate.ErrInvalidSchema) {
			t.Errorf("migrate.New with schema %q: %v, want ErrInvalidSchema", name, err)
		}
	}
}
