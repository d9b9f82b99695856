package core

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrWorkflowNotFound is returned for a workflow id that does not exist.
var ErrWorkflowNotFound = errors.New("docket: workflow not found")

// ErrWorkflowFinished is returned, wrapped with the workflow's id and state,
// for a workflow that already finished (every job of it left the jobs
// table) or, by Signal, was cancelled.
var ErrWorkflowFinished = errors.New("docket: workflow already finished")

// ErrSignalTimedOut is returned by Job.Signal for a step released by its
// WaitTimeout (policy TimeoutRun) instead of by its signal.
var ErrSignalTimedOut = errors.New("docket: signal did not come before the step's timeout")

// ErrNoSignal is returned by Job.Signal for a job that waited for no
// signal (WorkflowJob.WaitFor empty).
var ErrNoSignal = errors.New("docket: job waited for no signal")

// Signal decodes the payload of the signal this workflow step waited for
// into out (as json.Unmarshal does; a signal sent without payload leaves
// out as it is). It returns an error wrapping ErrSignalTimedOut when the
// step was released by its timeout, and ErrNoSignal for a job that waited
// for no signal. The payload came with the job's claim: Signal reads no
// database.
func (j *Job) Signal(out any) error {
	switch {
	case j.WaitedFor == "":
		return fmt.Errorf("%w: job %d kind %s", ErrNoSignal, j.ID, j.Kind)
	case j.SignalTimedOut:
		return fmt.Errorf("%w: job %d kind %s, signal %q", ErrSignalTimedOut, j.ID, j.Kind, j.WaitedFor)
	case j.SignalPayload == nil:
		return nil
	}
	if err := json.Unmarshal(j.SignalPayload, out); err != nil {
		return fmt.Errorf("docket: job %d kind %s: decode signal %q: %w", j.ID, j.Kind, j.WaitedFor, err)
	}
	return nil
}
