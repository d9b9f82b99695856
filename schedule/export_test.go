package schedule

import (
	"context"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/worker"
)

// The wiring that docket.NewClient does, for the tests of this package that
// drive a Service and a Worker directly.

func (s *Service) Attach(reg *handlers.Registry, kinds ...string) error {
	s.attach(reg, kinds)
	return nil
}
func (s *Service) Hook() worker.OutcomeHook        { return s.hook() }
func (s *Service) Middleware() handlers.Middleware { return s.middleware() }
func (s *Service) Start(ctx context.Context) error { return s.startReconciler(ctx) }
func (s *Service) Stop(ctx context.Context) error  { return s.stopReconciler(ctx) }
