package pgtest

import (
	"context"
	"testing"

	"github.com/docketq/docket/internal/testkit/pgsrv"
)

// Schema creates a new, empty schema with a unique name ("t_" and 16 hex
// digits) in the package's database and returns its name, which needs no
// quoting. The schema and everything in it is dropped when the test ends.
func Schema(t testing.TB) string {
	t.Helper()
	name := "t_" + pgsrv.RandomHex(8)
	ctx := context.Background()
	if err := pgsrv.Exec(ctx, URL(t), "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		if err := pgsrv.Exec(ctx, URL(t), "DROP SCHEMA IF EXISTS "+name+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", name, err)
		}
	})
	return name
}
