package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// planNode is the part of EXPLAIN (FORMAT JSON) the plan tests read.
type planNode struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	IndexName    string     `json:"Index Name"`
	Plans        []planNode `json:"Plans"`
}

func (n planNode) walk(f func(planNode)) {
	f(n)
	for _, c := range n.Plans {
		c.walk(f)
	}
}

// explain prepares sql and returns the plan of executing it with args,
// forcing a custom or a generic plan.
func explain(t *testing.T, ctx context.Context, pool *pgxpool.Pool, mode, sql string, args ...any) planNode {
	t.Helper()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	name := "p" + strings.ReplaceAll(uuid.NewString(), "-", "")
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "RESET plan_cache_mode")
	if _, err := conn.Conn().Prepare(ctx, name, sql); err != nil {
		t.Fatal(err)
	}
	defer conn.Conn().Deallocate(ctx, name)
	var raw []byte
	// EXPLAIN without ANALYZE plans the statement without running it.
	if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+execSQL(name, len(args)), append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var out []struct{ Plan planNode }
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out[0].Plan
}

func execSQL(name string, n int) string {
	if n == 0 {
		return "EXECUTE " + name
	}
	ps := make([]string, n)
	for i := range ps {
		ps[i] = fmt.Sprintf("$%d", i+1)
	}
	return "EXECUTE " + name + "(" + strings.Join(ps, ", ") + ")"
}

// assertIndexPlan fails when the plan reads docket_jobs by a sequential scan
// or uses none of the wanted indexes.
func assertIndexPlan(t *testing.T, what string, plan planNode, indexes ...string) {
	t.Helper()
	used := false
	plan.walk(func(n planNode) {
		if n.RelationName == "docket_jobs" && n.NodeType == "Seq Scan" {
			t.Errorf("%s: %s on docket_jobs", what, n.NodeType)
		}
		if slices.Contains(indexes, n.IndexName) {
			used = true
		}
	})
	if !used {
		b, _ := json.MarshalIndent(plan, "", " ")
		t.Errorf("%s: plan uses none of %v:\n%s", what, indexes, b)
	}
}

// noTime is a null finish time: the completion takes the database clock.
var noTime *time.Time

// claims is the claims of runs of jobs 1, 2 and 3, as heartbeat, complete
// and release take them.
const claims = `{"1": 7, "2": 7, "3": 8}`

// assertNoJoin fails if plan joins anything: the statements on a
// worker's runs read docket_jobs by id alone (see the package doc).
func assertNoJoin(t *testing.T, what string, plan planNode) {
	t.Helper()
	plan.walk(func(n planNode) {
		if strings.Contains(n.NodeType, "Join") || n.NodeType == "Nested Loop" {
			t.Errorf("%s: %s in the plan", what, n.NodeType)
		}
	})
}

// TestHotPathPlans checks that each hot-path statement uses the index it
// was written for, with 100,000 scheduled and 10,000 ready jobs, with fresh
// statistics and with statistics gathered while the table was empty (the
// case that can turn a claim into a hash join over a full scan), for

