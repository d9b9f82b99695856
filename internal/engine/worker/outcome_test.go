package worker

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/jackc/pgx/v5"
)

func TestCompletes(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	runs := newCounter()
	var got atomic.Value
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		runs.add(j.ID)
		got.Store(j.Args)
		return nil
	}, handlers.KindOpts{})
	e.worker(reg, Config{})
	id := e.enqueue(testArgs{N: 42}, enqueue.Opts{})
	e.waitWhere(id, "done", 10*time.Second)
	if runs.get(id) != 1 {
		t.Errorf("ran %d times", runs.get(id))
	}
	if a := got.Load().(testArgs); a.N != 42 {
		t.Errorf("args = %+v", a)
	}
	if n := e.count(`SELECT attempts FROM {{schema}}.docket_jobs_done WHERE id = $1`, id); n != 1 {
		t.Errorf("attempts = %d", n)
	}
}

func TestRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	const backoff = 300 * time.Millisecond
	runs := newCounter()
	var attempts syncSlice[int]
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		runs.add(j.ID)
		attempts.add(j.Attempt)
		if j.Attempt < 3 {
			return errors.New("boom")
		}
		return nil
	}, handlers.KindOpts{Backoff: func(int) time.Duration { return backoff }})
	// A poll interval far longer than the backoff: the retry must be
	// promoted when due, not at the next poll.
	e.worker(reg, Config{PollInterval: 10 * time.Second})
	id := e.enqueue(testArgs{}, enqueue.Opts{})
	waitFor(t, 5*time.Second, "first failure recorded", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE id = $1 AND last_error = 'boom'`, id) == 1
	})
	e.waitWhere(id, "done", 10*time.Second)
	at := runs.times(id)
	if len(at) != 3 {
		t.Fatalf("ran %d times, want 3", len(at))
	}
	for i := 1; i < len(at); i++ {
		gap := at[i].Sub(at[i-1])
		t.Logf("retry %d after %s", i, gap)
		if gap < backoff || gap > backoff+2*time.Second {
			t.Errorf("retry %d after %s, want about %s", i, gap, backoff)
		}
	}
	if a := attempts.get(); len(a) != 3 || a[0] != 1 || a[2] != 3 {
		t.Errorf("attempts seen = %v", a)
	}
}

func TestExhaustedAttemptsDeadLetter(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	runs := newCounter()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		runs.add(j.ID)
		return errors.New("always fails")
	}, handlers.KindOpts{MaxAttempts: 3, Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
	e.worker(reg, Config{})

	// Enqueued by a client that does not know the kind: the built-in
	// default (25 attempts) is stored, and it is what the job gets.
	plain := e.enqueue(testArgs{}, enqueue.Opts{})
	// Enqueued with the registry as the enqueue engine's Kinds: the kind's 3.
	byKind := enqueueVia(t, e, e.kindsClient(reg), testArgs{}, enqueue.Opts{})
	for id, want := range map[int64]int{plain: enqueue.DefaultMaxAttempts, byKind: 3} {
		e.waitWhere(id, "dead", 30*time.Second)
		d := e.dead(id)
		if d.reason != core.ReasonExhausted || d.attempts != want || d.lastError != "always fails" {
			t.Errorf("job %d dead: %+v, want exhausted after %d attempts", id, d, want)
		}
		if runs.get(id) != want {
			t.Errorf("job %d ran %d times, want %d", id, runs.get(id), want)
		}
		if n := e.count(`SELECT max_attempts FROM {{schema}}.docket_jobs_dead WHERE id = $1`, id); n != want {
			t.Errorf("job %d: max_attempts = %d, want %d", id, n, want)
		}
	}
}

func TestSnoozeSpendsNoAttempt(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	runs := newCounter()
	var attempts syncSlice[int]
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		attempts.add(j.Attempt)
		if runs.add(j.ID) <= 2 {
			return handlers.Snooze(50 * time.Millisecond)
		}
		return nil
	}, handlers.KindOpts{})
	e.worker(reg, Config{PollInterval: 10 * time.Second})
	id := e.enqueue(testArgs{}, enqueue.Opts{MaxAttempts: 1})
	e.waitWhere(id, "done", 10*time.Second)
	if runs.get(id) != 3 {
		t.Errorf("ran %d times, want 3", runs.get(id))
	}
	for _, a := range attempts.get() {
		if a != 1 {
			t.Errorf("attempts seen = %v, want all 1 (a snooze is not an attempt)", attempts.get())
			break
		}
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	runs := newCounter()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		if runs.add(j.ID) == 1 {
			return handlers.RetryAfter(200*time.Millisecond, errors.New("rate limited"))
		}
		return nil
	}, handlers.KindOpts{Backoff: func(int) time.Duration { return time.Hour }})
	e.worker(reg, Config{PollInterval: 10 * time.Second})
	id := e.enqueue(testArgs{}, enqueue.Opts{})
	e.waitWhere(id, "done", 10*time.Second)
	at := runs.times(id)
	if len(at) != 2 {
		t.Fatalf("ran %d times", len(at))
	}
	if gap := at[1].Sub(at[0]); gap < 200*time.Millisecond || gap > 3*time.Second {
		t.Errorf("retried after %s, want about 200ms", gap)
	}
	if n := e.count(`SELECT attempts FROM {{schema}}.docket_jobs_done WHERE id = $1`, id); n != 2 {
		t.Errorf("attempts = %d, want 2 (RetryAfter spends an attempt)", n)
	}
}

func TestCancelDeadLettersAtOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	runs := newCounter()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		runs.add(j.ID)
		return handlers.Cancel(errors.New("customer deleted"))
	}, handlers.KindOpts{})
	e.worker(reg, Config{})
	id := e.enqueue(testArgs{}, enqueue.Opts{})
	e.waitWhere(id, "dead", 10*time.Second)
	d := e.dead(id)
	if d.reason != core.ReasonCancelled || d.attempts != 1 || d.lastError != "customer deleted" {
		t.Errorf("dead: %+v", d)
	}
	if runs.get(id) != 1 {
		t.Errorf("ran %d times", runs.get(id))
	}
}

func TestPanicRecordedWithStackWithoutPayload(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		var m map[string]int
		m["x"] = j.Args.N // nil map write: a runtime panic
		return nil
	}, handlers.KindOpts{})
	e.worker(reg, Config{})
	id := e.enqueue(testArgs{N: 7, Secret: "s3cr3t-card-number"}, enqueue.Opts{MaxAttempts: 1})
	e.waitWhere(id, "dead", 10*time.Second)
	d := e.dead(id)
	if d.reason != core.ReasonExhausted {
		t.Errorf("reason %q", d.reason)
	}
	if !strings.HasPrefix(d.lastError, "panic: assignment to entry in nil map") || !strings.Contains(d.lastError, "goroutine ") ||
		!strings.Contains(d.lastError, "TestPanicRecordedWithStackWithoutPayload") {
		t.Errorf("last_error has no panic message and stack:\n%s", d.lastError)
	}
	for _, where := range []string{d.lastError, e.logs.String()} {
		if strings.Contains(where, "s3cr3t") {
			t.Errorf("payload leaked:\n%s", where)
		}
	}
	if !strings.Contains(e.logs.String(), "job handler panicked") {
		t.Errorf("panic not logged")
	}
}

func TestTimeoutCountsAsFailure(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	var cause atomic.Value
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		<-ctx.Done()
		cause.Store(context.Cause(ctx))
		return ctx.Err()
	}, handlers.KindOpts{Timeout: 100 * time.Millisecond})
	e.worker(reg, Config{})
	id := e.enqueue(testArgs{}, enqueue.Opts{MaxAttempts: 1})
	e.waitWhere(id, "dead", 10*time.Second)
	d := e.dead(id)
	if d.reason != core.ReasonExhausted || !strings.HasPrefix(d.lastError, "timed out after 100ms") {
		t.Errorf("dead: %+v", d)
	}
	if c, _ := cause.Load().(error); !errors.Is(c, core.ErrTimeout) {
		t.Errorf("context cause %v, want core.ErrTimeout", c)
	}
}

// wrongArgs has the kind of testArgs but a payload that does not decode into it.
type wrongArgs struct {
	N string `json:"n"`
}

func (wrongArgs) Kind() string { return "test" }

func TestUndecodablePayloadDeadAtOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	runs := atomic.Int64{}
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		runs.Add(1)
		return nil
	}, handlers.KindOpts{})
	e.worker(reg, Config{})
	id := e.enqueue(wrongArgs{N: "s3cr3t-value"}, enqueue.Opts{})
	e.waitWhere(id, "dead", 10*time.Second)
	d := e.dead(id)
	if d.reason != core.ReasonUndecodable || d.attempts != 1 {
		t.Errorf("dead: %+v", d)
	}
	if !strings.Contains(d.lastError, "kind test") || !strings.Contains(d.lastError, "worker.testArgs") ||
		!strings.Contains(d.lastError, "field n") {
		t.Errorf("unclear error: %s", d.lastError)
	}
	if strings.Contains(d.lastError+e.logs.String(), "s3cr3t") {
		t.Errorf("payload leaked: %s", d.lastError)
	}
	if runs.Load() != 0 {
		t.Errorf("handler ran")
	}
}

func TestTxHandlerCommitsAndRollsBack(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	e.exec(`CREATE TABLE {{schema}}.effects (job_id bigint, n int)`)
	reg := handlers.NewRegistry()
	handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[testArgs]) error {
		if _, err := tx.Exec(ctx, e.sql(`INSERT INTO {{schema}}.effects VALUES ($1, $2)`), j.ID, j.Args.N); err != nil {
			return err
		}
		if j.Args.N < 0 {
			return errors.New("negative")
		}
		if j.Args.N == 0 {
			panic("zero")
		}
		return nil
	}, handlers.KindOpts{Backoff: func(int) time.Duration { return 0 }})
	e.worker(reg, Config{})
	ok := e.enqueue(testArgs{N: 1}, enqueue.Opts{MaxAttempts: 2})
	bad := e.enqueue(testArgs{N: -1}, enqueue.Opts{MaxAttempts: 2})
	boom := e.enqueue(testArgs{N: 0}, enqueue.Opts{MaxAttempts: 2})
	e.waitWhere(ok, "done", 10*time.Second)
	e.waitWhere(bad, "dead", 10*time.Second)
	e.waitWhere(boom, "dead", 10*time.Second)
	if n := e.count(`SELECT count(*) FROM {{schema}}.effects WHERE job_id = $1`, ok); n != 1 {
		t.Errorf("committed job has %d effects, want 1", n)
	}
	for _, id := range []int64{bad, boom} {
		if n := e.count(`SELECT count(*) FROM {{schema}}.effects WHERE job_id = $1`, id); n != 0 {
			t.Errorf("failed job %d left %d effects, want 0 (rolled back)", id, n)
		}
		if d := e.dead(id); d.attempts != 2 {
			t.Errorf("failed job %d: %+v", id, d)
		}
	}
	if d := e.dead(boom); !strings.HasPrefix(d.lastError, "panic: zero") {
		t.Errorf("panic in tx handler recorded as %q", d.lastError)
	}
}

func TestLeaseLostCancelsHandlerAndDropsOutcome(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	started := make(chan int64, 1)
	var cause atomic.Value
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		started <- j.ID
		<-ctx.Done()
		cause.Store(context.Cause(ctx))
		return nil // an outcome that must not be written
	}, handlers.KindOpts{})
	e.worker(reg, Config{Lease: 2 * time.Second, HeartbeatInterval: 50 * time.Millisecond})
	id := e.enqueue(testArgs{}, enqueue.Opts{})
	<-started
	// Another worker takes the job over, as after a reap and a new claim.
	e.exec(`UPDATE {{schema}}.docket_jobs SET locked_by = gen_random_uuid(), attempts = 2 WHERE id = $1`, id)
	waitFor(t, 5*time.Second, "handler cancelled", func() bool { return cause.Load() != nil })
	if c := cause.Load().(error); !errors.Is(c, core.ErrLeaseLost) {
		t.Errorf("cause %v, want core.ErrLeaseLost", c)
	}
	waitFor(t, 5*time.Second, "drop logged", func() bool { return strings.Contains(e.logs.String(), "outcome dropped") })
	if s := e.where(id); s != "running" {
		t.Errorf("job is %s, want still running for its new owner", s)
	}
	if n := e.count(`SELECT attempts FROM {{schema}}.docket_jobs WHERE id = $1`, id); n != 2 {
		t.Errorf("new owner's row changed: attempts %d", n)
	}
}

func TestUnknownKindsAreNeverClaimed(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error { return nil }, handlers.KindOpts{})
	other := e.enqueue(otherArgs{}, enqueue.Opts{})
	var known []int64
	for i := range 20 {
		known = append(known, e.enqueue(testArgs{N: i}, enqueue.Opts{}))
	}
	e.worker(reg, Config{})
	// The unknown job is first in the queue's order: had the worker been
	// willing to claim it, it would have before any of these.
	for _, id := range known {
		e.waitWhere(id, "done", 10*time.Second)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE id = $1 AND state = 'ready'
		AND attempts = 0 AND locked_by IS NULL`, other); n != 1 {
		t.Errorf("job of an unregistered kind was touched (where: %s)", e.where(other))
	}
}

