package dockettest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/dockettest"
	"github.com/docketq/docket/handlers"
	"github.com/jackc/pgx/v5"
)

func TestWorkUnregisteredKind(t *testing.T) {
	t.Parallel()
	reg := handlers.NewRegistry()
	wantFailure(t, failure(func(ft dockettest.T) { dockettest.Work(ft, reg, EmailArgs{}, nil) }),
		`kind "email" is not registered`)
}

func TestWorkTransactionalNeedsDB(t *testing.T) {
	t.Parallel()
	reg := handlers.NewRegistry()
	handlers.MustRegisterTx(reg, func(context.Context, pgx.Tx, *handlers.Job[EmailArgs]) error { return nil }, handlers.KindOpts{})
	wantFailure(t, failure(func(ft dockettest.T) { dockettest.Work(ft, reg, EmailArgs{}, nil) }),
		`kind "email" is transactional and needs a database`)
}

func TestWorkTimeout(t *testing.T) {
	t.Parallel()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, _ *handlers.Job[EmailArgs]) error {
		<-ctx.Done()
		return ctx.Err()
	}, handlers.KindOpts{Timeout: 10 * time.Millisecond})
	res := dockettest.Work(t, reg, EmailArgs{}, nil)
	// handlers.Backoff, the default, is jittered: only its sign is known.
	if res.Outcome != dockettest.Retried || !res.TimedOut || res.Delay <= 0 || !errors.Is(res.Err, context.DeadlineExceeded) {
		t.Fatalf("got %+v, want retried after a backoff, timed out", res)
	}
}

func TestWorkKindMaxAttempts(t *testing.T) {
	t.Parallel()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[EmailArgs]) error {
		return handlers.RetryAfter(time.Hour, errors.New("later"))
	}, handlers.KindOpts{MaxAttempts: 2})
	if res := dockettest.Work(t, reg, EmailArgs{}, nil); res.Outcome != dockettest.Retried || res.Delay != time.Hour {
		t.Fatalf("attempt 1: got %v, want retried in 1h", res)
	}
	res := dockettest.Work(t, reg, EmailArgs{}, &dockettest.WorkOpts{Attempt: 2})
	if res.Outcome != dockettest.Dead || res.Reason != admin.ReasonExhausted || res.Error != "later" {
		t.Fatalf("attempt 2: got %v, want dead (exhausted): later", res)
	}
}

// The job's own limit decides, more or fewer than the kind's, and a job
// without one gets what an enqueue would have stored: the kind's.
func TestWorkJobMaxAttempts(t *testing.T) {
	t.Parallel()
	reg := handlers.NewRegistry()
	var queue string
	var prio int
	handlers.MustRegister(reg, func(_ context.Context, j *handlers.Job[EmailArgs]) error {
		queue, prio = j.Queue, j.Priority
		return handlers.RetryAfter(time.Hour, errors.New("later"))
	}, handlers.KindOpts{Queue: "mail", Priority: 3, MaxAttempts: 2})
	for _, c := range []struct {
		attempt, max int
		want         dockettest.Outcome
	}{
		{2, 5, dockettest.Retried}, // more than the kind's
		{5, 5, dockettest.Dead},
		{1, 1, dockettest.Dead}, // fewer
		{1, 0, dockettest.Retried},
		{2, 0, dockettest.Dead}, // the kind's
	} {
		res := dockettest.Work(t, reg, EmailArgs{}, &dockettest.WorkOpts{Attempt: c.attempt, MaxAttempts: c.max})
		if res.Outcome != c.want {
			t.Errorf("attempt %d of max attempts %d: %v, want %s", c.attempt, c.max, res, c.want)
		}
	}
	if queue != "mail" || prio != 3 {
		t.Errorf("handler saw queue %q priority %d, want the kind's mail 3", queue, prio)
	}
}

func TestWorkMiddlewareAndJob(t *testing.T) {
	t.Parallel()
	reg := handlers.NewRegistry()
	var seen string
	handlers.MustRegister(reg, func(_ context.Context, j *handlers.Job[EmailArgs]) error {
		seen = j.Tenant + "/" + j.Args.To
		return nil
	}, handlers.KindOpts{})
	snooze := func(next handlers.Work) handlers.Work {
		return func(ctx context.Context, job *docket.Job) error {
			if err := next(ctx, job); err != nil {
				return err
			}
			return handlers.Snooze(time.Second)
		}
	}
	res := dockettest.Work(t, reg, EmailArgs{To: "ada@example.com"}, &dockettest.WorkOpts{
		Middleware: []handlers.Middleware{snooze},
		Job:        &docket.Job{Tenant: "acme", Kind: "ignored"},
	})
	if res.Outcome != dockettest.Snoozed || res.Delay != time.Second {
		t.Fatalf("got %v, want the middleware's snooze", res)
	}
	if seen != "acme/ada@example.com" {
		t.Fatalf("handler saw %q", seen)
	}
}

// A workflow step is run with its parents' results, and what it records is
// returned.
func TestWorkParentResultsAndRecorded(t *testing.T) {
	t.Parallel()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(_ context.Context, j *handlers.Job[EmailArgs]) error {
		var n int
		if err := j.ParentResult("count", &n); err != nil {
			return err
		}
		if err := j.ParentResult("silent", &n); !errors.Is(err, handlers.ErrNoResult) {
			return fmt.Errorf("silent: %v", err)
		}
		return j.SetResult(map[string]int{"sent": n})
	}, handlers.KindOpts{})
	res := dockettest.Work(t, reg, EmailArgs{}, &dockettest.WorkOpts{ParentResults: map[string]any{"count": 3, "silent": nil}})
	if res.Outcome != dockettest.Completed || string(res.Recorded) != `{"sent":3}` {
		t.Errorf("got %s, recorded %s", res, res.Recorded)
	}
	if res := dockettest.Work(t, reg, EmailArgs{}, nil); res.Outcome != dockettest.Retried || !errors.Is(res.Err, handlers.ErrNotParent) || res.Recorded != nil {
		t.Errorf("without parents: %s, recorded %s", res, res.Recorded)
	}
}
