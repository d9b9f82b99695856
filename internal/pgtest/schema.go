package pgtest

import (
	"context"
	"testing"
)

// Schema creates a new, empty schema with a unique name ("t_" and 16 hex
// digits) in the package's database and returns its name, which needs no
// quoting. The schema and everything in it is dropped when the test ends.
func Schema(t testing.TB) string {
	t.Helper()
	name := "t_" + randomHex(8)
	ctx := context.Background()
	if err := adminExec(ctx, URL(t), "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		if err := adminExec(ctx, URL(t), "DROP SCHEMA IF EXISTS "+name+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", name, err)
		}
	})
	return name
}
