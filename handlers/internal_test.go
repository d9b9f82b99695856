package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	docket "github.com/docketq/docket/internal/engine/core"
)

func newTask(id int64) *task {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &task{job: &docket.Job{ID: id}, ctx: ctx, cancel: cancel}
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
	if old.state.Load() != stLost || !errors.Is(context.Cause(old.ctx), ErrLeaseLost) {
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

// Decoding errors are described without quoting the payload.
func TestDecodeDetailHidesPayload(t *testing.T) {
	t.Parallel()
	var dst struct {
		N int8   `json:"n"`
		S string `json:"s"`
	}
	for _, payload := range []string{
		`{"n": 123456789}`,       // overflow: encoding/json quotes the number
		`{"s": 12345.678}`,       // wrong type
		`{"n": 1, "s": "ab`,      // truncated
		`{"s": "x" "123456789"}`, // syntax
	} {
		err := json.Unmarshal([]byte(payload), &dst)
		if err == nil {
			t.Fatalf("%s decoded", payload)
		}
		d := decodeDetail(err)
		for _, secret := range []string{"123456789", "12345", "ab"} {
			if strings.Contains(d, secret) {
				t.Errorf("detail %q of %s quotes the payload (raw error: %v)", d, payload, err)
			}
		}
	}
}
