package docket_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

func TestEnqueueCommitAndRollbackPgx(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.Pool.Exec(b.Ctx, `CREATE TABLE `+b.Table("orders")+` (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	for i, commit := range []bool{true, false} {
		tx, err := b.Pool.Begin(b.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(b.Ctx, `INSERT INTO `+b.Table("orders")+` VALUES ($1)`, i); err != nil {
			t.Fatal(err)
		}
		res, err := b.client.Enqueue(b.Ctx, tx, noop{N: i}, docket.Opts{})
		if err != nil {
			t.Fatal(err)
		}
		if res.ID == 0 || res.Duplicate || res.State != core.StateReady {
			t.Fatalf("enqueue result %+v", res)
		}
		if commit {
			err = tx.Commit(b.Ctx)
		} else {
			err = tx.Rollback(b.Ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if commit {
			want = 1
		}
		if n := b.Count(t, `SELECT count(*) FROM `+b.Table("orders")+` WHERE id = $1`, i); n != want {
			t.Errorf("commit=%v: %d order rows, want %d", commit, n, want)
		}
		if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE id = $1`, res.ID); n != want {
			t.Errorf("commit=%v: %d job rows, want %d", commit, n, want)
		}
	}
}

func TestEnqueueCommitAndRollbackDatabaseSQL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	db := stdlib.OpenDBFromPool(b.Pool)
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE ` + b.Table("orders") + ` (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	for i, commit := range []bool{true, false} {
		tx, err := db.BeginTx(b.Ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO `+b.Table("orders")+` VALUES ($1)`, i); err != nil {
			t.Fatal(err)
		}
		res, err := b.client.EnqueueSQL(b.Ctx, tx, noop{N: i}, docket.Opts{Meta: map[string]string{"trace": "abc"}})
		if err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if commit {
			want = 1
		}
		if n := b.Count(t, `SELECT count(*) FROM `+b.Table("orders")+` WHERE id = $1`, i); n != want {
			t.Errorf("commit=%v: %d order rows, want %d", commit, n, want)
		}
		// The payload must be stored as a JSON object, not as a bytea string.
		if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE id = $1 AND jsonb_typeof(payload) = 'object' AND payload->>'n' = $2 AND meta->>'trace' = 'abc'`, res.ID, string(rune('0'+i))); n != want {
			t.Errorf("commit=%v: %d job rows with object payload, want %d", commit, n, want)
		}
	}
	// The bulk path through database/sql takes the set-based insert.
	out, err := b.client.EnqueueManySQL(b.Ctx, db, []docket.Item{{Args: noop{N: 7}}, {Args: noop{N: 8}, Opts: docket.Opts{UniqueKey: "k"}}, {Args: noop{N: 9}, Opts: docket.Opts{UniqueKey: "k"}}})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Duplicate || out[1].Duplicate || !out[2].Duplicate || out[2].ID != out[1].ID {
		t.Fatalf("bulk over database/sql: %+v", out)
	}
}

func TestUniqueKeyRace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Two transactions insert the same key; the second blocks on the first's
	// uncommitted row, then reports the committed job as a duplicate.
	tx1, err := b.Pool.Begin(b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	first, err := b.client.Enqueue(b.Ctx, tx1, noop{}, docket.Opts{UniqueKey: "order:1"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan docket.Enqueued, 1)
	errc := make(chan error, 1)
	go func() {
		tx2, err := b.Pool.Begin(b.Ctx)
		if err != nil {
			errc <- err
			return
		}
		defer tx2.Rollback(b.Ctx)
		res, err := b.client.Enqueue(b.Ctx, tx2, noop{}, docket.Opts{UniqueKey: "order:1"})
		if err != nil {
			errc <- err
			return
		}
		errc <- tx2.Commit(b.Ctx)
		done <- res
	}()
	// Give the second transaction time to block on the key, then commit.
	waitFor(t, func() bool {
		return b.Count(t, `SELECT count(*) FROM pg_locks WHERE NOT granted`) > 0
	})
	if err := tx1.Commit(b.Ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	second := <-done
	if !second.Duplicate || second.ID != first.ID {
		t.Fatalf("second enqueue = %+v, want duplicate of %d", second, first.ID)
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")); n != 1 {
		t.Fatalf("%d jobs, want 1", n)
	}

	// Many concurrent enqueuers of one key: exactly one job, all see its id.
	var wg sync.WaitGroup
	ids := make([]int64, 16)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := b.client.Enqueue(b.Ctx, b.Pool, noop{}, docket.Opts{UniqueKey: "order:2"})
			if err != nil {
				t.Error(err)
			}
			ids[i] = res.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("ids differ: %v", ids)
		}
	}
}

func TestMoveOnDuplicate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	first, err := b.client.Enqueue(b.Ctx, b.Pool, noop{}, docket.Opts{UniqueKey: "k", RunAt: at})
	if err != nil || first.State != core.StateScheduled {
		t.Fatalf("%+v %v", first, err)
	}
	later := at.Add(time.Hour)
	res, err := b.client.Enqueue(b.Ctx, b.Pool, noop{}, docket.Opts{UniqueKey: "k", RunAt: later, MoveOnDuplicate: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Duplicate || res.ID != first.ID {
		t.Fatalf("move: %+v", res)
	}
	var got time.Time
	if err := b.Pool.QueryRow(b.Ctx, `SELECT run_at FROM `+b.Table("docket_jobs")+` WHERE id = $1`, first.ID).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if !got.Equal(later) {
		t.Fatalf("run_at %v, want %v", got, later)
	}
	// Without the option a duplicate leaves run_at alone.
	res, err = b.client.Enqueue(b.Ctx, b.Pool, noop{}, docket.Opts{UniqueKey: "k", RunAt: at})
	if err != nil || !res.Duplicate {
		t.Fatalf("%+v %v", res, err)
	}
	if err := b.Pool.QueryRow(b.Ctx, `SELECT run_at FROM `+b.Table("docket_jobs")+` WHERE id = $1`, first.ID).Scan(&got); err != nil || !got.Equal(later) {
		t.Fatalf("run_at moved to %v (%v)", got, err)
	}
}

func TestEnqueueManyCopyAndUnique(t *testing.T) {
	t.Parallel()
	b := setup(t)
	existing, err := b.client.Enqueue(b.Ctx, b.Pool, noop{}, docket.Opts{UniqueKey: "taken"})
	if err != nil {
		t.Fatal(err)
	}
	var items []docket.Item
	for i := range 1000 {
		items = append(items, docket.Item{Args: noop{N: i}, Opts: docket.Opts{Tenant: "t1", Priority: i % 3}})
	}
	items = append(items,
		docket.Item{Args: noop{}, Opts: docket.Opts{UniqueKey: "taken"}},
		docket.Item{Args: noop{}, Opts: docket.Opts{UniqueKey: "fresh"}},
		docket.Item{Args: noop{}, Opts: docket.Opts{UniqueKey: "fresh"}},
		docket.Item{Args: noop{}, Opts: docket.Opts{Delay: time.Hour}},
	)
	out, err := b.client.EnqueueMany(b.Ctx, b.Pool, items)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(items) {
		t.Fatalf("%d results for %d items", len(out), len(items))
	}
	seen := map[int64]bool{}
	for i, r := range out[:1000] {
		if r.ID == 0 || r.Duplicate || seen[r.ID] {
			t.Fatalf("item %d: %+v", i, r)
		}
		seen[r.ID] = true
	}
	n := len(out)
	if r := out[n-4]; !r.Duplicate || r.ID != existing.ID {
		t.Errorf("taken key: %+v, want duplicate of %d", r, existing.ID)
	}
	if a, c := out[n-3], out[n-2]; a.Duplicate || !c.Duplicate || a.ID != c.ID {
		t.Errorf("in-batch duplicate: %+v %+v", a, c)
	}
	if r := out[n-1]; r.State != core.StateScheduled {
		t.Errorf("delayed item state %s", r.State)
	}
	// Every reported id is a stored job with the item's payload.
	if got := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE kind = 'noop'`); got != 1000+1+1+1 {
		t.Fatalf("%d jobs stored", got)
	}
	if got := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE id = $1 AND (payload->>'n')::int = 500 AND priority = 2 AND tenant = 't1'`, out[500].ID); got != 1 {
		t.Fatal("item 500 not stored under its id")
	}
}

