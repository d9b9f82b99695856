package core

import (
	"encoding/json"
	"errors"
)

// MaxResultBytes bounds a job's result: the JSON text it encodes to, and
// the text PostgreSQL writes back for it (numbers spelt out in full).
const MaxResultBytes = 64 << 10

// Errors of job results (package handlers exports them).
var (
	// ErrInvalidResult: a value given to SetResult cannot be a job's
	// result (it does not encode, is over MaxResultBytes, or is JSON that
	// PostgreSQL's jsonb cannot store).
	ErrInvalidResult = errors.New("docket: invalid job result")
	// ErrNotParent: a ref asked of ParentResult does not name a parent of
	// the job.
	ErrNotParent = errors.New("docket: not a parent of this job")
	// ErrNoResult: the parent completed without recording a result, or did
	// not complete (a run-anyway dependency on a failed parent).
	ErrNoResult = errors.New("docket: parent recorded no result")
)

// SetResult records raw, valid and storable JSON, as j's result, replacing
// any recorded before. Package handlers checks the value.
func SetResult(j *Job, raw json.RawMessage) { j.result = raw }

// Result returns the result recorded on j, nil when none.
func Result(j *Job) json.RawMessage { return j.result }

// SetInputs gives j what its claim read of its workflow: nil for a job
// outside workflows or without parents, else a JSON object of this shape:
//
//	{"parents": {"<ref>": {"result": <json>}, "<ref>": {}}}
//
// one member per parent, by the ref the workflow gave it, with "result"
// when the parent completed with one. Further members (a workflow's
// signals, say) may be added next to "parents".
func SetInputs(j *Job, raw json.RawMessage) { j.inputs = raw }

// Inputs returns what SetInputs gave j.
func Inputs(j *Job) json.RawMessage { return j.inputs }
