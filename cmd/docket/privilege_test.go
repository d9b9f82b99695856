package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/partition"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/pgsrv"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
	"github.com/docketq/docket/schedule"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// roles is a least-privilege deployment made for one test: a schema owned
// by owner, a non-superuser that ran the migrations and the grant, and app,
// a non-superuser that owns nothing and has only what `docket migrate
// grant` gave it.
type roles struct {
	schema           string
	owner, app       string
	ownerURL, appURL string
	admin, appPool   *pgxpool.Pool
}

// restrictedRoles creates the roles, gives owner the schema, and runs
// `docket migrate up` and `docket migrate grant` as owner. The roles and
// everything they own are dropped when the test ends.
func restrictedRoles(t *testing.T) *roles {
	t.Helper()
	ctx := context.Background()
	r := &roles{schema: pgtest.Schema(t), admin: pgtest.Pool(t)}
	suffix := pgsrv.RandomHex(6)
	r.owner, r.app = "docket_owner_"+suffix, "docket_app_"+suffix
	for _, sql := range []string{
		`CREATE ROLE ` + r.owner + ` LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE`,
		`CREATE ROLE ` + r.app + ` LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE`,
		`ALTER SCHEMA "` + r.schema + `" OWNER TO ` + r.owner,
	} {
		if _, err := r.admin.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		// Before pgtest drops the schema: DROP OWNED revokes the app's
		// grants and drops the owner's schema, so both roles can go. (One
		// DROP OWNED for both trips over the owner's default privileges
		// for the app.)
		for _, sql := range []string{
			`DROP OWNED BY ` + r.app,
			`DROP OWNED BY ` + r.owner + ` CASCADE`,
			`DROP ROLE ` + r.app, `DROP ROLE ` + r.owner,
		} {
			if _, err := r.admin.Exec(ctx, sql); err != nil {
				t.Errorf("cleanup %s: %v", sql, err)
			}
		}
	})
	r.ownerURL, r.appURL = urlAs(t, r.owner), urlAs(t, r.app)
	if code, out, errOut := runDocket(t, "migrate", "up", "--database-url", r.ownerURL, "--schema", r.schema); code != 0 {
		t.Fatalf("migrate up as owner: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runDocket(t, "migrate", "grant", "--role", r.app, "--database-url", r.ownerURL, "--schema", r.schema); code != 0 || !strings.Contains(out, "granted role "+r.app) {
		t.Fatalf("migrate grant as owner: %d %s %s", code, out, errOut)
	}
	cfg, err := docket.ParsePoolConfig(r.appURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 8
	if r.appPool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.appPool.Close)
	return r
}

// urlAs is the package database's URL with role as the user (the test
// servers trust local connections).
func urlAs(t *testing.T, role string) string {
	t.Helper()
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String()
}

