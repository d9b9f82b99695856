package dockettest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/dockettest"
	"github.com/docketq/docket/handlers"
	"github.com/jackc/pgx/v5"
)

// Assert on the jobs a transaction enqueued, before it commits. Given the
// service's registry, the test's client applies the kinds' registered
// options, as the service's own client does.
func ExampleRequireEnqueued() {
	t := &exampleT{}
	defer t.done()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[EmailArgs]) error { return nil },
		handlers.KindOpts{Queue: "mail"})
	db := dockettest.NewDB(t, dockettest.WithRegistry(reg))
	ctx := context.Background()

	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		// The code under test enqueues in its transaction. It names no
		// queue: the kind's, "mail", applies.
		_, err := db.Client.Enqueue(ctx, tx, EmailArgs{To: "ada@example.com", Subject: "Welcome"},
			docket.Opts{Priority: 2, UniqueKey: "welcome:ada"})
		if err != nil {
			return err
		}
		// Only the fields of the expected args are compared: Subject is
		// left out of the JSON when empty.
		job := dockettest.RequireEnqueued(t, tx, EmailArgs{To: "ada@example.com"},
			&dockettest.RequireOpts{Queue: "mail", Priority: new(2), UniqueKey: "welcome:ada"})
		fmt.Println(job.Kind, job.Queue, string(job.Payload))

		dockettest.RequireNotEnqueued(t, tx, EmailArgs{To: "bob@example.com"}, nil)
		return nil
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// email mail {"to": "ada@example.com", "subject": "Welcome"}
}

// The untyped form names the kind and takes any JSON object.
func ExampleRequireEnqueuedKind() {
	t := &exampleT{}
	defer t.done()
	db := dockettest.NewDB(t)
	ctx := context.Background()

	at := time.Now().Add(time.Hour)
	if _, err := db.Client.Enqueue(ctx, db.Pool, EmailArgs{To: "ada@example.com"}, docket.Opts{RunAt: at}); err != nil {
		panic(err)
	}
	job := dockettest.RequireEnqueuedKind(t, db.Pool, "email", map[string]any{"to": "ada@example.com"},
		&dockettest.RequireOpts{ScheduledAt: at, Tolerance: time.Second})
	fmt.Println(job.Kind, job.Attempt)
	// Output:
	// email 0
}

// RequireManyEnqueued checks every job, in the order they were enqueued.
func ExampleRequireManyEnqueued() {
	t := &exampleT{}
	defer t.done()
	db := dockettest.NewDB(t)
	ctx := context.Background()

	for _, to := range []string{"ada@example.com", "bob@example.com"} {
		if _, err := db.Client.Enqueue(ctx, db.Pool, EmailArgs{To: to}, docket.Opts{}); err != nil {
			panic(err)
		}
	}
	jobs := dockettest.RequireManyEnqueued(t, db.Pool, []dockettest.Expected{
		{Args: EmailArgs{To: "ada@example.com"}},
		{Args: EmailArgs{To: "bob@example.com"}, Opts: &dockettest.RequireOpts{Queue: "default"}},
	})
	fmt.Println(len(jobs))
	// Output:
	// 2
}
