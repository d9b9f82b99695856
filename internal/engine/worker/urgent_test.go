package worker

import (
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/core"
)

// A serial job's outcome is flushed at once while its pool has no
// backlog (the completion hands the key on into the pool), and waits out
// the flush interval, to share a batch, while the pool has one: the next
// job of its key then waits behind other ready jobs anyway. A limited
// job's outcome is flushed at once either way.
func TestSerialOutcomeUrgentOnlyWithoutBacklog(t *testing.T) {
	for _, c := range []struct {
		name            string
		serial, limited bool
		backlogged      bool
		urgent          bool
	}{
		{"serial", true, false, false, true},
		{"serial with a backlog", true, false, true, false},
		{"limited with a backlog", false, true, true, true},
		{"plain", false, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &pool{}
			p.backlogged.Store(c.backlogged)
			job := &core.Job{ID: 1}
			if c.serial {
				job.SerialKey = "k"
			}
			tk := &task{job: job, pool: p}
			if c.limited {
				tk.limit = "l"
			}
			f := newFinisher(nil, time.Millisecond)
			f.add(outcome{task: tk, what: oComplete})
			if got := f.due(); got != c.urgent {
				t.Errorf("due after the outcome: %v, want %v", got, c.urgent)
			}
		})
	}
}
