package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/testkit/jobfill"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// millionJobs is a schema of this package's database holding 1,000,000 live
// jobs (jobfill), built once and shared by the plan tests; the database is
// dropped after the run.
var millionJobs struct {
	once   sync.Once
	schema string
	err    error
}

func million(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	millionJobs.once.Do(func() {
		millionJobs.schema = "million"
		millionJobs.err = jobfill.Create(context.Background(), pool, millionJobs.schema, 1_000_000)
	})
	if millionJobs.err != nil {
		t.Fatal(millionJobs.err)
	}
	return millionJobs.schema
}

// analyzed is the part of EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) the plan
// tests read.
type analyzed struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	IndexName    string     `json:"Index Name"`
	SharedHit    int64      `json:"Shared Hit Blocks"`
	SharedRead   int64      `json:"Shared Read Blocks"`
	TotalMs      float64    `json:"Actual Total Time"`
	Plans        []analyzed `json:"Plans"`
}

func (n analyzed) walk(f func(analyzed)) {
	f(n)
	for _, c := range n.Plans {
		c.walk(f)
	}
}

// explainAnalyze prepares sql, runs it with args under plan_cache_mode
// mode and returns its executed plan.
func explainAnalyze(t *testing.T, ctx context.Context, pool *pgxpool.Pool, mode, sql string, args ...any) analyzed {
	t.Helper()
	return explainAnalyzeWith(t, ctx, pool, "", mode, sql, args...)
}

// explainAnalyzeWith is explainAnalyze in a transaction that first runs
// settings (when not empty), as pgsql.Run does.
func explainAnalyzeWith(t *testing.T, ctx context.Context, pool *pgxpool.Pool, settings, mode, sql string, args ...any) analyzed {
	t.Helper()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "RESET plan_cache_mode")
	if settings != "" {
		if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		defer conn.Exec(ctx, "ROLLBACK")
		if _, err := conn.Exec(ctx, settings); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Conn().Prepare(ctx, "planned", sql); err != nil {
		t.Fatal(err)
	}
	defer conn.Conn().Deallocate(ctx, "planned")
	ps := make([]string, len(args))
	for i := range ps {
		ps[i] = fmt.Sprintf("$%d", i+1)
	}
	var raw []byte
	execute := "EXECUTE planned"
	if len(ps) > 0 {
		execute += "(" + strings.Join(ps, ", ") + ")"
	}
	err = conn.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+execute,
		append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...).Scan(&raw)
	if err != nil {
		t.Fatal(err)
	}
	var out []struct{ Plan analyzed }
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out[0].Plan
}

// TestJobListPlans runs each page Jobs.List and Jobs.Get can ask for against
// 1,000,000 live jobs, 100,000 dead and 100,000 finished ones, planned with
// their values as Jobs.List has them planned (Jobs.Get under generic plans
// too), and checks that none reads a table sequentially or touches more
// than a few hundred pages: each page is an index range scan that stops
// when the page is full, the first page and a deep one alike. (The live
// table spans about 20,000 pages.)
func TestJobListPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	schema := million(t, pool)
	c, err := admin.New(admin.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	// A deep page: the keyset bound in the middle of the live ids.
	const deep = 500_000
	cases := []struct {
		name  string
		state string
		args  []any // queue, kind, tenant, serial key, error text, after, limit+1, floor
		pages int64
	}{
		{"live first page", "", []any{"", "", "", "", "", int64(math.MaxInt64), 51, int64(0)}, 400},
		{"live deep page", "", []any{"", "", "", "", "", int64(deep), 51, int64(0)}, 400},
		{"ready of a queue and kind", admin.StateReady, []any{"mail", "k1", "", "", "", int64(math.MaxInt64), 51, int64(0)}, 400},
		{"ready of a tenant, deep", admin.StateReady, []any{"", "", "t42", "", "", int64(deep), 51, int64(0)}, 400},
		{"scheduled", admin.StateScheduled, []any{"", "", "", "", "", int64(math.MaxInt64), 51, int64(0)}, 400},
		{"running", admin.StateRunning, []any{"", "", "", "", "", int64(math.MaxInt64), 51, int64(0)}, 400},
		// One serial key in a thousand: the scan walks about 20,000 ids
		// for 20 matches. An index on (serial_key, id) would make it a
		// range scan; the plan is checked for its bound as it is.
		{"serial key", "", []any{"", "", "", "acct-10", "", int64(math.MaxInt64), 21, int64(0)}, 1500},
		{"error text", "", []any{"", "", "", "", "timeout", int64(math.MaxInt64), 51, int64(0)}, 400},
		{"dead of a kind", admin.StateDead, []any{"", "k3", "", "", "", int64(math.MaxInt64), 51, int64(0)}, 400},
		{"dead by error", admin.StateDead, []any{"", "", "", "", "signature 2", int64(math.MaxInt64), 51, int64(0)}, 400},
		{"completed", admin.StateCompleted, []any{"", "", "", "", "", int64(math.MaxInt64), 51, int64(0)}, 400},
		{"completed of a queue, deep", admin.StateCompleted, []any{"bulk", "", "", "", "", int64(1_150_000), 51, int64(0)}, 400},
	}
	for _, tc := range cases {
		plan := explainAnalyze(t, ctx, pool, "force_custom_plan", c.ListSQL(tc.state), tc.args...)
		checkReadPlan(t, tc.name, plan, tc.pages)
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		for _, id := range []int64{deep, 1_050_000, 1_150_000, 1 << 40} { // live, dead, completed, none
			plan := explainAnalyze(t, ctx, pool, mode, c.JobByIDSQL(), id, true)
			checkReadPlan(t, fmt.Sprintf("%s: job %d", mode, id), plan, 60)
		}
	}
}