// relOwner returns the owner of table name in the schema, "" if none.
func (r *roles) relOwner(t *testing.T, name string) string {
	t.Helper()
	var owner string
	err := r.admin.QueryRow(context.Background(), `SELECT pg_get_userbyid(c.relowner) FROM pg_class c
		WHERE c.relnamespace = $1::text::regnamespace AND c.relname = $2`, `"`+r.schema+`"`, name).Scan(&owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return owner
}

func (r *roles) count(t *testing.T, sql string) int {
	t.Helper()
	var n int
	if err := r.admin.QueryRow(context.Background(), pgsql.Render(sql, r.schema)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitFor polls cond until it holds or 20 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type privOK struct{ N int }

func (privOK) Kind() string { return "priv_ok" }

type privFlaky struct{}

func (privFlaky) Kind() string { return "priv_flaky" }

type privSnooze struct{}

func (privSnooze) Kind() string { return "priv_snooze" }

type privDoomed struct{}

func (privDoomed) Kind() string { return "priv_doomed" }

type privTx struct{ N int }

func (privTx) Kind() string { return "priv_tx" }

type privTick struct{}

func (privTick) Kind() string { return "priv_tick" }

// TestLeastPrivilege runs the whole job life as a role that is neither
// superuser nor owner of any of Docket's tables: enqueue (single, unique,
// COPY), claim, complete, retry, snooze, dead letter, a transactional
// handler, schedules, history partitions made and dropped through the
// SECURITY DEFINER functions, pause and resume, and the CLI's operator
// commands. It also shows that the role can do no DDL on the tables.
func TestLeastPrivilege(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := restrictedRoles(t)
	for _, table := range []string{"docket_jobs", "docket_jobs_done", "docket_jobs_dead", "docket_schedules"} {
		if got := r.relOwner(t, table); got != r.owner {
			t.Fatalf("%s is owned by %q, want %s", table, got, r.owner)
		}
	}

	// History partitions: migrate up made today's and the next days' as
	// the owner. Drop them (as the owner) so the worker must make them
	// through the definer functions, and make an old one as the app role
	// for the worker's retention to drop.
	q, err := queue.New(r.schema, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	made, err := partition.Of(q.Schema()).List(ctx, r.admin)
	if err != nil || len(made) < 4 {
		t.Fatalf("partitions after migrate up: %v %v", made, err)
	}
	for _, p := range made {
		if _, err := r.admin.Exec(ctx, `DROP TABLE "`+r.schema+`".`+p); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().UTC().AddDate(0, 0, -30)
	if err := partition.Of(q.Schema()).Ensure(ctx, r.appPool, old, 0); err != nil {
		t.Fatalf("app role making a partition through the definer function: %v", err)
	}
	oldName := "docket_jobs_done_" + old.Format("20060102")
	if got := r.relOwner(t, oldName); got != r.owner {
		t.Fatalf("partition %s made by the app role is owned by %q, want the owner %s", oldName, got, r.owner)
	}

	var (
		mu      sync.Mutex
		snoozed = map[int64]bool{}
	)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[privOK]) error { return nil }, handlers.KindOpts{})
	handlers.MustRegister(reg, func(_ context.Context, j *handlers.Job[privFlaky]) error {
		if j.Attempt == 1 {
			return handlers.RetryAfter(10*time.Millisecond, errors.New("first attempt fails"))
		}
		return nil
	}, handlers.KindOpts{})
	handlers.MustRegister(reg, func(_ context.Context, j *handlers.Job[privSnooze]) error {
		mu.Lock()
		defer mu.Unlock()
		if !snoozed[j.ID] {
			snoozed[j.ID] = true
			return handlers.Snooze(10 * time.Millisecond)
		}
		return nil
	}, handlers.KindOpts{})
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[privDoomed]) error {
		return errors.New("always fails")
	}, handlers.KindOpts{MaxAttempts: 1})
	handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[privTx]) error {
		_, err := tx.Exec(ctx, `INSERT INTO "`+r.schema+`".app_effects (job_id) VALUES ($1)`, j.ID)
		return err
	}, handlers.KindOpts{})
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[privTick]) error { return nil }, handlers.KindOpts{})
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[mailArgs]) error { return nil }, handlers.KindOpts{Queue: "held"})
	// The application's own table, created by the admin as an application
	// migration would be, writable by the app role.
	for _, sql := range []string{
		`CREATE TABLE "` + r.schema + `".app_effects (job_id bigint PRIMARY KEY)`,
		`GRANT SELECT, INSERT ON "` + r.schema + `".app_effects TO ` + r.app,
	} {
		if _, err := r.admin.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}

	c, err := docket.NewClient(r.appPool, docket.Config{
		Schema:    r.schema,
		Registry:  reg,
		Schedules: []schedule.Schedule{{Name: "tick", Spec: "@every 1s", Args: privTick{}}},
		Worker: docket.WorkerConfig{
			PollInterval: 50 * time.Millisecond,
			Pools:        []docket.PoolConfig{{Name: "all", Queues: []string{"default", "held"}, Concurrency: 8}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Pause "held" before anything runs (--create: nothing uses it yet):
	// its job must wait for resume.
	if code, _, errOut := runDocket(t, "queues", "pause", "held", "--create", "--database-url", r.appURL, "--schema", r.schema); code != 0 {
		t.Fatalf("queues pause as app: %s", errOut)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start as app: %v", err)
	}
	defer func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()

	// Partitions: the worker made today's and the next days' through the
	// definer function (Start waits for them), and its upkeep drops the old
	// one past the retention.
	today := "docket_jobs_done_" + time.Now().UTC().Format("20060102")
	if got := r.relOwner(t, today); got != r.owner {
		t.Fatalf("today's partition after Start is owned by %q, want the owner %s", got, r.owner)
	}
	waitFor(t, "the worker to drop the partition past retention", func() bool { return r.relOwner(t, oldName) == "" })

	// Enqueue: single, unique (twice), bulk by COPY.
	if _, err := c.Enqueue(ctx, r.appPool, privOK{N: -1}, docket.Opts{}); err != nil {
		t.Fatal(err)
	}
	first, err := c.Enqueue(ctx, r.appPool, privOK{N: -2}, docket.Opts{UniqueKey: "once", Delay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if dup, err := c.Enqueue(ctx, r.appPool, privOK{N: -2}, docket.Opts{UniqueKey: "once", Delay: time.Hour}); err != nil || !dup.Duplicate || dup.ID != first.ID {
		t.Fatalf("unique enqueue again: %+v %v", dup, err)
	}
	var items []docket.Item
	for i := range 200 {
		items = append(items, docket.Item{Args: privOK{N: i}})
	}
	items = append(items, docket.Item{Args: privFlaky{}}, docket.Item{Args: privSnooze{}}, docket.Item{Args: privDoomed{}})
	for i := range 5 {
		items = append(items, docket.Item{Args: privTx{N: i}})
	}
	// Serial keys: the line's triggers run as the application role.
	for i := range 3 {
		items = append(items, docket.Item{Args: privOK{N: 1000 + i}, Opts: docket.Opts{SerialKey: "acct"}})
	}
	if _, err := c.EnqueueMany(ctx, r.appPool, items); err != nil {
		t.Fatalf("bulk enqueue as app: %v", err)
	}
	// A workflow: its release trigger and status view run as the
	// application role.
	flow, err := c.EnqueueWorkflow(ctx, r.appPool, docket.Workflow{Name: "priv", Jobs: []docket.WorkflowJob{
		{Ref: "a", Args: privOK{N: 2000}}, {Ref: "b", Args: privOK{N: 2001}, After: docket.After("a")},
		{Ref: "c", Args: privOK{N: 2002}, After: docket.After("b")},
	}})
	if err != nil {
		t.Fatalf("workflow enqueue as app: %v", err)
	}
	held, err := c.Enqueue(ctx, r.appPool, mailArgs{To: "x"}, docket.Opts{})
	if err != nil {
		t.Fatal(err)
	}

	waitFor(t, "the jobs to finish", func() bool {
		return r.count(t, `SELECT count(*) FROM {{schema}}.docket_jobs_done WHERE kind IN ('priv_ok', 'priv_flaky', 'priv_snooze', 'priv_tx')`) == 214 &&
			r.count(t, `SELECT count(*) FROM {{schema}}.docket_jobs_dead WHERE kind = 'priv_doomed'`) == 1
	})
	if st, err := c.Admin().Workflows().Status(ctx, r.appPool, flow.ID); err != nil || st.State != admin.WorkflowSucceeded {
		t.Errorf("workflow status read as app: %+v %v", st, err)
	}
	if n := r.count(t, `SELECT count(*) FROM {{schema}}.docket_jobs_done WHERE kind = 'priv_flaky' AND attempts = 2`); n != 1 {
		t.Errorf("flaky job finished after 2 attempts: %d rows, want 1", n)
	}
	if n := r.count(t, `SELECT count(*) FROM {{schema}}.app_effects`); n != 5 {
		t.Errorf("transactional effects: %d, want 5", n)
	}
	mu.Lock()
	if len(snoozed) != 1 {
		t.Errorf("snoozed jobs: %d, want 1", len(snoozed))
	}
	mu.Unlock()
	waitFor(t, "two schedule runs", func() bool {
		return r.count(t, `SELECT count(*) FROM {{schema}}.docket_jobs_done WHERE kind = 'priv_tick'`) >= 2
	})
	// The paused queue's job waited the whole time; resume lets it run.
	if n := r.count(t, fmt.Sprintf(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE id = %d AND state = 'ready'`, held.ID)); n != 1 {
		t.Fatalf("the job of the paused queue is no longer ready")
	}
	if code, out, errOut := runDocket(t, "queues", "list", "--database-url", r.appURL, "--schema", r.schema); code != 0 || !strings.Contains(out, "held") {
		t.Fatalf("queues list as app: %d %q %s", code, out, errOut)
	}
	if code, _, errOut := runDocket(t, "queues", "resume", "held", "--database-url", r.appURL, "--schema", r.schema); code != 0 {
		t.Fatalf("queues resume as app: %s", errOut)
	}
	waitFor(t, "the resumed queue's job", func() bool {
		return r.count(t, fmt.Sprintf(`SELECT count(*) FROM {{schema}}.docket_jobs_done WHERE id = %d`, held.ID)) == 1
	})

	// The CLI's operator commands as the app role.
	dead := r.count(t, `SELECT id FROM {{schema}}.docket_jobs_dead WHERE kind = 'priv_doomed'`)
	app := func(args ...string) string {
		t.Helper()
		args = append(args, "--database-url", r.appURL, "--schema", r.schema)
		code, out, errOut := runDocket(t, args...)
		if code != 0 {
			t.Fatalf("docket %v as app: exit %d: %s", args[:2], code, errOut)
		}
		return out
	}
	if out := app("status"); !strings.Contains(out, "default") {
		t.Errorf("status lacks the default queue:\n%s", out)
	}
	if out := app("dlq", "list"); !strings.Contains(out, itoa(int64(dead))) {
		t.Errorf("dlq list lacks dead job %d:\n%s", dead, out)
	}
	app("dlq", "show", itoa(int64(dead)))
	app("jobs", "cancel", itoa(first.ID))
	if n := r.count(t, fmt.Sprintf(`SELECT count(*) FROM {{schema}}.docket_jobs_dead WHERE id = %d AND reason = 'cancelled'`, first.ID)); n != 1 {
		t.Errorf("jobs cancel as app did not dead-letter job %d", first.ID)
	}
	app("jobs", "retry", itoa(first.ID))
	app("dlq", "replay", itoa(int64(dead)))
	waitFor(t, "the replayed job to die again", func() bool {
		return r.count(t, fmt.Sprintf(`SELECT count(*) FROM {{schema}}.docket_jobs_dead WHERE id = %d AND attempts = 1 AND dead_at > now() - interval '1 minute'`, dead)) == 1 &&
			r.count(t, fmt.Sprintf(`SELECT count(*) FROM {{schema}}.docket_jobs_done WHERE id = %d`, first.ID)) == 1
	})
	if out := app("schedules", "list"); !strings.Contains(out, "tick") {
		t.Errorf("schedules list lacks tick:\n%s", out)
	}
	app("schedules", "pause", "tick")
	app("schedules", "resume", "tick")
	app("schedules", "trigger", "tick")
	app("dlq", "purge", "--older-than", "1h")
	if out := app("migrate", "status"); !strings.Contains(out, "at version") {
		t.Errorf("migrate status as app: %q", out)
	}

	// Event partitions: a relay running as the application role makes the
	// next days' and drops those past retention through the definer
	// functions of migration 010, and the partitions belong to the owner.
	if _, err := c.Outbox().Publish(ctx, r.appPool, outbox.Message{Topic: "priv.events", Key: "k", Payload: []byte(`{}`)}); err != nil {
		t.Fatalf("publish as app: %v", err)
	}
	oldEvents := "docket_events_20200101"
	if _, err := r.appPool.Exec(ctx, `SELECT "`+r.schema+`".docket_create_event_partition('2020-01-01')`); err != nil {
		t.Fatalf("app role making an event partition through the definer function: %v", err)
	}
	if got := r.relOwner(t, oldEvents); got != r.owner {
		t.Fatalf("event partition %s made by the app role is owned by %q, want the owner %s", oldEvents, got, r.owner)
	}
	sink := &privSink{}
	rl, err := relay.New(r.appPool, relay.Config{Schema: r.schema, Publisher: sink, Retention: 24 * time.Hour, ID: "priv"})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stopRelay := context.WithCancel(ctx)
	relayDone := make(chan error, 1)
	go func() { relayDone <- rl.Run(rctx) }()
	todayEvents := "docket_events_" + time.Now().UTC().Format("20060102")
	waitFor(t, "the relay to publish, make today's event partition and drop the old one", func() bool {
		return sink.count() == 1 && r.relOwner(t, todayEvents) == r.owner && r.relOwner(t, oldEvents) == ""
	})
	stopRelay()
	if err := <-relayDone; err != nil {
		t.Errorf("relay as app: %v", err)
	}

	// No DDL: every statement is refused for lack of privilege.
	s := `"` + r.schema + `"`
	for _, ddl := range []string{
		`CREATE TABLE ` + s + `.intruder (x int)`,
		`ALTER TABLE ` + s + `.docket_jobs ADD COLUMN x int`,
		`DROP TABLE ` + s + `.docket_jobs_dead`,
		`TRUNCATE ` + s + `.docket_jobs`,
		`DROP TABLE ` + s + `.` + today,
		`CREATE INDEX ON ` + s + `.docket_jobs (kind)`,
		`ALTER TABLE ` + s + `.docket_jobs_done DETACH PARTITION ` + s + `.` + today,
		`CREATE OR REPLACE FUNCTION ` + s + `.docket_drop_history_partition(day date) RETURNS boolean LANGUAGE sql AS 'SELECT true'`,
		`DROP TABLE ` + s + `.docket_events_default`,
		`INSERT INTO ` + s + `.docket_migrations (version, name) VALUES (999, 'x')`,
	} {
		_, err := r.appPool.Exec(ctx, ddl)
		if code := pgsql.SQLState(err); code != "42501" {
			t.Errorf("as app: %s: %v (SQLSTATE %q), want insufficient_privilege (42501)", ddl, err, code)
		}
	}
	// The definer functions take only a date in range, and PUBLIC cannot
	// run them.
	_, err = r.appPool.Exec(ctx, `SELECT `+s+`.docket_create_history_partition('0001-01-01')`)
	if code := pgsql.SQLState(err); code != "22023" {
		t.Errorf("definer function with a day out of range: %v, want invalid_parameter_value (22023)", err)
	}
	if n := r.count(t, `SELECT count(*) FROM pg_proc p, aclexplode(p.proacl) a
		WHERE p.pronamespace = '{{schema}}'::regnamespace AND p.proname LIKE 'docket\_%\_partition'
		AND a.grantee = 0`); n != 0 {
		t.Errorf("PUBLIC holds %d privileges on the partition functions", n)
	}
	if n := r.count(t, `SELECT count(*) FROM pg_proc p
		WHERE p.pronamespace = '{{schema}}'::regnamespace AND p.proname LIKE 'docket\_%\_partition'
		AND p.prosecdef AND array_to_string(p.proconfig, ',') LIKE 'search_path=pg_catalog, %'`); n != 4 {
		t.Errorf("%d partition functions are SECURITY DEFINER with a pinned search_path, want 4", n)
	}
}

// privSink is a relay publisher that counts what it is given.
type privSink struct {
	mu sync.Mutex
	n  int
}

func (s *privSink) Publish(_ context.Context, msgs []relay.Message) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n += len(msgs)
	return make([]error, len(msgs))
}

func (s *privSink) Close() error { return nil }

func (s *privSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}
