package dockettest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/docketq/docket/dockettest"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/outbox"
	"github.com/jackc/pgx/v5"

	"github.com/docketq/docket"
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
	// outbox.Backoff, the default, is jittered: only its sign is known.
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
	if res.Outcome != dockettest.Dead || res.Reason != outbox.ReasonExhausted || res.Error != "later" {
		t.Fatalf("attempt 2: got %v, want dead (exhausted): later", res)
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