func checkReadPlan(t *testing.T, what string, plan analyzed, maxPages int64) {
	t.Helper()
	plan.walk(func(n analyzed) {
		// An empty history partition (tomorrow's) is scanned for free.
		if n.NodeType == "Seq Scan" && strings.HasPrefix(n.RelationName, "docket_jobs") && n.SharedHit+n.SharedRead > 0 {
			t.Errorf("%s: sequential scan of %s", what, n.RelationName)
		}
	})
	if pages := plan.SharedHit + plan.SharedRead; pages > maxPages {
		b, _ := json.MarshalIndent(plan, "", " ")
		t.Errorf("%s: read %d pages, want at most %d:\n%s", what, pages, maxPages, b)
	}
}

// TestOverviewPlans runs the statements of Overview, Workers and
// DeadLetters.Groups (the dashboard's overview, workers and dead-letter pages)
// against the same 1,000,000 jobs, with the settings they run with: none
// reads a table sequentially, and each reads a bounded number of pages
// whatever the backlog. Each count stops at OverviewLimit (10,000) rows,
// and a statement holds up to four such counts; the running jobs (10,000
// here, one in a hundred, spread over the table) are read whole, by the
// running index: their number is bounded by the slots of the live
// workers, not by the backlog.
func TestOverviewPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	schema := million(t, pool)
	c, err := admin.New(admin.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	for sql, args := range c.OverviewSQL() {
		plan := explainAnalyzeWith(t, ctx, pool, admin.BoundedSettings, "force_custom_plan", sql, args...)
		name, _, _ := strings.Cut(strings.TrimSpace(sql), "\n")
		t.Logf("%s: %d pages in %.1f ms, indexes %v", name, plan.SharedHit+plan.SharedRead, plan.TotalMs, indexesOf(plan))
		checkReadPlan(t, name, plan, 30_000)
	}
}

// TestCountStatesPlans runs the counts of the jobs page (Jobs.CountStates)
// against the same 1,000,000 jobs, for filters that narrow the index a
// state is read by and filters that do not: no sequential scan, and each
// state reads at most CountLimit (1,000) of its jobs, through the index
// named in countStates.
func TestCountStatesPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	schema := million(t, pool)
	c, err := admin.New(admin.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	limit := int64(admin.CountLimit)
	for _, tc := range []struct {
		name string
		args []any // queue, kind, tenant, serial key, error text, limit
	}{
		{"no filter", []any{"", "", "", "", "", limit}},
		{"queue", []any{"mail", "", "", "", "", limit}},
		{"kind", []any{"", "k3", "", "", "", limit}},
		{"tenant and error", []any{"", "", "t42", "", "timeout", limit}},
		{"serial key", []any{"", "", "", "acct-10", "", limit}},
		{"everything", []any{"mail", "k1", "t1", "acct-1", "smtp", limit}},
	} {
		plan := explainAnalyzeWith(t, ctx, pool, admin.CountSettings, "force_custom_plan", c.CountSQL(), tc.args...)
		t.Logf("%s: %d pages in %.1f ms, indexes %v", tc.name, plan.SharedHit+plan.SharedRead, plan.TotalMs, indexesOf(plan))
		checkReadPlan(t, "counts, "+tc.name, plan, 60_000)
	}
}

// indexesOf names the indexes a plan reads, history partitions' under
// their parent's index name pattern.
func indexesOf(plan analyzed) []string {
	seen := map[string]bool{}
	plan.walk(func(n analyzed) {
		if n.IndexName != "" {
			seen[historyPartition.ReplaceAllString(n.IndexName, "docket_jobs_done_*")] = true
		}
	})
	return slices.Sorted(maps.Keys(seen))
}

var historyPartition = regexp.MustCompile(`^docket_jobs_done_\d{8}`)
