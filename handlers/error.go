package handlers

import (
	"errors"
	"time"

	"github.com/docketq/docket/internal/engine/core"
)

// Handlers steer what happens to their job by the error they return: nil
// completes it, any other error is a failed attempt retried with the kind's
// backoff, and the typed errors below say something more specific. They may
// be wrapped with %w; the worker finds them with errors.As, checking
// CancelError first, then SnoozeError, then RetryAfterError.

// SnoozeError asks for the job to run again after Delay without spending
// an attempt. Create it with [Snooze]. Its field:
//
//   - Delay time.Duration: how long to wait before the job is claimable
//     again; zero or negative puts it back at once (behind the jobs
//     already waiting).
type SnoozeError = core.SnoozeError

// Snooze returns an error that puts the job back to run again after d
// without counting the attempt. Use it for "not yet" (a resource is busy, an
// upstream asked to wait); a job that snoozes forever never dead-letters.
func Snooze(d time.Duration) error { return &SnoozeError{Delay: d} }

// RetryAfterError is a failed attempt to be retried after Delay instead of
// the kind's backoff; when the job has no attempts left it is
// dead-lettered like any failure. Create it with [RetryAfter]. Its fields:
//
//   - Delay time.Duration: the wait before the next attempt.
//   - Err error: the failure, recorded as the job's last error (Unwrap
//     returns it).
type RetryAfterError = core.RetryAfterError

// RetryAfter returns an error recording err as a failed attempt and asking
// for the next attempt after d (an upstream's Retry-After, say). A nil err
// is recorded as "retry requested".
func RetryAfter(d time.Duration, err error) error {
	if err == nil {
		err = errors.New("retry requested")
	}
	return &RetryAfterError{Delay: d, Err: err}
}

// CancelError moves the job to the dead-letter table at once, whatever
// attempts it has left (reason "cancelled"). Create it with [Cancel]. Its
// field:
//
//   - Err error: why, recorded as the job's last error (Unwrap returns it).
type CancelError = core.CancelError

// Cancel returns an error that dead-letters the job now: retrying cannot
// help (the entity is gone, the request is invalid). A nil err is recorded
// as "cancelled by handler".
func Cancel(err error) error {
	if err == nil {
		err = errors.New("cancelled by handler")
	}
	return &CancelError{Err: err}
}

// PanicError is what a handler's panic becomes: a failed attempt, retried
// like any other failure. Middleware sees it as the handler's error; its
// Error gives the value and the stack, which is what is recorded. Its
// fields:
//
//   - Value any: the value passed to panic.
//   - Stack []byte: the panicking goroutine's stack.
type PanicError = core.PanicError

// DecodeError is returned (to middleware) when a job's payload does not
// decode into its kind's args type. The job is dead-lettered at once with
// reason "undecodable": retrying cannot fix it. The message names the kind,
// the Go type and the offending field or offset, never payload contents.
// Its fields:
//
//   - Kind string: the job's kind.
//   - Type string: the args type the payload should decode into.
//   - Detail string: what is wrong, without payload data.
type DecodeError = core.DecodeError

// Causes of a handler's context being cancelled, found with context.Cause.
var (
	// ErrTimeout: the kind's Timeout elapsed. The attempt counts as failed
	// unless the handler still returns nil or one of the typed errors.
	ErrTimeout = core.ErrTimeout
	// ErrLeaseLost: the worker lost the job's lease (it was reaped and may
	// run elsewhere). The handler's outcome is dropped.
	ErrLeaseLost = core.ErrLeaseLost
	// ErrShutdown: the worker is stopping and the shutdown deadline passed.
	// A handler that returns an error after it is released to ready,
	// without counting the attempt; one that returns nil completes.
	ErrShutdown = core.ErrShutdown
	// ErrCancelled: an operator cancelled the running job (admin
	// Jobs.Cancel, docket jobs cancel, the dashboard). The job is
	// dead-lettered with reason "cancelled" whatever the handler returns:
	// after the request its worker can no longer complete, retry or snooze
	// it, and a transactional handler's writes are rolled back.
	ErrCancelled = core.ErrCancelled
)
