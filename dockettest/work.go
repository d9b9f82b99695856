package dockettest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/docketq/docket/internal/engine/worker"
)

// Outcome is what a worker does with a job after one run.
type Outcome string

// The outcomes of [Work].
const (
	// Completed: the handler succeeded; the job is done.
	Completed Outcome = "completed"
	// Retried: the attempt failed and the job runs again after
	// Result.Delay (the kind's backoff, or the handler's RetryAfter).
	Retried Outcome = "retried"
	// Snoozed: the handler returned handlers.Snooze; the job runs again
	// after Result.Delay without spending an attempt.
	Snoozed Outcome = "snoozed"
	// Cancelled: the handler returned handlers.Cancel; the job is
	// dead-lettered with reason admin.ReasonCancelled.
	Cancelled Outcome = "cancelled"
	// Dead: the job is dead-lettered because its payload does not decode
	// (Result.Reason admin.ReasonUndecodable) or it failed on its last
	// attempt (admin.ReasonExhausted).
	Dead Outcome = "dead"
)

// Result is what one run of a job came to.
type Result struct {
	// Outcome is what the worker would do with the job.
	Outcome Outcome
	// Delay is how long until the next run, for Retried and Snoozed.
	Delay time.Duration
	// Reason is the dead-letter reason (admin.Reason...) for Cancelled
	// and Dead; empty otherwise.
	Reason string
	// Error is the error text the worker would record on the job; empty
	// when Completed or Snoozed.
	Error string
	// Err is the error the handler and middleware returned; nil when
	// Completed. A panic is a *handlers.PanicError, undecodable args a
	// *handlers.DecodeError (use errors.As).
	Err error
	// TimedOut reports that KindOpts.Timeout cut the run short.
	TimedOut bool
	// Recorded is the result the handler recorded with Job.SetResult (the
	// last call's JSON), nil when none. A worker stores it when the job
	// completes or dead-letters.
	Recorded json.RawMessage
}

// WorkOpts describe the run. The zero value (or nil) runs a first attempt
// of a job as a client with the registry would have enqueued it (the
// kind's queue, priority and max attempts), without middleware or database.
type WorkOpts struct {
	// Attempt is the run's attempt number, from 1. Zero means 1. Set it to
	// the last attempt to see a failure dead-lettered.
	Attempt int
	// MaxAttempts is the job's stored attempt limit, which alone decides
	// whether a failure on Attempt is the last, as in a worker. Zero means
	// Job's, else the kind's KindOpts.MaxAttempts, else
	// docket.DefaultMaxAttempts.
	MaxAttempts int
	// Job, when set, supplies the rest of the job the handler sees (id,
	// queue, tenant, meta...); its Kind and Payload are replaced by the
	// args'. Attempt and MaxAttempts above win when non-zero; an empty
	// Queue, a zero Priority or MaxAttempts get the kind's registered
	// ones, as on enqueue.
	Job *docket.Job
	// Middleware wraps the run as docket.WorkerConfig.Middleware does.
	Middleware []handlers.Middleware
	// ParentResults, for a workflow step, are its parents' results as
	// Job.ParentResult reads them, by ref: each value is encoded to JSON;
	// a nil value is a parent that recorded no result. Nil means the job
	// has no parents.
	ParentResults map[string]any
	// DB gives a transactional handler (handlers.RegisterTx) its
	// transaction, committed when the run completes and rolled back
	// otherwise, as a worker does. [DB.Pool] will do. Nil is enough for
	// plain handlers.
	DB Beginner
}

// Beginner starts a transaction: *pgxpool.Pool, *pgx.Conn and pgx.Tx
// (a savepoint) satisfy it.
type Beginner = pgsql.Beginner

