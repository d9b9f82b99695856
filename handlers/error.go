package handlers

import (
	"errors"
	"fmt"
	"time"
)

// Handlers steer what happens to their job by the error they return: nil
// completes it, any other error is a failed attempt retried with the kind's
// backoff, and the typed errors below say something more specific. They may
// be wrapped with %w; the runtime finds them with errors.As, checking
// CancelError first, then SnoozeError, then RetryAfterError.

// SnoozeError asks for the job to run again after Delay without spending an
// attempt. Create it with [Snooze].
type SnoozeError struct {
	// Delay is how long to wait before the job is claimable again; zero or
	// negative puts it back at once (behind the jobs already waiting).
	Delay time.Duration
}

// Snooze returns an error that puts the job back to run again after d
// without counting the attempt. Use it for "not yet" (a resource is busy, an
// upstream asked to wait); a job that snoozes forever never dead-letters.
func Snooze(d time.Duration) error { return &SnoozeError{Delay: d} }

// Error describes the snooze.
func (e *SnoozeError) Error() string { return fmt.Sprintf("snoozed for %s", e.Delay) }

// RetryAfterError is a failed attempt to be retried after Delay instead of
// the kind's backoff. When the job has no attempts left it is
// dead-lettered like any failure. Create it with [RetryAfter].
type RetryAfterError struct {
	Delay time.Duration
	Err   error // the failure; recorded as the job's last error
}

// RetryAfter returns an error recording err as a failed attempt and asking
// for the next attempt after d (an upstream's Retry-After, say). A nil err
// is recorded as "retry requested".
func RetryAfter(d time.Duration, err error) error {
	if err == nil {
		err = errors.New("retry requested")
	}
	return &RetryAfterError{Delay: d, Err: err}
}

// Error describes the failure and the requested delay.
func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("retry after %s: %v", e.Delay, e.Err)
}

// Unwrap returns the failure.
func (e *RetryAfterError) Unwrap() error { return e.Err }

// CancelError moves the job to the dead-letter table at once, whatever
// attempts it has left (reason "cancelled"). Create it with [Cancel].
type CancelError struct {
	Err error // why; recorded as the job's last error
}

// Cancel returns an error that dead-letters the job now: retrying cannot
// help (the entity is gone, the request is invalid). A nil err is recorded
// as "cancelled by handler".
func Cancel(err error) error {
	if err == nil {
		err = errors.New("cancelled by handler")
	}
	return &CancelError{Err: err}
}

// Error describes the cancellation.
func (e *CancelError) Error() string { return fmt.Sprintf("cancelled: %v", e.Err) }

// Unwrap returns why the job was cancelled.
func (e *CancelError) Unwrap() error { return e.Err }

// PanicError is what a handler's panic becomes: a failed attempt, retried
// like any other failure. Middleware sees it as the handler's error.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the panicking goroutine's stack
}

// Error gives the panic value and the stack; it is what is recorded as the
// job's last error.
func (e *PanicError) Error() string {
	return fmt.Sprintf("panic: %v\n\n%s", e.Value, e.Stack)
}

// DecodeError is returned (to middleware) when a job's payload does not
// decode into its kind's args type. The job is dead-lettered at once with
// reason "undecodable": retrying cannot fix it. The message names the kind,
// the Go type and the offending field or offset, never payload contents.
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
	// ErrTimeout: the kind's Timeout elapsed. The attempt counts as failed
	// unless the handler still returns nil or one of the typed errors.
	ErrTimeout = errors.New("docket: job timed out")
	// ErrLeaseLost: the worker lost the job's lease (it was reaped and may
	// run elsewhere). The handler's outcome is dropped.
	ErrLeaseLost = errors.New("docket: job lease lost")
	// ErrShutdown: the worker is stopping and the shutdown deadline passed.
	// A handler that returns an error after it is released to ready,
	// without counting the attempt; one that returns nil completes.
	ErrShutdown = errors.New("docket: worker shutting down")
)
