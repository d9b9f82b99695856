package handlers_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/core"
)

type resArgs struct{}

func (resArgs) Kind() string { return "res" }

func newJob() *handlers.Job[resArgs] {
	return &handlers.Job[resArgs]{Job: &core.Job{ID: 7, Kind: "res"}}
}

func TestSetResultRefusesWhatCannotBeStored(t *testing.T) {
	for _, c := range []struct {
		name string
		v    any
		want string
	}{
		{"over the cap", strings.Repeat("x", handlers.MaxResultBytes), "over the cap of 65536 bytes (handlers.MaxResultBytes)"},
		{"written back over the cap", json.RawMessage(`[` + strings.Repeat(`1e9000,`, 10) + `1]`), "PostgreSQL would write it back as"},
		{"does not encode", math.Inf(1), "does not encode to JSON"},
		{"does not encode", make(chan int), "does not encode to JSON"},
		{"NUL", "a\x00b", "PostgreSQL cannot store it"},
		{"out of numeric's range", json.RawMessage(`1e200000`), "PostgreSQL cannot store it"},
		{"lone surrogate", json.RawMessage(`"\ud800"`), "PostgreSQL cannot store it"},
		{"invalid UTF-8", json.RawMessage("\"\xff\""), "not valid UTF-8"},
	} {
		j := newJob()
		if err := j.SetResult("kept"); err != nil {
			t.Fatal(err)
		}
		err := j.SetResult(c.v)
		if !errors.Is(err, handlers.ErrInvalidResult) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "job 7 kind res") {
			t.Errorf("%s: %v, want ErrInvalidResult naming the job and %q", c.name, err, c.want)
		}
		if got := string(core.Result(j.Job)); got != `"kept"` {
			t.Errorf("%s: a refused result replaced the earlier one: %s", c.name, got)
		}
	}
	j := newJob()
	if err := j.SetResult(strings.Repeat("x", handlers.MaxResultBytes-2)); err != nil {
		t.Errorf("a result of exactly MaxResultBytes: %v", err)
	}
}

func TestParentResult(t *testing.T) {
	j := newJob()
	core.SetInputs(j.Job, json.RawMessage(`{"parents": {"a": {"result": {"n": 1}}, "b": {}, "c": {"result": null}, "d": {"omitted": true}}}`))
	var v struct{ N int }
	if err := j.ParentResult("a", &v); err != nil || v.N != 1 {
		t.Errorf("a: %+v, %v", v, err)
	}
	for ref, want := range map[string]error{"b": handlers.ErrNoResult, "d": handlers.ErrNoResult, "zz": handlers.ErrNotParent} {
		if err := j.ParentResult(ref, &v); !errors.Is(err, want) || !strings.Contains(err.Error(), ref) {
			t.Errorf("%s: %v, want %v", ref, err, want)
		}
	}
	// A parent that recorded JSON null did record a result.
	p := &struct{}{}
	if err := j.ParentResult("c", &p); err != nil || p != nil {
		t.Errorf("c: %v, %v", p, err)
	}
	var n int
	if err := j.ParentResult("a", &n); err == nil || strings.Contains(err.Error(), `"n"`) {
		t.Errorf("a result that does not decode: %v (must not quote the result)", err)
	}
	if err := newJob().ParentResult("a", &v); !errors.Is(err, handlers.ErrNotParent) {
		t.Errorf("a job outside workflows: %v", err)
	}
}
