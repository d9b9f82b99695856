// Package schedwire hands the root package docket the steps that wire a
// schedule service into a worker process: attaching its kinds, its outcome
// hook and middleware, running its reconciler. Users never take these
// steps themselves (docket.NewClient takes them from its configuration), so
// they are not part of package schedule's API; package schedule fills Of
// in when it is initialised.
package schedwire

import (
	"context"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/worker"
	"github.com/docketq/docket/outbox"
)

// Engine is the wiring of one *schedule.Service.
type Engine struct {
	// Attach records the kinds the worker runs the hook for, and the
	// registry that resolves their runs' options; from then on the
	// service's Register rejects schedules of any other kind.
	Attach func(reg outbox.Kinds, kinds []string)
	// Hook is the outcome hook: it writes a run's successor in the
	// transaction of the run's outcome. dockettest.CompleteRun calls it to
	// stand in for a worker.
	Hook worker.OutcomeHook
	// Middleware skips runs that are paused, removed or late under the
	// Skip misfire policy.
	Middleware core.Middleware
	// Start and Stop run the periodic reconciler that restores lost runs.
	Start, Stop func(ctx context.Context) error
}

// Of returns the Engine of svc, a *schedule.Service; it panics for any
// other value. Package schedule sets it.
var Of func(svc any) Engine
