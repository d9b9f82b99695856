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

type progressKey struct{}

// WithProgress returns ctx carrying the run's progress reporter.
func WithProgress(ctx context.Context, r ProgressReporter) context.Context {
	return context.WithValue(ctx, progressKey{}, r)
}

// ProgressOf returns the progress reporter of the run ctx belongs to, or
// nil outside a handler.
func ProgressOf(ctx context.Context) ProgressReporter {
	r, _ := ctx.Value(progressKey{}).(ProgressReporter)
	return r
}
