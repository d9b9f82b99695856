package core

import (
	"errors"
	"fmt"
	"time"
)

// The typed errors a handler returns to steer its job (package handlers
// makes them with Snooze, RetryAfter and Cancel and names them), and the
// errors the runtime makes of a run. The worker finds them with errors.As.

// SnoozeError asks for the job to run again after Delay without spending an
// attempt.
type SnoozeError struct {
	// Delay is how long to wait before the job is claimable again; zero or
	// negative puts it back at once (behind the jobs already waiting).
	Delay time.Duration
}

// Error describes the snooze.
func (e *SnoozeError) Error() string { return fmt.Sprintf("snoozed for %s", e.Delay) }

// RetryAfterError is a failed attempt to be retried after Delay instead of
// the kind's backoff.
type RetryAfterError struct {
	Delay time.Duration
	Err   error // the failure; recorded as the job's last error
}

// Error describes the failure and the requested delay.
func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("retry after %s: %v", e.Delay, e.Err)
}

// Unwrap returns the failure.
func (e *RetryAfterError) Unwrap() error { return e.Err }

// CancelError moves the job to the dead-letter table at once, whatever
// attempts it has left (reason "cancelled").
type CancelError struct {
	Err error // why; recorded as the job's last error
}

// Error describes the cancellation.
func (e *CancelError) Error() string { return fmt.Sprintf("cancelled: %v", e.Err) }

// Unwrap returns why the job was cancelled.
func (e *CancelError) Unwrap() error { return e.Err }

// PanicError is what a handler's panic becomes: a failed attempt.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the panicking goroutine's stack
}

// Error gives the panic value and the stack.
func (e *PanicError) Error() string {
	return fmt.Sprintf("panic: %v\n\n%s", e.Value, e.Stack)
}

// DecodeError is a payload that does not decode into its kind's args type:
// the job is dead-lettered at once (reason "undecodable").
type DecodeError struct {
	Kind   string // the job's kind
	Type   string // the args type the payload should decode into
	Detail string // what is wrong, without payload data
}

// Error names the kind, the type and what did not decode.
func (e *DecodeError) Error() string {
	return fmt.Sprintf("payload of kind %s does not decode into %s: %s", e.Kind, e.Type, e.Detail)
}

// Causes of a handler's context being cancelled, found with context.Cause.
var (
	ErrTimeout   = errors.New("docket: job timed out")
	ErrLeaseLost = errors.New("docket: job lease lost")
	ErrShutdown  = errors.New("docket: worker shutting down")
	ErrCancelled = errors.New("docket: job cancelled by an operator")
)

// Dead-letter reasons recorded in docket_jobs_dead.reason.
const (
	ReasonExhausted    = "exhausted"     // every attempt failed
	ReasonCancelled    = "cancelled"     // the handler, an operator or a failed workflow parent cancelled the job
	ReasonUndecodable  = "undecodable"   // the payload does not decode into the args type
	ReasonLeaseExpired = "lease_expired" // the last attempt's worker stopped heartbeating
	ReasonTimedOut     = "timed_out"     // a workflow step's signal did not come before its WaitTimeout
	ReasonChildFailed  = "child_failed"  // the child workflow the job waited for failed or was cancelled
)
