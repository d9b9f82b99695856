package worker

import (
	"context"
	"errors"
	"testing"

	"github.com/docketq/docket/internal/engine/core"
)

func newTask(id int64) *task {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &task{job: &core.Job{ID: id}, ctx: ctx, cancel: cancel}
}

// A job claimed again by the same process (it was frozen past its lease and
// the job was reaped) supersedes the earlier run, whose outcome is dropped.
func TestInflightNewerRunSupersedesLostOne(t *testing.T) {
	t.Parallel()
	s := newInflight()
	old, cur := newTask(1), newTask(1)
	s.add([]*task{old})
	old.state.Store(stFinishing)
	s.add([]*task{cur})
	if old.state.Load() != stLost || !errors.Is(context.Cause(old.ctx), core.ErrLeaseLost) {
		t.Errorf("earlier run not marked lost: state %d cause %v", old.state.Load(), context.Cause(old.ctx))
	}
	s.remove(old) // the earlier run's late bookkeeping must not drop the new one
	if !s.has(cur) || s.len() != 1 {
		t.Error("newer run was forgotten")
	}
	if got := s.snapshot(nil); len(got) != 1 || got[0] != cur {
		t.Errorf("snapshot = %v", got)
	}
}
