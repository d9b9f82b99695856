package queue

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// TestClaimCostWithHeldSnapshot holds a snapshot open in another connection
// (as a forgotten BEGIN in psql does), runs 50,000 jobs through claim and
// complete, and then measures the buffers the scan that picks one claim's
// 100 fresh jobs touches. With cursors the scan descends once per (queue,
// priority) and steps over only the entries claimed within the cursor lag:
// 21 probes of about 3 index pages, plus the 100 picked rows' index and heap
// pages — under 300 buffers whatever the number of jobs claimed while the
// snapshot is held. The same scan from the start of the index (the plain
// claim shape) steps over every dead entry and touches several times more;
// that contrast shows the cursor matters. Updating the 100 picked rows costs
// the same in both and is logged, not asserted.
func TestClaimCostWithHeldSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.PoolN(t, 4)
	const lag = 50 * time.Millisecond
	_, c, schema := migrated(t, ctx, pool, Config{DisableHistory: true, CursorLag: lag})
	jobs := `"` + schema + `".docket_jobs`
	held, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback(ctx)
	if _, err := held.Exec(ctx, `SELECT txid_current()`); err != nil {
		t.Fatal(err)
	}
	w := uuid.New()
	params := ClaimParams{Worker: w, Queues: []string{"default"}, Kinds: []string{"noop"}, Limit: 500, Lease: time.Minute}
	total := 0
	for range 50 {
		if _, err := pool.Exec(ctx, `INSERT INTO `+jobs+` (queue, kind, payload) SELECT 'default', 'noop', '{}' FROM generate_series(1, 1000)`); err != nil {
			t.Fatal(err)
		}
		for {
			claimed, err := c.Claim(ctx, pool, params)
			if err != nil {
				t.Fatal(err)
			}
			if len(claimed) == 0 {
				break
			}
			runs := make([]Run, len(claimed))
			for i, j := range claimed {
				runs[i] = RunOf(j)
			}
			if _, err := c.Complete(ctx, pool, w, runs, time.Time{}); err != nil {
				t.Fatal(err)
			}
			total += len(claimed)
		}
	}
	if total != 50000 {
		t.Fatalf("ran %d jobs, want 50000", total)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO `+jobs+` (queue, kind, payload) SELECT 'default', 'noop', '{}' FROM generate_series(1, 100)`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * lag) // let the cursor's lagged mark catch up with the last claim
	now := time.Now()
	plan := c.cursors.plan(params.Queues, params.Kinds, now)
	fromStartPlan := claimPlan{queues: plan.queues, priorities: plan.priorities, after: make([]int64, len(plan.after)), upto: plan.upto}
	withCursor, cursorTotal := claimBuffers(t, ctx, pool, sqlClaim.For(c.schema), plan, w)
	fromStart, startTotal := claimBuffers(t, ctx, pool, sqlClaim.For(c.schema), fromStartPlan, w)
	t.Logf("one claim of 100 after 50,000 jobs under a held snapshot: scan buffers cursor %d, from the start %d (whole statement %d and %d)",
		withCursor, fromStart, cursorTotal, startTotal)
	if withCursor >= 300 {
		t.Errorf("cursor claim's scan touched %d buffers, want < 300", withCursor)
	}
	if fromStart < 4*withCursor {
		t.Errorf("scan from the start touched %d buffers, cursor scan %d: expected the held snapshot to make the plain shape several times dearer", fromStart, withCursor)
	}
}

// claimBuffers runs one claim under EXPLAIN (ANALYZE, BUFFERS) in a
// transaction it rolls back, and returns the shared buffers touched by the
// scan that picks the jobs, and by the whole statement (the scan plus
// updating the 100 picked rows and their indexes).
func claimBuffers(t *testing.T, ctx context.Context, pool pgxPool, sql string, p claimPlan, w uuid.UUID) (scan, total int) {
	t.Helper()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// As a worker's claim runs (sqlClaimSettings): with a generic plan.
	if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Prepare(ctx, "claim", sql); err != nil {
		t.Fatal(err)
	}
	var raw []byte
	err = tx.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+execSQL("claim", 8), pgx.QueryExecModeSimpleProtocol,
		p.queues, []string{"noop"}, 100, w, time.Minute.Milliseconds(), p.priorities, p.after, p.upto).Scan(&raw)
	if err != nil {
		t.Fatal(err)
	}
	var out []struct{ Plan bufferNode }
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if out[0].Plan.Rows != 100 {
		t.Fatalf("claim returned %d rows, want 100", out[0].Plan.Rows)
	}
	var cte *bufferNode
	out[0].Plan.walk(func(n *bufferNode) {
		if n.SubplanName == "CTE c" {
			cte = n
		}
	})
	if cte == nil {
		t.Fatalf("no CTE c in the claim's plan: %s", raw)
	}
	return cte.Hit + cte.Read, out[0].Plan.Hit + out[0].Plan.Read
}

// bufferNode is the part of EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) the
// held-snapshot test reads.
type bufferNode struct {
	SubplanName string       `json:"Subplan Name"`
	Hit         int          `json:"Shared Hit Blocks"`
	Read        int          `json:"Shared Read Blocks"`
	Rows        int          `json:"Actual Rows"`
	Plans       []bufferNode `json:"Plans"`
}

func (n *bufferNode) walk(f func(*bufferNode)) {
	f(n)
	for i := range n.Plans {
		n.Plans[i].walk(f)
	}
}

type pgxPool interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// TestLateCommitBehindCursorIsClaimed enqueues a job in a transaction that
// commits only after the claimers' cursor has moved past the job's
// ready_seq: a sweep finds it behind the cursor and a later claim takes it.
func TestLateCommitBehindCursorIsClaimed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.PoolN(t, 4)
	enq, c, _ := migrated(t, ctx, pool, Config{CursorLag: 10 * time.Millisecond})
	late, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Rollback(ctx)
	lateJob, err := enq.Enqueue(ctx, late, noopArgs{}, enqueue.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	w := uuid.New()
	params := ClaimParams{Worker: w, Queues: []string{"default"}, Kinds: []string{"noop"}, Limit: 10, Lease: time.Minute}
	claim := func() []*core.Job {
		t.Helper()
		jobs, err := c.Claim(ctx, pool, params)
		if err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	// Later jobs commit first and are claimed; the cursor moves past the
	// late job's number.
	for range 3 {
		if _, err := enq.Enqueue(ctx, pool, noopArgs{}, enqueue.Opts{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		claim()
	}
	if err := late.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if jobs := claim(); len(jobs) != 0 {
		t.Fatalf("claimed %d jobs at once; the late job should be behind the cursor", len(jobs))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		jobs := claim()
		if len(jobs) == 1 && jobs[0].ID == lateJob.ID {
			return
		}
		if len(jobs) > 0 {
			t.Fatalf("claimed %+v, want the late job", jobs)
		}
		if time.Now().After(deadline) {
			t.Fatal("the late-committed job was never claimed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLateBacklogBehindCursorDrainsAtClaimRate commits a thousand jobs only
// after the cursor has moved past them, as slow enqueuing transactions do
// after a server restart on a loaded machine. Once the first of them is
// claimed, every following claim comes back full until all are claimed:
// they are not handed out a sweep's worth at a time.
func TestLateBacklogBehindCursorDrainsAtClaimRate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.PoolN(t, 4)
	enq, c, _ := migrated(t, ctx, pool, Config{CursorLag: 10 * time.Millisecond})
	const late, limit = 1000, 100
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	items := make([]enqueue.Item, late)
	for i := range items {
		items[i] = enqueue.Item{Args: noopArgs{}}
	}
	if _, err := enq.EnqueueMany(ctx, tx, items); err != nil {
		t.Fatal(err)
	}
	params := ClaimParams{Worker: uuid.New(), Queues: []string{"default"}, Kinds: []string{"noop"}, Limit: limit, Lease: time.Minute}
	claim := func() int {
		t.Helper()
		jobs, err := c.Claim(ctx, pool, params)
		if err != nil {
			t.Fatal(err)
		}
		return len(jobs)
	}
	for range 3 {
		if _, err := enq.Enqueue(ctx, pool, noopArgs{}, enqueue.Opts{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		claim()
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	first := 0
	for first == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no late job was claimed")
		}
		time.Sleep(20 * time.Millisecond)
		first = claim()
	}
	got := first
	for got < late {
		n := claim()
		if n != min(limit, late-got) {
			t.Fatalf("after %d of %d late jobs, a claim took %d: the backlog behind the cursor is handed out piecemeal", got, late, n)
		}
		got += n
	}
	if n := claim(); n != 0 {
		t.Fatalf("claimed %d more jobs than were enqueued", n)
	}
}

type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }
