package queue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/jobtest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Complete hands each completed holder's key to the next in its line in
// its own statement, with or without history and results, on a pool and
// in a caller's transaction: with the per-row trigger turned off, every
// line still moves on, one job per key per round, in order, and the
// queue is announced.
func TestCompleteHandsSerialKeysOn(t *testing.T) {
	t.Parallel()
	for _, history := range []bool{true, false} {
		for _, results := range []bool{false, true} {
			for _, inTx := range []bool{false, true} {
				for _, trigger := range []bool{false, true} {
					name := fmt.Sprintf("history=%v/results=%v/tx=%v/trigger=%v", history, results, inTx, trigger)
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						completeSerialLines(t, history, results, inTx, trigger)
					})
				}
			}
		}
	}
}

func completeSerialLines(t *testing.T, history, results, inTx, trigger bool) {
	const keys, perKey = 3, 4
	b := setup(t, queue.Config{DisableHistory: !history})
	if !trigger {
		if _, err := b.Pool.Exec(b.Ctx, `ALTER TABLE `+b.Table("docket_jobs")+` DISABLE TRIGGER docket_jobs_serial_pass`); err != nil {
			t.Fatal(err)
		}
	}
	items := make([]enqueue.Item, 0, keys*perKey)
	for i := range keys * perKey {
		items = append(items, enqueue.Item{Args: jobtest.Noop{N: i}, Opts: enqueue.Opts{SerialKey: fmt.Sprintf("k%d", i%keys)}})
	}
	if _, err := b.Jobs.EnqueueMany(b.Ctx, b.Pool, items); err != nil {
		t.Fatal(err)
	}
	listen, err := b.Pool.Acquire(b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer listen.Release()
	if _, err := listen.Exec(b.Ctx, `LISTEN `+pgx.Identifier{pgsql.NotifyChannel(b.Schema)}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	w := uuid.New()
	for round := range perKey {
		jobs := b.Claim(t, w, 100, time.Minute)
		if len(jobs) != keys {
			t.Fatalf("round %d: claimed %d jobs, want one per key (%d)", round, len(jobs), keys)
		}
		for _, j := range jobs {
			var a jobtest.Noop
			if err := json.Unmarshal(j.Payload, &a); err != nil {
				t.Fatal(err)
			}
			if want := round*keys + a.N%keys; a.N != want {
				t.Errorf("round %d, key %s: job n=%d, want n=%d", round, j.SerialKey, a.N, want)
			}
			if results {
				core.SetResult(j, json.RawMessage(`{"ok":true}`))
			}
		}
		complete(t, b, w, jobs, inTx)
		if round == perKey-1 {
			break
		}
		ctx, cancel := context.WithTimeout(b.Ctx, 10*time.Second)
		n, err := listen.Conn().WaitForNotification(ctx)
		cancel()
		if err != nil {
			t.Fatalf("round %d: no announcement of the heads made ready: %v", round, err)
		}
		if n.Payload != "default" {
			t.Errorf("announced %q, want the queue default", n.Payload)
		}
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")); n != 0 {
		t.Errorf("%d jobs left, want none", n)
	}
}

func complete(t *testing.T, b *bundle, w uuid.UUID, jobs []*core.Job, inTx bool) {
	t.Helper()
	var db queue.DB = b.Pool
	var tx pgx.Tx
	if inTx {
		var err error
		if tx, err = b.Pool.Begin(b.Ctx); err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(b.Ctx)
		db = tx
	}
	done, err := b.Q.Complete(b.Ctx, db, w, jobtest.RunsOf(jobs), time.Time{})
	if err != nil || len(done) != len(jobs) {
		t.Fatalf("complete: %d of %d, %v", len(done), len(jobs), err)
	}
	if tx != nil {
		if err := tx.Commit(b.Ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// CompleteHandOn claims, in the completion's transaction, the next job of
// each completed key that the worker may take, and leaves the others
// ready and announced.
func TestCompleteHandOnClaimsNextOfKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 4 {
		if _, err := b.Jobs.Enqueue(b.Ctx, b.Pool, jobtest.Noop{N: i}, enqueue.Opts{SerialKey: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	other, err := b.Jobs.Enqueue(b.Ctx, b.Pool, jobtest.Other{}, enqueue.Opts{SerialKey: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Jobs.Enqueue(b.Ctx, b.Pool, jobtest.Other{}, enqueue.Opts{SerialKey: "b"}); err != nil {
		t.Fatal(err)
	}
	listen, err := b.Pool.Acquire(b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer listen.Release()
	if _, err := listen.Exec(b.Ctx, `LISTEN `+pgx.Identifier{pgsql.NotifyChannel(b.Schema)}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	w := uuid.New()
	jobs, err := b.Q.Claim(b.Ctx, b.Pool, queue.ClaimParams{
		Worker: w, Queues: []string{"default"}, Kinds: []string{"noop", "other"}, Limit: 10, Lease: time.Minute,
	})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("claimed %d heads, want 2 (%v)", len(jobs), err)
	}
	// The worker takes only noop: key a's next is handed on, key b's is left.
	on := queue.HandOn{Queues: []string{"default"}, Kinds: []string{"noop"}, Lease: time.Minute}
	for n := 1; n < 4; n++ {
		done, handed, err := b.Q.CompleteHandOn(b.Ctx, b.Pool, w, jobtest.RunsOf(jobs), time.Time{}, on)
		if err != nil || len(done) != len(jobs) {
			t.Fatalf("complete: %d of %d, %v", len(done), len(jobs), err)
		}
		if len(handed) != 1 {
			t.Fatalf("handed %d jobs, want key a's next", len(handed))
		}
		var a jobtest.Noop
		if err := json.Unmarshal(handed[0].Payload, &a); err != nil || a.N != n || handed[0].SerialKey != "a" {
			t.Fatalf("handed job %s of key %q, want n=%d of key a", handed[0].Payload, handed[0].SerialKey, n)
		}
		if handed[0].Attempt != 1 || handed[0].ClaimID == 0 {
			t.Errorf("handed job: attempt %d, claim %d; want a claimed first attempt", handed[0].Attempt, handed[0].ClaimID)
		}
		jobs = handed
		if n == 1 {
			ctx, cancel := context.WithTimeout(b.Ctx, 10*time.Second)
			note, err := listen.Conn().WaitForNotification(ctx)
			cancel()
			if err != nil || note.Payload != "default" {
				t.Fatalf("key b's head left ready was not announced: %v %v", note, err)
			}
		}
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE state = 'ready' AND serial_key = 'b' AND id <> $1`, other.ID); n != 1 {
		t.Errorf("key b: %d ready jobs after its head, want its next one", n)
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE state = 'running' AND locked_by = $1`, w); n != 1 {
		t.Errorf("%d jobs running for the worker, want key a's last", n)
	}
}

// A serial completion runs with a generic plan from its first run, on a
// connection as on a pool, with and without the hand-on: the plan cache
// would otherwise plan it on each of its first five runs, and on every run
// where it finds the custom plans cheaper (seen with 10,000 jobs in 20
// lines: every run planned).
func TestSerialCompletionsUseGenericPlans(t *testing.T) {
	t.Parallel()
	b := setup(t)
	conn, err := b.Pool.Acquire(b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	w := uuid.New()
	runs := []queue.Run{{ID: 1, ClaimID: 1, SerialKey: "a"}} // nobody's: nothing completes
	on := queue.HandOn{Queues: []string{"default"}, Kinds: []string{"noop"}, Lease: time.Minute}
	for range 7 {
		if _, _, err := b.Q.CompleteHandOn(b.Ctx, conn, w, runs, time.Time{}, on); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Q.Complete(b.Ctx, conn, w, runs, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := conn.Query(b.Ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements
		WHERE statement LIKE '%docket_jobs_done%' AND statement LIKE '%UPDATE%'
			AND statement NOT LIKE '%pg_prepared_statements%'`)
	if err != nil {
		t.Fatal(err)
	}
	type plans struct{ Generic, Custom int64 }
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[plans])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d serial completion statements prepared, want 2 (with and without the hand-on)", len(got))
	}
	for _, p := range got {
		if p.Custom != 0 || p.Generic != 7 {
			t.Errorf("a serial completion ran %d times with a custom plan and %d with the generic one, want 0 and 7", p.Custom, p.Generic)
		}
	}
}
