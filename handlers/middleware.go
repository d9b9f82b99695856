package handlers

import (
	"context"
	"log/slog"
	"time"

	"github.com/docketq/docket/internal/engine/core"
)

// Work is one run of a job as middleware sees it, a
// func(ctx context.Context, job *docket.Job) error: the job (with its raw
// payload, which middleware must not log) and the error that decides the
// outcome. The innermost Work decodes the payload and calls the handler.
type Work = core.Work

// Middleware wraps every handler run, a func(next Work) Work: logging,
// metrics, tracing, panics turned into errors. It may change ctx (add
// values, a span) and the error it returns, which then decides the job's
// outcome. The first of docket.WorkerConfig.Middleware is the outermost.
// Middleware runs inside a transactional handler's transaction and inside a
// serial key's lock.
type Middleware = core.Middleware

// JobAttrs returns the attributes Docket logs for a job, for slog calls in
// middleware and handlers: job_id, kind, attempt and queue. Never the payload.
func JobAttrs(job *core.Job) []any { return core.JobAttrs(job) }

// Logging returns middleware that logs every run: at Debug when it
// succeeds, at Warn when it returns an error, with the job's attributes
// ([JobAttrs]) and the run's duration. A nil logger means slog.Default().
// The worker itself already logs failures; use Logging for a record of
// every run.
func Logging(logger *slog.Logger) Middleware {
	if logger == nil {
		logger = slog.Default()
	}
	return func(next Work) Work {
		return func(ctx context.Context, job *core.Job) error {
			start := time.Now()
			err := next(ctx, job)
			if err == nil {
				if logger.Enabled(ctx, slog.LevelDebug) {
					logger.DebugContext(ctx, "job ran", append(JobAttrs(job), slog.Duration("took", time.Since(start)))...)
				}
				return nil
			}
			logger.WarnContext(ctx, "job returned an error",
				append(JobAttrs(job), slog.Duration("took", time.Since(start)), slog.String("error", err.Error()))...)
			return err
		}
	}
}