// custom and generic cached plans.
func TestHotPathPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	for _, stale := range []bool{false, true} {
		_, c, schema := migrated(t, ctx, pool, Config{})
		jobs := `"` + schema + `".docket_jobs`
		if _, err := pool.Exec(ctx, `ALTER TABLE `+jobs+` SET (autovacuum_enabled = false)`); err != nil {
			t.Fatal(err)
		}
		if stale {
			if _, err := pool.Exec(ctx, `ANALYZE `+jobs); err != nil {
				t.Fatal(err)
			}
		}
		_, err := pool.Exec(ctx, `INSERT INTO `+jobs+` (state, queue, kind, run_at, payload, tenant)
			SELECT CASE WHEN g <= 100000 THEN 'scheduled' ELSE 'ready' END, 'default', 'noop',
				CASE WHEN g <= 100000 THEN now() + interval '1 day' ELSE now() END, '{}', 't' || (g % 50)
			FROM generate_series(1, 110000) g`)
		if err != nil {
			t.Fatal(err)
		}
		if !stale {
			if _, err := pool.Exec(ctx, `ANALYZE `+jobs); err != nil {
				t.Fatal(err)
			}
		}
		w := uuid.New()
		lease := time.Minute.Milliseconds()
		ids := []int64{1, 2, 3}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			what := fmt.Sprintf("stale stats %v, %s", stale, mode)
			assertIndexPlan(t, "claim, "+what, explain(t, ctx, pool, mode, sqlClaim.For(c.schema), []string{"default", "default"}, []string{"noop"}, 100, w, lease, []int16{1, 0}, []int64{0, 5000}, []int64{math.MaxInt64, math.MaxInt64}), "docket_jobs_claim_idx")
			capped := explain(t, ctx, pool, mode, sqlClaimCapped.For(c.schema), "default", []string{"noop"}, 100, w, lease, 5)
			assertIndexPlan(t, "capped claim, "+what, capped, "docket_jobs_tenant_idx")
			assertIndexPlan(t, "capped claim's untenanted jobs, "+what, capped, "docket_jobs_claim_idx")
			assertIndexPlan(t, "promote, "+what, explain(t, ctx, pool, mode, sqlPromote.For(c.schema), 100), "docket_jobs_scheduled_idx")
			assertIndexPlan(t, "reap, "+what, explain(t, ctx, pool, mode, sqlReap.For(c.schema), 100, "x", "y"), "docket_jobs_running_idx")
			assertIndexPlan(t, "deadline sweep, "+what, explain(t, ctx, pool, mode, sqlSweepDeadlines.For(c.schema), 100), "docket_jobs_wait_until_idx")
			due := explain(t, ctx, pool, mode, sqlSweepsDue.For(c.schema))
			for _, idx := range []string{"docket_jobs_serial_line_idx", "docket_jobs_workflow_waiting_idx", "docket_jobs_child_waiting_idx", "docket_jobs_wait_until_idx"} {
				assertIndexPlan(t, "sweeps due, "+what, due, idx)
			}
			for name, plan := range map[string]planNode{
				"heartbeat":               explain(t, ctx, pool, mode, sqlHeartbeat.For(c.schema), ids, w, lease, claims),
				"heartbeat with progress": explain(t, ctx, pool, mode, sqlHeartbeatProgress.For(c.schema), ids, w, lease, claims, `{"1":{"v":1,"m":"x"}}`),
				"cancelled":               explain(t, ctx, pool, mode, sqlCancelled.For(c.schema), ids, w, claims),
				"complete":                explain(t, ctx, pool, mode, sqlCompleteHistory.For(c.schema), ids, w, claims, noTime),
				"release":                 explain(t, ctx, pool, mode, sqlRelease.For(c.schema), ids, w, claims),
			} {
				assertIndexPlan(t, name+", "+what, plan, "docket_jobs_pkey")
				assertNoJoin(t, name+", "+what, plan)
			}
			// Its nested loops join the completed rows to the workflow tables.
			assertIndexPlan(t, "complete with results, "+what, explain(t, ctx, pool, mode, sqlCompleteHistoryResults.For(c.schema),
				ids, w, claims, noTime, `{"1": {"n": 1}}`), "docket_jobs_pkey")
			handOn := []any{ids, w, claims, noTime, []string{"default"}, []string{"noop"}, lease}
			handing := explain(t, ctx, pool, mode, handOns[completionKind{serial: true, history: true}].For(c.schema), handOn...)
			assertIndexPlan(t, "serial completion handing on, "+what, handing, "docket_jobs_pkey")
			assertIndexPlan(t, "serial completion's heads, "+what, handing, "docket_jobs_serial_line_idx")
			assertIndexPlan(t, "fail, "+what, explain(t, ctx, pool, mode, sqlFail.For(c.schema), ids, w, []string{"a", "b", "c"}, []int64{0, 0, 0}, ids, nil), "docket_jobs_pkey")
		}
	}
}

// TestPlainClaimCannotUseTenantIndex drops the claim index and checks that
// the plain claim and the sweep still do not fall back to the tenant index:
// there tenant sits between queue and priority, so a scan cannot start at a
// cursor and, with a held vacuum horizon, steps over every dead entry. (With
// statistics of a bloated table the planner was seen choosing it.)
func TestPlainClaimCannotUseTenantIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	_, c, schema := migrated(t, ctx, pool, Config{})
	if _, err := pool.Exec(ctx, `DROP INDEX "`+schema+`".docket_jobs_claim_idx`); err != nil {
		t.Fatal(err)
	}
	w := uuid.New()
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		for what, plan := range map[string]planNode{
			"claim": explain(t, ctx, pool, mode, sqlClaim.For(c.schema), []string{"default"}, []string{"noop"}, 100, w, int64(60000),
				[]int16{0}, []int64{5}, []int64{math.MaxInt64}),
			"sweep": explain(t, ctx, pool, mode, sqlStragglers.For(c.schema), []string{"default"}, []string{"noop"}, 100, []int16{0}, []int64{5}),
		} {
			plan.walk(func(n planNode) {
				if n.IndexName == "docket_jobs_tenant_idx" {
					t.Errorf("%s (%s) uses docket_jobs_tenant_idx", what, mode)
				}
			})
		}
	}
	// The capped claim, which says tenant <> '', can use it (TestHotPathPlans
	// checks it does on a filled table).
	usable := false
	explain(t, ctx, pool, "force_generic_plan", sqlClaimCapped.For(c.schema), "default", []string{"noop"}, 100, w, int64(60000), 5).walk(func(n planNode) {
		usable = usable || n.IndexName == "docket_jobs_tenant_idx"
	})
	if !usable {
		t.Error("the capped claim cannot use docket_jobs_tenant_idx")
	}
}

