package schedule

import (
	"fmt"

	"github.com/docketq/docket/internal/schedwire"
)

// The wiring steps are reached through schedwire so that only
// docket.NewClient takes them: a step a user must remember is a step a user
// forgets, and a schedule whose run completes without its hook fires again.
func init() {
	schedwire.Of = func(svc any) schedwire.Engine {
		s, ok := svc.(*Service)
		if !ok {
			panic(fmt.Sprintf("schedwire.Of: %T is not a *schedule.Service", svc))
		}
		return schedwire.Engine{
			Attach:     s.attach,
			Hook:       s.hook(),
			Middleware: s.middleware(),
			Start:      s.startReconciler,
			Stop:       s.stopReconciler,
		}
	}
}