// Work runs one job of args' kind through reg's handler, inline: the same
// middleware, timeout, panic recovery, decoding and outcome classification
// (Snooze, Cancel, RetryAfter, the kind's Backoff, the job's max attempts)
// as a worker, but with no worker, no polling and no jobs table; nothing about
// the job is written. It fails the test if the kind is not registered, args
// do not marshal, or a transactional handler has no opts.DB.
func Work[A docket.Args](t T, reg *handlers.Registry, args A, opts *WorkOpts) Result {
	t.Helper()
	payload, err := json.Marshal(args)
	if err != nil {
		t.Fatalf("dockettest: args of kind %s do not marshal: %v", args.Kind(), err)
	}
	return WorkJSON(t, reg, args.Kind(), payload, opts)
}

// WorkJSON is [Work] for a kind given by name and its raw payload, e.g. to
// see what a payload that does not decode comes to.
func WorkJSON(t T, reg *handlers.Registry, kind string, payload json.RawMessage, opts *WorkOpts) Result {
	t.Helper()
	var o WorkOpts
	if opts != nil {
		o = *opts
	}
	job := &docket.Job{}
	if o.Job != nil {
		c := *o.Job
		job = &c
	}
	job.Kind, job.Payload = kind, payload
	if o.Attempt > 0 {
		job.Attempt = o.Attempt
	}
	if o.MaxAttempts > 0 {
		job.MaxAttempts = o.MaxAttempts
	}
	if job.Attempt < 1 {
		job.Attempt = 1
	}
	// What the enqueue would have stored: the kind's defaults, then the
	// built-in ones. A missing registry or kind is reported by the run below.
	if def, ok := kindDefaults(reg, kind); ok {
		if job.Queue == "" {
			job.Queue = def.Queue
		}
		if job.Priority == 0 {
			job.Priority = def.Priority
		}
		if job.MaxAttempts < 1 {
			job.MaxAttempts = def.MaxAttempts
		}
	}
	if job.Queue == "" {
		job.Queue = docket.DefaultQueue
	}
	if job.MaxAttempts < 1 {
		job.MaxAttempts = docket.DefaultMaxAttempts
	}
	if reg == nil {
		t.Fatalf("dockettest: no registry")
	}
	if o.ParentResults != nil {
		core.SetInputs(job, parentInputs(t, o.ParentResults))
	}
	res, err := worker.RunOne(context.Background(), worker.OneRun{Handlers: reg, Middleware: o.Middleware, DB: o.DB, Job: job})
	if err != nil {
		t.Fatalf("dockettest: %v", err)
	}
	r := Result{Outcome: Outcome(res.Outcome), Delay: res.Delay, Reason: res.Reason,
		Error: res.Error, Err: res.Err, TimedOut: res.TimedOut, Recorded: core.Result(job)}
	if r.Outcome == Dead && r.Reason == admin.ReasonCancelled {
		r.Outcome = Cancelled
	}
	return r
}

// parentInputs encodes parents' results as a worker's claim gives them to
// a workflow step (see core.SetInputs).
func parentInputs(t T, parents map[string]any) json.RawMessage {
	t.Helper()
	type parent struct {
		Result json.RawMessage `json:"result,omitempty"`
	}
	in := struct {
		Parents map[string]parent `json:"parents"`
	}{Parents: map[string]parent{}}
	for ref, v := range parents {
		var p parent
		if v != nil {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("dockettest: result of parent %q does not marshal: %v", ref, err)
			}
			p.Result = b
		}
		in.Parents[ref] = p
	}
	b, _ := json.Marshal(in) // encoded results and strings always marshal
	return b
}

func kindDefaults(reg *handlers.Registry, kind string) (handlers.KindOpts, bool) {
	if reg == nil {
		return handlers.KindOpts{}, false
	}
	return reg.KindOpts(kind)
}

// String summarises the result: "retried in 5s: boom".
func (r Result) String() string {
	s := string(r.Outcome)
	if r.Outcome == Retried || r.Outcome == Snoozed {
		s += fmt.Sprintf(" in %s", r.Delay)
	}
	if r.Reason != "" && r.Outcome != Cancelled {
		s += " (" + r.Reason + ")"
	}
	if r.Error != "" {
		s += ": " + r.Error
	}
	return s
}
