package dockettest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docketq/docket/dockettest"
	"github.com/docketq/docket/handlers"
	"github.com/jackc/pgx/v5"
)

// Work runs one job through its handler and says what a worker would do
// next, with no worker and no database.
func ExampleWork() {
	t := &exampleT{}
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[EmailArgs]) error {
		switch j.Args.To {
		case "":
			return handlers.Cancel(errors.New("no recipient"))
		case "busy@example.com":
			return handlers.Snooze(time.Minute)
		case "down@example.com":
			return errors.New("smtp: connection refused")
		case "crash@example.com":
			panic("nil map")
		}
		return nil
	}, handlers.KindOpts{MaxAttempts: 3, Backoff: func(attempt int) time.Duration { return time.Duration(attempt) * time.Second }})

	fmt.Println(dockettest.Work(t, reg, EmailArgs{To: "ada@example.com"}, nil))
	fmt.Println(dockettest.Work(t, reg, EmailArgs{}, nil))
	fmt.Println(dockettest.Work(t, reg, EmailArgs{To: "busy@example.com"}, nil))
	fmt.Println(dockettest.Work(t, reg, EmailArgs{To: "down@example.com"}, &dockettest.WorkOpts{Attempt: 2}))
	fmt.Println(dockettest.Work(t, reg, EmailArgs{To: "down@example.com"}, &dockettest.WorkOpts{Attempt: 3}))

	res := dockettest.Work(t, reg, EmailArgs{To: "crash@example.com"}, nil)
	var pe *handlers.PanicError
	fmt.Println(res.Outcome, res.Delay, errors.As(res.Err, &pe), pe.Value)

	res = dockettest.WorkJSON(t, reg, "email", []byte(`{"to": 42}`), nil)
	fmt.Println(res.Outcome, res.Reason)
	// Output:
	// completed
	// cancelled: no recipient
	// snoozed in 1m0s
	// retried in 2s: smtp: connection refused
	// dead (exhausted): smtp: connection refused
	// retried 1s true nil map
	// dead undecodable
}

// A transactional handler runs in a transaction from WorkOpts.DB, committed
// when it succeeds and rolled back when it fails, as in a worker.
func ExampleWork_transactional() {
	t := &exampleT{}
	defer t.done()
	db := dockettest.NewDB(t)
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE sent (address text)`); err != nil {
		panic(err)
	}
	reg := handlers.NewRegistry()
	handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[EmailArgs]) error {
		if _, err := tx.Exec(ctx, `INSERT INTO sent VALUES ($1)`, j.Args.To); err != nil {
			return err
		}
		if j.Args.Subject == "fail" {
			return errors.New("refused")
		}
		return nil
	}, handlers.KindOpts{})

	fmt.Println(dockettest.Work(t, reg, EmailArgs{To: "ada@example.com"}, &dockettest.WorkOpts{DB: db.Pool}).Outcome)
	fmt.Println(dockettest.Work(t, reg, EmailArgs{To: "bob@example.com", Subject: "fail"}, &dockettest.WorkOpts{DB: db.Pool}).Outcome)
	var sent []string
	rows, _ := db.Pool.Query(ctx, `SELECT address FROM sent`)
	sent, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		panic(err)
	}
	fmt.Println(sent)
	// Output:
	// completed
	// retried
	// [ada@example.com]
}