// TestPlansCachedWhileSmall plans the statements a worker runs on its own
// on one connection while the jobs table is nearly empty, as a worker that
// starts on an idle queue does, then fills the table and checks the plans
// the connection goes on using. The plan cache keeps a generic plan for as
// long as the connection lives (claims force one; other statements may
// settle on one after five runs), and one that reads a near-empty table by
// a sequential scan would read the whole table on every run once a burst
// arrives. Each statement runs after its settings, as Queue.run sends
// them.
func TestPlansCachedWhileSmall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	_, c, schema := migrated(t, ctx, pool, Config{})
	jobs := `"` + schema + `".docket_jobs`
	if _, err := pool.Exec(ctx, `ALTER TABLE `+jobs+` SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	fill := func(n int) {
		t.Helper()
		_, err := pool.Exec(ctx, `INSERT INTO `+jobs+` (state, queue, kind, payload, tenant, run_at)
			SELECT CASE WHEN g % 3 = 0 THEN 'scheduled' ELSE 'ready' END, 'default', 'noop', '{}',
				CASE WHEN g % 2 = 0 THEN 't' || (g % 50) ELSE '' END,
				CASE WHEN g % 3 = 0 THEN now() + interval '1 day' ELSE now() END
			FROM generate_series(1, $1::int) g`, n)
		if err != nil {
			t.Fatal(err)
		}
	}
	fill(20)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	w := uuid.New()
	lease := time.Minute.Milliseconds()
	ids := []int64{1, 2, 3}
	type stmt struct {
		name, settings, sql string
		args                []any
	}
	stmts := []stmt{
		{"claim", sqlClaimSettings, sqlClaim.For(c.schema), []any{[]string{"default"}, []string{"noop"}, 100, w, lease, []int16{0}, []int64{5}, []int64{math.MaxInt64}}},
		{"capped", sqlClaimSettings, sqlClaimCapped.For(c.schema), []any{"default", []string{"noop"}, 100, w, lease, 5}},
		{"sweep", pgsql.IndexSettings, sqlStragglers.For(c.schema), []any{[]string{"default"}, []string{"noop"}, 100, []int16{0}, []int64{5}}},
		{"heartbeat", pgsql.IndexSettings, sqlHeartbeat.For(c.schema), []any{ids, w, lease, claims}},
		{"complete", pgsql.IndexSettings, sqlCompleteHistory.For(c.schema), []any{ids, w, claims, noTime}},
		{"delete", pgsql.IndexSettings, sqlCompleteDelete.For(c.schema), []any{ids, w, claims}},
		{"handon", sqlHandOnSettings.For(c.schema), handOns[completionKind{serial: true, history: true}].For(c.schema), []any{ids, w, claims, noTime, []string{"default"}, []string{"noop"}, lease}},
		{"fail", pgsql.IndexSettings, sqlFail.For(c.schema), []any{ids, w, []string{"a", "b", "c"}, []int64{0, 0, 0}, ids, nil}},
		{"snooze", pgsql.IndexSettings, sqlSnooze.For(c.schema), []any{ids, w, []int64{0, 0, 0}, ids}},
		{"deadletter", pgsql.IndexSettings, sqlDeadLetter.For(c.schema), []any{ids, w, []string{"a", "b", "c"}, []string{"a", "b", "c"}, ids, nil}},
		{"release", pgsql.IndexSettings, sqlRelease.For(c.schema), []any{ids, w, claims}},
		{"reap", pgsql.IndexSettings, sqlReap.For(c.schema), []any{100, "x", "y"}},
		{"progress", pgsql.IndexSettings, sqlHeartbeatProgress.For(c.schema), []any{ids, w, lease, claims, `{"1":{"v":1,"m":"x"}}`}},
		{"cancelled", pgsql.IndexSettings, sqlCancelled.For(c.schema), []any{ids, w, claims}},
		{"promote", pgsql.IndexSettings, sqlPromote.For(c.schema), []any{100}},
		{"next", pgsql.IndexSettings, sqlNextScheduled.For(c.schema), nil},
	}
	// plan explains s's prepared statement on conn after its settings, in a
	// transaction it rolls back.
	plan := func(s stmt) planNode {
		t.Helper()
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, s.settings); err != nil {
			t.Fatal(err)
		}
		var raw []byte
		if err := tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+execSQL(s.name, len(s.args)), append([]any{pgx.QueryExecModeSimpleProtocol}, s.args...)...).Scan(&raw); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		var out []struct{ Plan planNode }
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		return out[0].Plan
	}
	for _, s := range stmts {
		if _, err := conn.Conn().Prepare(ctx, s.name, s.sql); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		for range 8 { // past the five custom plans after which a generic one may stick
			plan(s)
		}
	}
	fill(100_000)
	for _, s := range stmts {
		plan(s).walk(func(n planNode) {
			if n.RelationName == "docket_jobs" && n.NodeType == "Seq Scan" {
				t.Errorf("%s: the plan cached on a small table reads the filled table by a sequential scan", s.name)
			}
		})
	}
}
