package core

import "context"

// Work is one run of a job as middleware sees it: the job (with its raw
// payload, which middleware must not log) and the error that decides the
// outcome.
type Work func(ctx context.Context, job *Job) error

// Middleware wraps every handler run; the first of a list is the outermost.
type Middleware func(next Work) Work

// Chain wraps w in mws, the first outermost.
func Chain(mws []Middleware, w Work) Work {
	for i := len(mws) - 1; i >= 0; i-- {
		w = mws[i](w)
	}
	return w
}