// A batch whose payloads each fit jsonb but together would not (six arrays
// of 4,194,304 zeros, 48 MiB of jsonb each from 8 MiB of text) goes in by
// the set-based insert: the batch travels as json, and only each payload
// becomes jsonb.
func TestEnqueueManyOverJSONBInTotal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	zeros := raw{P: json.RawMessage("[" + strings.Repeat("0,", 1<<22-1) + "0]")}
	items := make([]docket.Item, 6)
	for i := range items {
		items[i] = docket.Item{Args: zeros}
	}
	db := stdlib.OpenDBFromPool(b.Pool)
	defer db.Close()
	if _, err := b.client.EnqueueManySQL(b.Ctx, db, items); err != nil {
		t.Fatal(err)
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE kind = 'raw'`); n != len(items) {
		t.Fatalf("%d jobs stored, want %d", n, len(items))
	}
}

type unencodable struct{ C chan int }

func (unencodable) Kind() string { return "unencodable" }

type nul struct{ S string }

func (nul) Kind() string { return "nul" }

type named string

func (n named) Kind() string { return string(n) }

func TestEnqueueRejectsBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	long := strings.Repeat("x", docket.MaxNameLen+1)
	cases := []struct {
		name string
		args core.Args
		opts docket.Opts
	}{
		{"payload that fails to encode", unencodable{}, docket.Opts{}},
		{"payload with NUL", nul{S: "a\x00b"}, docket.Opts{}},
		{"empty kind", named(""), docket.Opts{}},
		{"long kind", named(long), docket.Opts{}},
		{"long queue", noop{}, docket.Opts{Queue: long}},
		{"queue with space", noop{}, docket.Opts{Queue: "a b"}},
		{"max attempts < 1", noop{}, docket.Opts{MaxAttempts: -1}},
		{"priority out of range", noop{}, docket.Opts{Priority: 11}},
		{"long unique key", noop{}, docket.Opts{UniqueKey: strings.Repeat("k", docket.MaxKeyLen+1)}},
		{"negative delay", noop{}, docket.Opts{Delay: -time.Second}},
		{"nil args", nil, docket.Opts{}},
	}
	for _, c := range cases {
		_, err := b.client.Enqueue(b.Ctx, b.Pool, c.args, c.opts)
		if !errors.Is(err, docket.ErrInvalidJob) {
			t.Errorf("%s: err = %v, want ErrInvalidJob", c.name, err)
		}
		_, err = b.client.EnqueueMany(b.Ctx, b.Pool, []docket.Item{{Args: noop{}}, {Args: c.args, Opts: c.opts}})
		if !errors.Is(err, docket.ErrInvalidJob) || !strings.Contains(err.Error(), "item 1") {
			t.Errorf("%s (bulk): err = %v, want ErrInvalidJob naming item 1", c.name, err)
		}
	}
	// The unencodable payload error names the kind and not the payload.
	_, err := b.client.Enqueue(b.Ctx, b.Pool, nul{S: "secret\x00"}, docket.Opts{})
	if err == nil || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "nul") {
		t.Errorf("error %q should name the kind and hide the payload", err)
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")); n != 0 {
		t.Fatalf("%d jobs written by bad input", n)
	}
	// A value that is no database handle does not compile: compile_test.go.
}

func TestEnqueueBeforeMigrations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	client, err := docket.NewClient(pool, docket.Config{Schema: pgtest.Schema(t)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.Enqueue(ctx, pool, noop{}, docket.Opts{})
	if !errors.Is(err, docket.ErrNotMigrated) || !strings.Contains(err.Error(), "docket migrate up") {
		t.Fatalf("err = %v, want ErrNotMigrated telling to run docket migrate up", err)
	}
	db, err := sql.Open("pgx", pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err = client.EnqueueManySQL(ctx, db, []docket.Item{{Args: noop{}}}); !errors.Is(err, docket.ErrNotMigrated) {
		t.Fatalf("database/sql: err = %v, want ErrNotMigrated", err)
	}
}

func TestNotifyOnlyForDueJobs(t *testing.T) {
	t.Parallel()
	b := setup(t, docket.Config{NotifyDebounce: time.Nanosecond})
	conn := b.listen(t)
	if _, err := b.client.Enqueue(b.Ctx, b.Pool, noop{}, docket.Opts{Queue: "later", Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.client.Enqueue(b.Ctx, b.Pool, noop{}, docket.Opts{Queue: "now"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(b.Ctx, 5*time.Second)
	defer cancel()
	n, err := conn.Conn().WaitForNotification(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n.Payload != "now" {
		t.Fatalf("notified %q, want only the due queue", n.Payload)
	}
	// A rolled-back enqueue notifies nobody.
	tx, _ := b.Pool.Begin(b.Ctx)
	if _, err := b.client.Enqueue(b.Ctx, tx, noop{}, docket.Opts{Queue: "rolledback"}); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(b.Ctx)
	short, cancel2 := context.WithTimeout(b.Ctx, 200*time.Millisecond)
	defer cancel2()
	if n, err := conn.Conn().WaitForNotification(short); err == nil {
		t.Fatalf("unexpected notification %q", n.Payload)
	}
}

func TestNotifyDebounced(t *testing.T) {
	t.Parallel()
	b := setup(t, docket.Config{NotifyDebounce: time.Hour})
	conn := b.listen(t)
	// A scheduled job sends nothing and does not use up the window.
	if _, err := b.client.Enqueue(b.Ctx, b.Pool, noop{}, docket.Opts{Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := b.client.Enqueue(b.Ctx, b.Pool, noop{}, docket.Opts{}); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for {
		ctx, cancel := context.WithTimeout(b.Ctx, 300*time.Millisecond)
		_, err := conn.Conn().WaitForNotification(ctx)
		cancel()
		if err != nil {
			break
		}
		got++
	}
	if got != 1 {
		t.Fatalf("%d notifications for 20 enqueues inside one debounce window, want 1", got)
	}
}

// listen returns a connection of the pool listening on the client's notify
// channel, released when the test ends.
func (b *bundle) listen(t *testing.T) *pgxpool.Conn {
	t.Helper()
	conn, err := b.Pool.Acquire(b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	if _, err := conn.Exec(b.Ctx, `LISTEN `+pgx.Identifier{pgsql.NotifyChannel(b.Schema)}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return conn
}

// waitFor polls cond until it holds or 10s pass.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A batch announces each of its queues with due jobs once, through pgx and
// through database/sql alike (the statement takes the queues as JSON, which
// every driver can send).
func TestEnqueueManyNotifiesDueQueues(t *testing.T) {
	t.Parallel()
	b := setup(t, docket.Config{NotifyDebounce: time.Nanosecond})
	conn := b.listen(t)
	db, err := sql.Open("pgx", pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	batch := func(prefix string) []docket.Item {
		return []docket.Item{
			{Args: noop{}, Opts: docket.Opts{Queue: prefix + "a"}},
			{Args: noop{}, Opts: docket.Opts{Queue: prefix + "b"}},
			{Args: noop{}, Opts: docket.Opts{Queue: prefix + "a"}},
			{Args: noop{}, Opts: docket.Opts{Queue: prefix + "later", Delay: time.Hour}},
		}
	}
	if _, err := b.client.EnqueueMany(b.Ctx, b.Pool, batch("pgx_")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.client.EnqueueManySQL(b.Ctx, db, batch("sql_")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		ctx, cancel := context.WithTimeout(b.Ctx, 500*time.Millisecond)
		n, err := conn.Conn().WaitForNotification(ctx)
		cancel()
		if err != nil {
			break
		}
		got = append(got, n.Payload)
	}
	slices.Sort(got)
	if want := []string{"pgx_a", "pgx_b", "sql_a", "sql_b"}; !slices.Equal(got, want) {
		t.Fatalf("notified %v, want %v", got, want)
	}
}