func TestMiddlewareOrderAndLogAttrs(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	var order syncSlice[string]
	mw := func(name string) core.Middleware {
		return func(next core.Work) core.Work {
			return func(ctx context.Context, job *core.Job) error {
				order.add(name + ">")
				err := next(ctx, job)
				order.add("<" + name)
				return err
			}
		}
	}
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		order.add("handler")
		return errors.New("handler failed")
	}, handlers.KindOpts{})
	logs := newLogBuffer(t)
	e.worker(reg, Config{Middleware: []core.Middleware{mw("a"), mw("b"), handlers.Logging(logs.logger())}})
	id := e.enqueue(testArgs{Secret: "s3cr3t"}, enqueue.Opts{Queue: "default", MaxAttempts: 1})
	e.waitWhere(id, "dead", 10*time.Second)
	if got := strings.Join(order.get(), " "); got != "a> b> handler <b <a" {
		t.Errorf("order %q", got)
	}
	line := logs.String()
	for _, want := range []string{"job_id=", "kind=test", "attempt=1", "queue=default", "handler failed"} {
		if !strings.Contains(line, want) {
			t.Errorf("log lacks %q: %s", want, line)
		}
	}
	if strings.Contains(line+e.logs.String(), "s3cr3t") {
		t.Errorf("payload logged")
	}
}
