package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/docketq/docket/internal/pgtest"
	"github.com/google/uuid"
)

// TestClaimSettings checks that a claim on a connection of its own runs
// with the settings of sqlClaimSettings (seen in the plan cache: generic
// plans only) and leaves the session's settings as they were, and that a
// claim in a caller's transaction leaves the caller's settings alone.
func TestClaimSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.PoolN(t, 2)
	c, _ := MigratedClient(t, ctx, pool, Config{})
	const claims = 8
	for range claims + 1 {
		if _, err := c.Enqueue(ctx, pool, noopArgs{}, Opts{}); err != nil {
			t.Fatal(err)
		}
	}
	params := ClaimParams{Worker: uuid.New(), Queues: []string{"default"}, Kinds: []string{"noop"}, Limit: 1, Lease: time.Minute}
	show := func(db Pgx, setting string) string {
		t.Helper()
		var v string
		if err := db.QueryRow(ctx, "SHOW "+setting).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	claim := func(db Pgx) {
		t.Helper()
		jobs, err := c.Claim(ctx, db, params)
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim: %d jobs, %v", len(jobs), err)
		}
	}

	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	before := show(conn, "synchronous_commit") + " " + show(conn, "plan_cache_mode")
	for range claims {
		claim(conn)
	}
	if after := show(conn, "synchronous_commit") + " " + show(conn, "plan_cache_mode"); after != before {
		t.Errorf("session settings after claims: %q, were %q", after, before)
	}
	var generic, custom int
	err = conn.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`,
		c.q.claim).Scan(&generic, &custom)
	if err != nil {
		t.Fatalf("the claim is not among the connection's prepared statements: %v", err)
	}
	if generic != claims || custom != 0 {
		t.Errorf("claim executions: %d generic and %d custom plans, want %d generic", generic, custom, claims)
	}

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit = remote_write"); err != nil {
		t.Fatal(err)
	}
	claim(tx)
	if got := show(tx, "synchronous_commit"); got != "remote_write" {
		t.Errorf("synchronous_commit in the caller's transaction after a claim: %q, want remote_write", got)
	}
}
