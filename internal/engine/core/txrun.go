package core

import (
	"context"
	"sync/atomic"
)

// TxRun is a transactional handler's run as its context carries it: the
// handler's transaction, the job and claim being run, and the child
// workflow the run started, if any. The worker puts it in the context;
// EnqueueChildWorkflow checks its caller against it, so that only the
// running job's own handler, in its own transaction, can make its job wait
// for a child workflow.
type TxRun struct {
	// Tx is the handler's pgx.Tx (any, so that core imports no driver).
	Tx      any
	JobID   int64
	ClaimID int64
	// child is the child workflow's id; -1 while one is being written.
	child atomic.Int64
}

type txRunKey struct{}

// WithTxRun returns ctx carrying r.
func WithTxRun(ctx context.Context, r *TxRun) context.Context {
	return context.WithValue(ctx, txRunKey{}, r)
}

// TxRunFrom returns the run ctx carries, or nil.
func TxRunFrom(ctx context.Context) *TxRun {
	r, _ := ctx.Value(txRunKey{}).(*TxRun)
	return r
}

// ReserveChild claims the run's one child workflow before it is written;
// false when the run has one (or one is being written).
func (r *TxRun) ReserveChild() bool { return r.child.CompareAndSwap(0, -1) }

// SetChild records the child workflow written after ReserveChild; id 0
// gives the reservation back (the write failed).
func (r *TxRun) SetChild(id int64) { r.child.Store(id) }

// Child is the id of the child workflow the run started; 0 when none.
func (r *TxRun) Child() int64 {
	if id := r.child.Load(); id > 0 {
		return id
	}
	return 0
}
