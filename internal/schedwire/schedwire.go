// Package schedwire hands the root package docket the steps that wire a
// schedule service into a worker process: attaching its outcome hook,
// adding its middleware, running its reconciler. Users never take these
// steps themselves (docket.NewClient takes them from its configuration), so
// they are not part of package schedule's API; package schedule fills Of
// in when it is initialised.
package schedwire

import (
	"context"

	"github.com/docketq/docket/handlers"
)

// Engine is the wiring of one *schedule.Service.
type Engine struct {
	// Attach sets the service's outcome hook (the next run, written with
	// each run's outcome) for kinds in reg, and from then on makes the
	// service's Register reject schedules of any other kind.
	Attach func(reg *handlers.Registry, kinds []string) error
	// Hook is the outcome hook Attach sets: it writes a run's successor in
	// the transaction of the run's outcome. dockettest.CompleteRun calls it
	// to stand in for a worker.
	Hook handlers.OutcomeHook
	// Middleware skips runs that are paused, removed or late under the
	// Skip misfire policy.
	Middleware handlers.Middleware
	// Start and Stop run the periodic reconciler that restores lost runs.
	Start, Stop func(ctx context.Context) error
}

// Of returns the Engine of svc, a *schedule.Service; it panics for any
// other value. Package schedule sets it.
var Of func(svc any) Engine
