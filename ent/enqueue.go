package ent

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/docketq/docket"
)

// Tx is an Ent transaction (the *Tx of your generated package) built with
// the sql/execquery feature, which gives it ExecContext and QueryContext.
// Commit and Rollback are part of the interface so that only a transaction,
// never an Ent client, can be passed where atomicity is promised.
type Tx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	Commit() error
	Rollback() error
}

// Enqueuer writes jobs through database/sql: a *docket.Client. Its
// Config.Registry decides the defaults applied and the kinds accepted, as
// on every other enqueue path.
type Enqueuer interface {
	EnqueueSQL(ctx context.Context, db docket.SQLDB, args docket.Args, opts docket.Opts) (docket.Enqueued, error)
	EnqueueManySQL(ctx context.Context, db docket.SQLDB, items []docket.Item) ([]docket.Enqueued, error)
}

// ErrNilTx is returned by Enqueue and EnqueueMany for a nil transaction.
var ErrNilTx = errors.New("docket: nil Ent transaction")

// Enqueue writes one job inside the Ent transaction tx: the job commits or
// rolls back with the Ent writes made in tx. It behaves exactly like
// docket.Client.Enqueue with a pgx transaction: invalid args or options
// return an docket.ErrInvalidJob error, a kind the client's registry does
// not know an docket.ErrUnknownKind error; a unique key held by an in-flight
// job inserts nothing and reports that job's id with Duplicate set. The
// payload is sent as JSON text, so it is stored as a jsonb object, not as
// bytea.
//
// Invalid jobs, including values PostgreSQL cannot store, and missing
// tables (docket.ErrNotMigrated) are found before anything is sent, so tx
// stays usable. Any other error from the database leaves tx unusable
// (PostgreSQL aborts the transaction): roll it back.
func Enqueue(ctx context.Context, c Enqueuer, tx Tx, args docket.Args, opts docket.Opts) (docket.Enqueued, error) {
	if tx == nil {
		return docket.Enqueued{}, ErrNilTx
	}
	return c.EnqueueSQL(ctx, tx, args, opts)
}

// EnqueueMany writes many jobs inside the Ent transaction tx and returns one
// result per item, in order, as docket.Client.EnqueueMany does (a taken
// unique key makes that item a Duplicate and never fails the batch). Over
// database/sql the jobs go in with set-based inserts; COPY is pgx-only.
func EnqueueMany(ctx context.Context, c Enqueuer, tx Tx, items []docket.Item) ([]docket.Enqueued, error) {
	if tx == nil {
		return nil, ErrNilTx
	}
	return c.EnqueueManySQL(ctx, tx, items)
}

// TxStarter is an Ent client: its Tx method begins a transaction of the
// generated package's *Tx type.
type TxStarter[T Tx] interface {
	Tx(ctx context.Context) (T, error)
}

// WithTx runs fn in a new transaction of client and commits it if fn
// returns nil. If fn returns an error the transaction is rolled back and the
// error returned; if fn panics, it is rolled back and the panic continues.
// Domain rows written by fn and jobs it enqueues (Enqueue, or Hook) thus
// commit together or not at all.
func WithTx[T Tx](ctx context.Context, client TxStarter[T], fn func(tx T) error) (err error) {
	tx, err := client.Tx(ctx)
	if err != nil {
		return fmt.Errorf("docket: begin Ent transaction: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			// The error that matters is fn's (or the panic); a failed
			// rollback only means the connection is already gone.
			_ = tx.Rollback()
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	committed = true
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("docket: commit Ent transaction: %w", err)
	}
	return nil
}
