package queue

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// TestClaimSettings checks that a claim on a connection of its own runs
// with the settings of sqlClaimSettings (seen in the plan cache: generic
// plans only), that it and the completion after it leave the session's
// settings as they were, and that in a caller's transaction both leave the
// caller's settings alone.
func TestClaimSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.PoolN(t, 2)
	enq, c, _ := migrated(t, ctx, pool, Config{})
	const claims = 8
	for range claims + 1 {
		if _, err := enq.Enqueue(ctx, pool, noopArgs{}, enqueue.Opts{}); err != nil {
			t.Fatal(err)
		}
	}
	params := ClaimParams{Worker: uuid.New(), Queues: []string{"default"}, Kinds: []string{"noop"}, Limit: 1, Lease: time.Minute}
	// claim claims a job on db and completes it, so that the completion's
	// settings (pgsql.IndexSettings) are checked along with the claim's.
	claim := func(db DB) {
		t.Helper()
		jobs, err := c.Claim(ctx, db, params)
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim: %d jobs, %v", len(jobs), err)
		}
		if done, err := c.Complete(ctx, db, params.Worker, []Run{RunOf(jobs[0])}, time.Time{}); err != nil || len(done) != 1 {
			t.Fatalf("complete: %v, %v", done, err)
		}
	}

	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	before := currentSettings(t, ctx, conn)
	for range claims {
		claim(conn)
	}
	if after := currentSettings(t, ctx, conn); after != before {
		t.Errorf("session settings after claims: %q, were %q", after, before)
	}
	var generic, custom int
	err = conn.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`,
		sqlClaim.For(c.schema)).Scan(&generic, &custom)
	if err != nil {
		t.Fatalf("the claim is not among the connection's prepared statements: %v", err)
	}
	if generic != claims || custom != 0 {
		t.Errorf("claim executions: %d generic and %d custom plans, want %d generic", generic, custom, claims)
	}

	tx := callerTx(t, ctx, pool)
	inTx := currentSettings(t, ctx, tx)
	claim(tx)
	if got := currentSettings(t, ctx, tx); got != inTx {
		t.Errorf("settings in the caller's transaction after a claim: %q, were %q", got, inTx)
	}
}

// TestRunSettings checks the settings Queue.run's statement sees, and that
// they end with it: on a pool and a connection the claim's or the index
// settings, and in a caller's transaction only sequential scans off, with
// the caller's own settings back right after.
func TestRunSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.PoolN(t, 2)
	_, c, _ := migrated(t, ctx, pool, Config{})
	during := func(db DB, settings string) string {
		t.Helper()
		var v string
		if err := c.run(ctx, db, settings, settingsProbe, nil, func(rows pgx.Rows) error { return pgsql.ScanOne(rows, &v) }); err != nil {
			t.Fatal(err)
		}
		return v
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	before := currentSettings(t, ctx, conn)
	_, rest, _ := strings.Cut(before, " ") // the server's synchronous_commit and plan_cache_mode
	for _, db := range []DB{pool, conn} {
		if got := during(db, sqlClaimSettings); got != "off off force_generic_plan" {
			t.Errorf("%T, claim settings: %q during the statement", db, got)
		}
		if got, want := during(db, pgsql.IndexSettings), "off "+rest; got != want {
			t.Errorf("%T, index settings: %q during the statement, want %q", db, got, want)
		}
	}
	if got := currentSettings(t, ctx, conn); got != before {
		t.Errorf("connection after: %q, was %q", got, before)
	}

	tx := callerTx(t, ctx, pool)
	inTx := currentSettings(t, ctx, tx)
	_, rest, _ = strings.Cut(inTx, " ")
	if got, want := during(tx, sqlClaimSettings), "off "+rest; got != want {
		t.Errorf("caller's transaction, claim settings: %q during the statement, want %q (only sequential scans off)", got, want)
	}
	if got := currentSettings(t, ctx, tx); got != inTx {
		t.Errorf("caller's transaction after: %q, want its own %q back", got, inTx)
	}
}

// settingsProbe reads the settings sqlClaimSettings and pgsql.IndexSettings
// touch: enable_seqscan, synchronous_commit and plan_cache_mode.
const settingsProbe = `SELECT current_setting('enable_seqscan') || ' ' || current_setting('synchronous_commit') || ' ' || current_setting('plan_cache_mode')`

// currentSettings returns what settingsProbe reads on db.
func currentSettings(t *testing.T, ctx context.Context, db DB) string {
	t.Helper()
	var v string
	if err := db.QueryRow(ctx, settingsProbe).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// callerTx begins a caller's transaction on pool with a setting of its own,
// synchronous_commit = remote_write, that Docket's statements must leave
// alone; it is rolled back when the test ends.
func callerTx(t *testing.T, ctx context.Context, pool pgsql.Beginner) pgx.Tx {
	t.Helper()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit = remote_write"); err != nil {
		t.Fatal(err)
	}
	return tx
}
