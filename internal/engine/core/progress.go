package core

import (
	"context"
	"encoding/json"
)

// MaxProgressBytes bounds a job's progress: its value as JSON text (and as
// PostgreSQL writes it back) and its message together.
const MaxProgressBytes = 8 << 10

// ProgressReporter keeps the progress a running job's handler reports
// until the worker writes it with its next heartbeat. value is valid JSON
// (nil: none) and message valid text, both checked by the caller.
type ProgressReporter interface {
	ReportProgress(value json.RawMessage, message string)
}

// ProgressKey is the context key under which a run's context answers its
// ProgressReporter. The worker's run contexts answer it themselves, so that
// it costs a run no allocation.
type ProgressKey struct{}

// ProgressOf returns the progress reporter of the run ctx belongs to, or
// nil outside a handler.
func ProgressOf(ctx context.Context) ProgressReporter {
	r, _ := ctx.Value(ProgressKey{}).(ProgressReporter)
	return r
}
