package handlers

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
)

// MaxResultBytes bounds a job's result: the JSON text it encodes to, and
// the text PostgreSQL writes back for it (numbers spelt out in full), 64
// KiB. A result is a summary for the job's record and its dependents
// (counts, ids, a URL), not a place for bulk data: keep that in your own
// tables and record where it is.
const MaxResultBytes = core.MaxResultBytes

// Errors of job results.
var (
	// ErrInvalidResult is what [Job.SetResult] returns, wrapped with the
	// reason, for a value that does not encode to JSON, whose JSON is over
	// [MaxResultBytes], or that PostgreSQL's jsonb cannot store (a NUL
	// character, a lone UTF-16 surrogate, a number out of numeric's
	// range).
	ErrInvalidResult = core.ErrInvalidResult
	// ErrNotParent is what [Job.ParentResult] returns, wrapped with the
	// ref, for a ref that does not name a parent of the job (or a job
	// outside a workflow).
	ErrNotParent = core.ErrNotParent
	// ErrNoResult is what [Job.ParentResult] returns, wrapped with the ref,
	// for a parent that completed without recording a result, or did not
	// complete at all (a run-anyway dependency on a parent that failed).
	ErrNoResult = core.ErrNoResult
)

// SetResult records v, encoded as JSON, as the result of this run of the
// job, replacing what an earlier call recorded: the last call before the
// handler returns wins. What happens to it depends on the run's outcome:
//
//   - completed: the result is stored with the job's history row (read it
//     with admin's Jobs().Get, admin.JobResult, `docket jobs show`, the
//     dashboard), and, for a workflow job with dependents, kept for them
//     to read with [Job.ParentResult] until the workflow finishes (also
//     when history is off);
//   - dead-lettered (its last attempt failed, or [Cancel]): the result is
//     stored with the dead letter;
//   - retried, snoozed, lost or released: the result is dropped; the next
//     run records its own.
//
// A value that cannot be stored returns an error wrapping
// [ErrInvalidResult] that says why (naming the cap for one too large) and
// records nothing: an earlier result stays. Return the error to fail the
// attempt, or handle it. The error names the job's id and kind, never the
// value. SetResult works in handlers of [Register] and [RegisterTx] alike
// (a transactional handler's result is written in its transaction). It is
// not safe for concurrent use: call it from the handler's goroutine.
func (j *Job[T]) SetResult(v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: job %d kind %s: does not encode to JSON: %w", ErrInvalidResult, j.ID, j.Kind, err)
	}
	if len(raw) > MaxResultBytes {
		return fmt.Errorf("%w: job %d kind %s: %d bytes of JSON, over the cap of %d bytes (handlers.MaxResultBytes)",
			ErrInvalidResult, j.ID, j.Kind, len(raw), MaxResultBytes)
	}
	// json.Marshal checks neither the UTF-8 nor the escapes of what a
	// json.RawMessage or a MarshalJSON method returns.
	if !utf8.Valid(raw) {
		return fmt.Errorf("%w: job %d kind %s: not valid UTF-8", ErrInvalidResult, j.ID, j.Kind)
	}
	rendered, problem := enqueue.CheckJSONB(raw)
	if problem != "" {
		return fmt.Errorf("%w: job %d kind %s: PostgreSQL cannot store it: it %s", ErrInvalidResult, j.ID, j.Kind, problem)
	}
	if rendered > MaxResultBytes {
		return fmt.Errorf("%w: job %d kind %s: PostgreSQL would write it back as %d bytes of JSON (numbers in full), over the cap of %d bytes (handlers.MaxResultBytes)",
			ErrInvalidResult, j.ID, j.Kind, rendered, MaxResultBytes)
	}
	core.SetResult(j.Job, raw)
	return nil
}

// inputs is what a workflow job's claim reads of its workflow; see
// core.SetInputs.
type inputs struct {
	Parents map[string]struct {
		Result  json.RawMessage `json:"result"`
		Omitted bool            `json:"omitted"`
	} `json:"parents"`
}

// ParentResult decodes into out (as json.Unmarshal does) the result that
// the parent of this workflow job named ref recorded with SetResult. The
// results of all its parents come with the job's claim, in the same
// statement, so reading them costs no round trip. It returns an error
// wrapping [ErrNotParent] when ref names no parent of the job, and one
// wrapping [ErrNoResult] when the parent recorded none (or is past the
// first 1,000 parents with results, by id: a claim reads no more), and an error
// saying what did not decode (without quoting the result) when it does not
// decode into out.
func (j *Job[T]) ParentResult(ref string, out any) error {
	var in inputs
	if raw := core.Inputs(j.Job); raw != nil {
		if err := json.Unmarshal(raw, &in); err != nil {
			return fmt.Errorf("docket: job %d kind %s: decode inputs: %w", j.ID, j.Kind, err)
		}
	}
	p, ok := in.Parents[ref]
	switch {
	case !ok:
		return fmt.Errorf("%w: job %d kind %s: %q", ErrNotParent, j.ID, j.Kind, ref)
	case p.Omitted:
		return fmt.Errorf("%w: job %d kind %s: parent %q: a claim reads the results of the first 1000 parents (by id) only",
			ErrNoResult, j.ID, j.Kind, ref)
	case p.Result == nil:
		return fmt.Errorf("%w: job %d kind %s: parent %q", ErrNoResult, j.ID, j.Kind, ref)
	}
	if err := json.Unmarshal(p.Result, out); err != nil {
		return fmt.Errorf("docket: job %d kind %s: result of parent %q: %s", j.ID, j.Kind, ref, decodeDetail(err))
	}
	return nil
}
