package ent

import (
	"context"
	"errors"
	"fmt"

	entgo "entgo.io/ent"
	"github.com/docketq/docket"
)

// ErrNoTx is returned by a Hook's mutation that does not run in an Ent
// transaction. The mutation itself is not run, so nothing is written.
var ErrNoTx = errors.New("docket: Ent mutation with a Docket hook must run in a transaction (client.Tx); nothing was written")

// TxMutation is what a Hook needs of an Ent mutation: every mutation type
// your package generates (e.g. *ent.ShipmentMutation) has it; its Tx method
// returns the transaction the mutation runs in, or an error outside one.
type TxMutation[T Tx] interface {
	entgo.Mutation
	Tx() (T, error)
}

// JobsFunc returns the jobs to enqueue for a mutation that has succeeded. m
// is the mutation (after the write: for a create, m.ID() is set) and v is
// what it returned (the entity for single-node operations, the number of
// affected rows for bulk ones). Returning no items enqueues nothing; an
// error fails the mutation, and the caller should roll its transaction back.
type JobsFunc[M any] func(ctx context.Context, m M, v entgo.Value) ([]docket.Item, error)

// Hook returns an ent.Hook that enqueues the jobs of jobs in the same
// transaction as the mutation it is attached to, through c. Attach it to a
// schema's client (client.Shipment.Use) or, with your generated hook
// package, filter it by operation (hook.On(h, ent.OpCreate)).
//
// The mutation must run in a transaction: outside one the hook returns an
// error wrapping ErrNoTx before the mutation runs, so neither the row nor a
// job is written. Docket never writes a job next to a mutation that could
// commit without it. A mutation of another type than M fails the same way,
// with an error naming both types (the hook was attached to the wrong
// schema).
//
// M is your generated mutation type and T your generated *Tx; both are
// inferred from jobs:
//
//	client.Shipment.Use(docketent.Hook(dc, func(ctx context.Context, m *ent.ShipmentMutation, v ent.Value) ([]docket.Item, error) { ... }))
func Hook[M TxMutation[T], T Tx](c Enqueuer, jobs JobsFunc[M]) entgo.Hook {
	return txHook(jobs, func(ctx context.Context, tx T, m entgo.Mutation, it docket.Item) error {
		if _, err := c.EnqueueSQL(ctx, tx, it.Args, it.Opts); err != nil {
			return fmt.Errorf("docket: %s %s: enqueue %s: %w", m.Op(), m.Type(), kindOf(it), err)
		}
		return nil
	})
}

// txHook is the hook shape Hook and PublishHook share: it refuses a
// mutation of another type or outside a transaction before the mutation
// runs, runs it, then writes each of what produce returns for it with write
// in the mutation's own transaction.
func txHook[M TxMutation[T], T Tx, V any](produce func(context.Context, M, entgo.Value) ([]V, error), write func(context.Context, T, entgo.Mutation, V) error) entgo.Hook {
	return func(next entgo.Mutator) entgo.Mutator {
		return entgo.MutateFunc(func(ctx context.Context, m entgo.Mutation) (entgo.Value, error) {
			mm, ok := m.(M)
			if !ok {
				var want M
				return nil, fmt.Errorf("docket: hook for %T attached to a %T mutation", want, m)
			}
			tx, err := mm.Tx()
			if err != nil {
				return nil, fmt.Errorf("%w (%s %s: %v)", ErrNoTx, m.Op(), m.Type(), err)
			}
			v, err := next.Mutate(ctx, m)
			if err != nil {
				return v, err
			}
			items, err := produce(ctx, mm, v)
			if err != nil {
				return nil, err
			}
			for _, it := range items {
				if err := write(ctx, tx, m, it); err != nil {
					return nil, err
				}
			}
			return v, nil
		})
	}
}

func kindOf(it docket.Item) string {
	if it.Args == nil {
		return "<nil args>"
	}
	return it.Args.Kind()
}
